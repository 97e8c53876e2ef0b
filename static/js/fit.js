// A fit's page: its delete token shown once (token.js); the fit's note loaded beside the page.
import "./token.js";
import { wireNote } from "./exports.js";

const note = document.querySelector("section[data-note-url]");
if (note) wireNote(note);
