// Run page (the share link): live progress while the run is queued or running, then a reload
// to show the server-rendered figures and charts; copy buttons for the link and the config.
import { getJSON, wireCopyButtons } from "./common.js";
import { wireExports } from "./exports.js";

const POLL_MS = 500;

function showProgress(section, run) {
  const bar = section.querySelector("progress");
  const text = section.querySelector("[data-progress-text]");
  const pct = Math.round((run.progress || 0) * 100);
  if (bar) bar.value = run.progress || 0;
  const repeats = run.repeat_count > 1 ? ` of ${run.repeat_count} repeats` : "";
  if (text) text.textContent = run.status === "queued" ? "Queued: waiting for a worker" : `Running: ${pct}%${repeats} simulated`;
  section.dataset.status = run.status;
  // The badge under the title says what the body says.
  const badge = document.querySelector("#run-status .status");
  if (badge && badge.textContent !== run.status) {
    badge.textContent = run.status;
    badge.className = `status status-${run.status}`;
  }
}

async function poll(section) {
  const url = section.dataset.statusUrl;
  let failures = 0;
  for (;;) {
    try {
      const run = await getJSON(url);
      failures = 0;
      if (run.status === "done" || run.status === "failed") {
        section.dataset.status = run.status;
        window.location.reload();
        return;
      }
      showProgress(section, run);
    } catch (err) {
      failures += 1;
      const text = section.querySelector("[data-progress-text]");
      if (text) text.textContent = `Lost contact with the server (${err.message}); retrying`;
      if (failures > 60) return;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

// The "compare with" candidates: the newest finished runs, asked for when the page is shown (the
// page itself is stored once, when its run finished).
async function fillCompareCandidates(list) {
  try {
    const { runs } = await getJSON(list.dataset.runsUrl);
    const here = document.querySelector("input[name=ids][type=hidden]")?.value;
    for (const r of runs) {
      if (r.id === here) continue;
      const option = document.createElement("option");
      option.value = r.id;
      option.textContent = `${r.title || r.id} (${r.platform}, ${r.governor}, ${r.mechanism})`;
      list.appendChild(option);
    }
  } catch {
    // Without candidates a run id can still be typed in.
  }
}

wireCopyButtons();
wireExports();
// Asked for when the field is first used, so the page's own drawing goes first.
const candidates = document.getElementById("compare-candidates");
const compareWith = document.getElementById("compare-with");
if (candidates && compareWith) {
  compareWith.addEventListener("focus", () => fillCompareCandidates(candidates), { once: true });
}
const section = document.getElementById("run-progress");
if (section) poll(section);
