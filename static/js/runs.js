// Browse page: changing a filter or the sort submits the form (it also works without JS).
for (const select of document.querySelectorAll("form.filters select")) {
  select.addEventListener("change", () => select.form.requestSubmit());
}
