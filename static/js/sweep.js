// A sweep page: follow progress until every point is finished (then reload for the charts);
// sort the points table by a click on its header.
import { getJSON } from "./common.js";
import { wireNote } from "./exports.js";

const POLL_MS = 1000;

function followProgress() {
  const section = document.getElementById("sweep-progress");
  if (!section || !["queued", "running"].includes(section.dataset.status)) return;
  const bar = section.querySelector("progress");
  const text = section.querySelector("[data-progress-text]");
  const tick = async () => {
    try {
      const sweep = await getJSON(section.dataset.statusUrl);
      const c = sweep.counts;
      bar.value = sweep.progress;
      text.textContent = `${c.done} done, ${c.failed} failed, ${c.running} running, ${c.queued} queued`;
      if (!["queued", "running"].includes(sweep.status)) {
        window.location.reload();
        return;
      }
    } catch (err) {
      text.textContent = "Progress could not be read: " + err.message;
    }
    setTimeout(tick, POLL_MS);
  };
  setTimeout(tick, POLL_MS);
}

function sortable(table) {
  const headers = [...table.tHead.rows[0].cells];
  headers.forEach((th, col) => {
    th.tabIndex = 0;
    th.addEventListener("click", () => {
      const ascending = th.dataset.order !== "asc";
      headers.forEach((h) => delete h.dataset.order);
      th.dataset.order = ascending ? "asc" : "desc";
      const numeric = th.dataset.sort === "num";
      const key = (row) => {
        const cell = row.cells[col];
        const raw = cell.dataset.value ?? cell.textContent.trim();
        if (!numeric) return raw;
        return raw === "" ? Infinity : Number(raw);
      };
      const rows = [...table.tBodies[0].rows];
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        const cmp = numeric ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
        return ascending ? cmp : -cmp;
      });
      table.tBodies[0].append(...rows);
    });
  });
}

followProgress();
for (const table of document.querySelectorAll("table.sortable")) sortable(table);

const note = document.querySelector("section[data-note-url]");
if (note) wireNote(note);
