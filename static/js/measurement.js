// The measurement page: show the delete token the import form's redirect put in the fragment,
// once, then drop it from the address bar; load the measurement's note.
import { wireNote } from "./exports.js";

const match = /(?:^|&)delete-token=([^&]+)/.exec(window.location.hash.slice(1));
if (match) {
  const box = document.getElementById("delete-token");
  box.querySelector("code").textContent = decodeURIComponent(match[1]);
  box.hidden = false;
  history.replaceState(null, "", window.location.pathname + window.location.search);
}

const note = document.querySelector("section[data-note-url]");
if (note) wireNote(note);
