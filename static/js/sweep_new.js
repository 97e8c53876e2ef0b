// The new-sweep form: axes as rows (a path and comma-separated values), the point count as you
// type, and a JSON post to /api/sweeps; errors are shown next to the form, field by field.
const form = document.getElementById("sweep-form");
const axes = document.getElementById("axes");
const template = document.getElementById("axis-template");
const count = document.getElementById("point-count");
const errors = document.getElementById("sweep-errors");
const maxPoints = Number(form.dataset.maxPoints);

function parseValue(text) {
  const t = text.trim();
  if (t === "") return null;
  try { return JSON.parse(t); } catch { return t; }
}

function readAxes() {
  return [...axes.querySelectorAll(".axis")].map((row) => ({
    path: row.querySelector('[name="path"]').value.trim(),
    values: row.querySelector('[name="values"]').value.split(",").map(parseValue).filter((v) => v !== null),
  }));
}

function updateCount() {
  const n = readAxes().reduce((product, axis) => product * axis.values.length, 1);
  count.textContent = String(n);
  count.classList.toggle("error", n > maxPoints);
}

function addAxis(path = "", values = []) {
  const row = template.content.firstElementChild.cloneNode(true);
  row.querySelector('[name="path"]').value = path;
  row.querySelector('[name="values"]').value = values.join(", ");
  row.querySelector("[data-remove-axis]").addEventListener("click", () => { row.remove(); updateCount(); });
  axes.appendChild(row);
  updateCount();
}

document.getElementById("add-axis").addEventListener("click", () => addAxis());
form.addEventListener("input", updateCount);
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  errors.textContent = "";
  let base;
  try {
    base = JSON.parse(form.elements.base.value || "{}");
  } catch (err) {
    errors.textContent = "base: not JSON: " + err.message;
    return;
  }
  const body = { title: form.elements.title.value, base, axes: readAxes(), unlisted: form.elements.unlisted.checked };
  const repeats = Number(form.elements.repeats.value || 1);
  if (repeats !== 1) body.repeats = repeats;
  const response = await fetch("/api/sweeps", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (response.ok) {
    window.location.href = new URL(answer.url).pathname;
    return;
  }
  const detail = Array.isArray(answer.detail) ? answer.detail : [{ loc: [], msg: String(answer.detail) }];
  errors.textContent = detail.map((e) => `${e.loc.filter((p) => p !== "body").join(".")}: ${e.msg}`).join("; ");
});

const example = JSON.parse(document.getElementById("sweep-example").textContent);
for (const axis of example.axes) addAxis(axis.path, axis.values);
