// Shared by the run and compare pages: "copy as curl / Python" (the snippet is asked of the
// server, shown, and copied), and a note loaded beside the stored page, with its edit form.
import { copyText } from "./common.js";

// <button data-snippet-url="..." data-snippet-target="ID">: fetch the snippet, show it in ID, copy it.
export function wireSnippetButtons(root = document) {
  for (const button of root.querySelectorAll("[data-snippet-url]")) {
    button.addEventListener("click", async () => {
      const target = document.getElementById(button.dataset.snippetTarget);
      const label = button.textContent;
      try {
        const response = await fetch(button.dataset.snippetUrl);
        const text = await response.text();
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        target.textContent = text;
        target.hidden = false;
        target.dataset.kind = button.dataset.kind || "";
        await copyText(text);
        button.textContent = "Copied";
      } catch (err) {
        button.textContent = `Copy failed (${err.message})`;
      }
      setTimeout(() => { button.textContent = label; }, 1500);
    });
  }
}

function showNote(section, note) {
  const body = section.querySelector("[data-note-body]");
  const text = section.querySelector("textarea");
  if (note) {
    // The server renders the note: everything escaped, only http(s) links added.
    body.innerHTML = note.html;
    body.classList.remove("muted");
    text.value = note.text;
  } else {
    body.textContent = "No note yet.";
    body.classList.add("muted");
    text.value = "";
  }
}

// <section data-note-url="/api/runs/ID/note">: the note, and a form that PUTs it with the token.
export async function wireNote(section) {
  const url = section.dataset.noteUrl;
  const status = section.querySelector("[data-note-status]");
  try {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    showNote(section, response.ok ? await response.json() : null);
  } catch {
    showNote(section, null);
  }
  section.dataset.loaded = "true";
  section.querySelector("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const response = await fetch(url, {
      method: "PUT",
      headers: { "Content-Type": "application/json", "X-Delete-Token": form.token.value },
      body: JSON.stringify({ text: form.text.value }),
    });
    if (response.ok) {
      showNote(section, response.status === 204 ? null : await response.json());
      status.textContent = "Saved.";
    } else {
      let reason = `HTTP ${response.status}`;
      try {
        const { detail } = await response.json();
        reason = Array.isArray(detail) ? detail.map((d) => d.msg).join("; ") : detail;
      } catch {
        // keep the status code
      }
      status.textContent = `Not saved: ${reason}`;
    }
  });
}

export function wireExports() {
  wireSnippetButtons();
  const note = document.querySelector("section[data-note-url]");
  if (note) wireNote(note);
}
