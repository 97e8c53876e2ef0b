// Run lists (browse page, home page): changing a filter or the sort submits the filter form, and
// "Compare selected" is enabled while 2 to 8 runs are ticked (both forms also work without JS).
const MAX_COMPARE = 8;

for (const select of document.querySelectorAll("form.filters select")) {
  select.addEventListener("change", () => select.form.requestSubmit());
}

for (const form of document.querySelectorAll("form.run-list")) {
  const button = form.querySelector("[data-compare-selected]");
  const hint = form.querySelector("[data-compare-hint]");
  const update = () => {
    const n = form.querySelectorAll("input[name=ids]:checked").length;
    button.disabled = n < 2 || n > MAX_COMPARE;
    hint.textContent = n < 2 ? `Tick 2 to ${MAX_COMPARE} finished runs.` : n > MAX_COMPARE ? `At most ${MAX_COMPARE}: ${n} ticked.` : `${n} runs ticked.`;
  };
  form.addEventListener("change", update);
  update();
}
