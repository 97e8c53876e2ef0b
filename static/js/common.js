// Small helpers shared by page modules: copy buttons and JSON fetches.

export function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(text);
  }
  // Plain-http fallback: a hidden textarea and execCommand.
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "sr-only";
  document.body.appendChild(area);
  area.select();
  try {
    document.execCommand("copy");
  } finally {
    area.remove();
  }
  return Promise.resolve();
}

// <button data-copy-target="ID"> copies the text of element ID;
// <button data-copy-text="..."> copies the given text (absolute URLs are resolved).
export function wireCopyButtons(root = document) {
  for (const button of root.querySelectorAll("[data-copy-target], [data-copy-text]")) {
    button.addEventListener("click", () => {
      let text = button.dataset.copyText;
      if (button.dataset.copyTarget) {
        const el = document.getElementById(button.dataset.copyTarget);
        text = el ? el.textContent : "";
      } else if (button.dataset.copyUrl !== undefined) {
        text = new URL(text, window.location.href).href;
      }
      const label = button.textContent;
      copyText(text).then(
        () => { button.textContent = "Copied"; },
        () => { button.textContent = "Copy failed"; },
      ).finally(() => setTimeout(() => { button.textContent = label; }, 1500));
    });
  }
}

export async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

