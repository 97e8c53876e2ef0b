// A delete token shown once: the form's redirect put it in the address's fragment (which no
// server log sees); `#delete-token[data-token-key]` on the page shows it.
// The page reloads itself while what it shows runs (a meta refresh, which would only scroll to the
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
  const key = `idlelab-token:${box.dataset.tokenKey}`;
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
