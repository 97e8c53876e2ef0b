// A fit's page: show the delete token the form's redirect put in the fragment, once; load the
// fit's note beside the page.
import { wireNote } from "./exports.js";

// The page reloads itself while the fit runs (a meta refresh, which would only scroll to the
// fragment if the address kept one), so the token is kept for this tab in sessionStorage (never
// sent anywhere), the page is loaded again without the fragment, and the token is shown on each
// load until it is dismissed.
function stored(key, value) {
  try {
    if (value === undefined) return sessionStorage.getItem(key);
    if (value === null) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, value);
    return value;
  } catch (_) {
    return undefined; // storage refused
  }
}

const box = document.getElementById("delete-token");
if (box) {
  const key = `idlelab-fit-token:${box.dataset.fitId}`;
  const match = /(?:^|&)delete-token=([^&]+)/.exec(window.location.hash.slice(1));
  const given = match ? decodeURIComponent(match[1]) : null;
  const here = window.location.pathname + window.location.search;
  if (given && stored(key, given) === given) {
    window.location.replace(here);
  } else {
    if (given) history.replaceState(null, "", here);
    const token = given || stored(key);
    if (token) {
      box.querySelector("code").textContent = token;
      box.hidden = false;
      box.querySelector("button").addEventListener("click", () => {
        stored(key, null);
        box.hidden = true;
      });
    }
  }
}

const note = document.querySelector("section[data-note-url]");
if (note) wireNote(note);
