// A fit's page: show the delete token the form's redirect put in the fragment, then drop it from
// the address bar; load the fit's note beside the page.
import { wireNote } from "./exports.js";

// The page reloads itself while the fit runs, so the token is kept for this tab (sessionStorage,
// never sent anywhere) and shown on each reload until it is dismissed.
const box = document.getElementById("delete-token");
if (box) {
  const key = `idlelab-fit-token:${box.dataset.fitId}`;
  const match = /(?:^|&)delete-token=([^&]+)/.exec(window.location.hash.slice(1));
  if (match) {
    try {
      sessionStorage.setItem(key, decodeURIComponent(match[1]));
    } catch (_) {
      // storage refused: the token is shown on this load only
    }
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  let token = match ? decodeURIComponent(match[1]) : null;
  try {
    token = sessionStorage.getItem(key) || token;
  } catch (_) {
    // storage refused
  }
  if (token) {
    box.querySelector("code").textContent = token;
    box.hidden = false;
    box.querySelector("button").addEventListener("click", () => {
      try {
        sessionStorage.removeItem(key);
      } catch (_) {
        // storage refused
      }
      box.hidden = true;
    });
  }
}

const note = document.querySelector("section[data-note-url]");
if (note) wireNote(note);
