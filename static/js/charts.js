// Draw every chart embedded in the page: <script type="application/json" data-chart="ID">
// holds a Plotly figure built by app/charts.py; it is drawn into the element with id ID.
// plotly.js is loaded (deferred, before this module) from the app's own /vendor URL.

const PLOT_CONFIG = {
  responsive: true,
  displaylogo: false,
  modeBarButtonsToRemove: ["lasso2d", "select2d"],
  toImageButtonOptions: { format: "svg" },
};

export function drawFigure(target, figure) {
  const layout = Object.assign({ autosize: true }, figure.layout || {});
  return window.Plotly.newPlot(target, figure.data || [], layout, PLOT_CONFIG).then((gd) => {
    target.dataset.drawn = "true";
    return gd;
  });
}

export function drawEmbeddedCharts(root = document) {
  const blocks = root.querySelectorAll('script[type="application/json"][data-chart]');
  const jobs = [];
  for (const block of blocks) {
    const target = document.getElementById(block.dataset.chart);
    if (!target || target.dataset.drawn) continue;
    let figure;
    try {
      figure = JSON.parse(block.textContent);
    } catch (err) {
      target.textContent = "Chart data could not be read: " + err;
      continue;
    }
    jobs.push(drawFigure(target, figure));
  }
  return Promise.all(jobs);
}

if (window.Plotly) {
  drawEmbeddedCharts().then(() => { document.body.dataset.chartsDrawn = "true"; });
} else {
  for (const el of document.querySelectorAll(".chart")) {
    el.textContent = "plotly.js did not load; the chart data is available from the API.";
  }
}
