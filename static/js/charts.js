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

export function drawFigure(target, figure) {
  const layout = Object.assign({ autosize: true }, figure.layout || {});
  return window.Plotly.newPlot(target, figure.data || [], layout, PLOT_CONFIG).then((gd) => {
    target.dataset.drawn = "true";
    target.dispatchEvent(new CustomEvent("chart-drawn", { bubbles: true }));
    return gd;
  });
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
  return drawFigure(target, figure);
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
