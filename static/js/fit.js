// A fit's page: load the fit's note beside the page.
import { wireNote } from "./exports.js";

const note = document.querySelector("section[data-note-url]");
if (note) wireNote(note);
