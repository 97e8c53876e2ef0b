// Compare page: charts are drawn by charts.js; this wires the copy-link button.
import { wireCopyButtons } from "./common.js";

wireCopyButtons();
