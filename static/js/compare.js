// Compare page: charts are drawn by charts.js; this wires the copy buttons, the exports and
// "run again with N repeats" (a POST per config, then the comparison of the new runs).
import { wireCopyButtons } from "./common.js";
import { wireExports } from "./exports.js";

function wireAgain(form) {
  const status = form.querySelector("[data-again-status]");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "Submitting…";
    const response = await fetch("/api/compare/again", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ids: form.dataset.ids.split(","), repeats: Number(form.repeats.value) }),
    });
    const answer = await response.json();
    if (!response.ok) {
      const detail = Array.isArray(answer.detail) ? answer.detail.map((d) => d.msg).join("; ") : answer.detail;
      status.textContent = `Not submitted: ${detail}`;
      return;
    }
    window.location.assign(new URL(answer.url).pathname + new URL(answer.url).search);
  });
}

wireCopyButtons();
wireExports();
const again = document.getElementById("compare-again");
if (again) wireAgain(again);
