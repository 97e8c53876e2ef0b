// Draw the charts embedded in the page: <script type="application/json" data-chart="ID"> holds a
// Plotly figure built by app/charts/; it is drawn into the element with id ID.
// plotly.js is loaded (deferred, before this module) from the app's own /vendor URL.
//
// What is on screen is drawn first and the rest only when scrolled near: a run page holds seven
// charts, and drawing them all at once kept the first ones from showing for seconds.
// <body data-charts-drawn="true"> once every chart is drawn.

const PLOT_CONFIG = {
  responsive: true,
  displaylogo: false,
  modeBarButtonsToRemove: ["lasso2d", "select2d"],
  toImageButtonOptions: { format: "svg" },
};
// Start drawing a chart this far before it scrolls into view.
const AHEAD = "300px 0px";

// Plotly draws a title on one line: on a narrow chart a long one runs off both ends. Titles are
// broken between words to fit the chart (a character is taken as ~0.55 em of its font), and the
// margin beside each grows by the lines added; above and below, the chart grows by as much, so
// the plot keeps its height (a legend of many rows on a phone already takes much of it).
const CHAR_EM = 0.55;

function wrapWords(text, width, fontSize) {
  const perLine = Math.max(12, Math.floor(width / (fontSize * CHAR_EM)));
  if (typeof text !== "string" || text.length <= perLine || text.includes("<br>")) return [text, 1];
  const lines = [""];
  for (const word of text.split(" ")) {
    const line = lines[lines.length - 1];
    if (line && (line + " " + word).length > perLine) lines.push(word);
    else lines[lines.length - 1] = line ? line + " " + word : word;
  }
  return [lines.join("<br>"), lines.length];
}

function fitTitles(layout, width) {
  const fontSize = (layout.font && layout.font.size) || 13;
  const margin = Object.assign({ l: 70, r: 20, t: 50, b: 70 }, layout.margin);
  const height = layout.height || 400;
  // [where, the room along the title, its font size (plotly's defaults), the margin that grows]
  const titles = [
    [layout, width, fontSize * 1.4, "t"],
    [layout.xaxis, width - margin.l - margin.r, fontSize * 1.1, "b"],
    [layout.yaxis, height - margin.t - margin.b, fontSize * 1.1, "l"],
  ];
  for (const [owner, room, size, side] of titles) {
    if (!owner || !owner.title || !owner.title.text) continue;
    const [text, lines] = wrapWords(owner.title.text, room, size);
    if (lines === 1) continue;
    owner.title = Object.assign({}, owner.title, { text });
    const added = Math.ceil((lines - 1) * size * 1.3);
    margin[side] += added;
    if (side !== "l") layout.height = (layout.height || height) + added;
  }
  layout.margin = margin;
}

export function drawFigure(target, figure) {
  const layout = Object.assign({ autosize: true }, figure.layout || {});
  for (const axis of ["xaxis", "yaxis"]) if (layout[axis]) layout[axis] = Object.assign({}, layout[axis]);
  fitTitles(layout, target.clientWidth || window.innerWidth);
  return window.Plotly.newPlot(target, figure.data || [], layout, PLOT_CONFIG).then((gd) => {
    target.dataset.drawn = "true";
    target.dispatchEvent(new CustomEvent("chart-drawn", { bubbles: true }));
    return gd;
  });
}

// A picker above a chart of several runs: one checkbox per run (or scenario role: the part of a
// trace's name after " · ") and per source (its legend group); a line shows while both are ticked.
function addPicker(target) {
  const box = document.querySelector(`[data-picker-for="${target.id}"]`);
  if (!box || !target.data) return;
  const runOf = (t) => (t.name || "").split(" · ").slice(1).join(" · ");
  const groups = { run: [], source: [] };
  for (const t of target.data) {
    if (runOf(t) && !groups.run.includes(runOf(t))) groups.run.push(runOf(t));
    if (t.legendgroup && !groups.source.includes(t.legendgroup)) groups.source.push(t.legendgroup);
  }
  const names = {};
  for (const t of target.data) names[t.legendgroup] = names[t.legendgroup] || (t.name || "").split(" · ")[0];
  const update = () => {
    const on = (kind, value) => box.querySelector(`input[data-kind="${kind}"][value="${CSS.escape(value)}"]`)?.checked ?? true;
    const visible = target.data.map((t) => on("run", runOf(t)) && on("source", t.legendgroup || ""));
    window.Plotly.restyle(target, { visible });
  };
  for (const [kind, values] of Object.entries(groups)) {
    if (values.length < 2) continue;
    const set = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.textContent = kind === "run" ? "Show runs:" : "Sources:";
    set.append(legend);
    for (const value of values) {
      const label = document.createElement("label");
      const input = document.createElement("input");
      Object.assign(input, { type: "checkbox", checked: true, value });
      input.dataset.kind = kind;
      input.addEventListener("change", update);
      label.append(input, " ", kind === "run" ? value : names[value]);
      set.append(label);
    }
    box.append(set);
  }
}

function drawBlock(block) {
  const target = document.getElementById(block.dataset.chart);
  if (!target || target.dataset.drawn || target.dataset.drawing) return Promise.resolve();
  target.dataset.drawing = "true";
  let figure;
  try {
    figure = JSON.parse(block.textContent);
  } catch (err) {
    target.textContent = "Chart data could not be read: " + err;
    return Promise.resolve();
  }
  return drawFigure(target, figure).then(() => addPicker(target));
}

export function drawEmbeddedCharts(root = document) {
  const blocks = [...root.querySelectorAll('script[type="application/json"][data-chart]')];
  const pending = new Set(blocks);
  const finished = () => {
    if (pending.size === 0) document.body.dataset.chartsDrawn = "true";
  };
  const draw = (block) => drawBlock(block).then(() => { pending.delete(block); finished(); });
  if (!("IntersectionObserver" in window)) {
    return Promise.all(blocks.map(draw));
  }
  const byTarget = new Map(blocks.map((b) => [document.getElementById(b.dataset.chart), b]));
  // What is on the first screen now is drawn at once (not a frame later, from the observer).
  for (const [target, block] of byTarget) {
    if (!target) continue;
    const r = target.getBoundingClientRect();
    if (r.top < window.innerHeight && r.bottom > 0) {
      draw(block);
      byTarget.delete(target);
    }
  }
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      draw(byTarget.get(entry.target));
    }
  }, { rootMargin: AHEAD });
  for (const [target, block] of byTarget) {
    if (target) observer.observe(target);
    else pending.delete(block);
  }
  finished();
  return Promise.resolve();
}

if (window.Plotly) {
  drawEmbeddedCharts();
} else {
  for (const el of document.querySelectorAll(".chart")) {
    el.textContent = "plotly.js did not load; the chart data is available from the API.";
  }
}
