"""A self-contained HTML snapshot of a run or a compare: one file that opens from `file://` with
no server, its charts drawn by plotly.js inlined in it.

The page holds the title, the sections (headings, text, lists, small tables) and the Plotly
figure dicts, each figure in a `<script type="application/json">` block whose `<`, `>`, `&`,
U+2028 and U+2029 are written as `\\uXXXX`, so nothing in the data (a run title such as
`</script><script>...`) can close the block. A tiny inline script draws them. Nothing refers
outside the file: no `src` or `url(...)`, a CSP `<meta>` (`default-src 'none'`) that forbids every
load and connection, text shown as text. The one exception is a section's note, rendered as the
note's page renders it (`app.compare.notes.render_note`: everything escaped, then http(s) URLs,
commit ids and Message-IDs as `<a rel="noopener nofollow">` links): links are followed only
when clicked, and load nothing. Print-friendly CSS is inline.

Serve it as an attachment (`Content-Disposition: attachment`): its scripts are inline, which the
app's own CSP (`script-src 'self'`) blocks, so shown in place it would draw no chart.

The caller reads the vendored bundle (`static/vendor/plotly-cartesian-*.min.js`) and passes its
text; it goes in unchanged, its licence header first. Pure: the same arguments give the same
bytes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from app.compare.notes import render_note

Figure = Mapping[str, Any]
Cell = str | int | float | None

# The only loads a snapshot allows: inline scripts and styles, and the data:/blob: images
# plotly.js makes when it saves a chart as a picture.
SNAPSHOT_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:"
)
# As the app's pages draw (static/js/charts.js), less what needs a server.
PLOT_CONFIG = {
    "responsive": True,
    "displaylogo": False,
    "showLink": False,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
    "toImageButtonOptions": {"format": "svg"},
}
# Inside a <script> element the HTML parser looks for these (any case) whatever the JavaScript
# means: `</script` ends the element, `<!--` with `<script` changes how it ends.
_SCRIPT_BREAKERS = re.compile(r"</script|<!--", re.IGNORECASE)
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_ESCAPED = re.compile("[<>&\u2028\u2029]")

STYLE = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1f24; margin: 0 auto;
  max-width: 1200px; padding: 16px 24px; }
h1 { font-size: 1.5em; margin: 0 0 4px; }
h2 { font-size: 1.15em; margin: 24px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 2px; }
.subtitle, .footer { color: #57606a; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.note { overflow-wrap: anywhere; border-left: 3px solid #d0d7de; padding-left: 8px; }
table { border-collapse: collapse; margin: 8px 0; max-width: 100%; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.table-wrap { overflow-x: auto; }
figure { margin: 12px 0; }
.chart { width: 100%; min-height: 360px; }
.footer { margin-top: 32px; font-size: 0.9em; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; }
  figure, table { break-inside: avoid; }
  .modebar-container, .no-print { display: none !important; }
  .table-wrap { overflow: visible; }
}
"""

# Draws every figure block into its chart; marks each drawn chart (data-drawn) and the body once
# all are (data-charts-drawn), as the app's pages do; redraws to the paper's width for printing.
DRAW_SCRIPT = """
(function () {
  "use strict";
  var config = %(config)s;
  var blocks = document.querySelectorAll('script[type="application/json"][data-figure]');
  var drawn = [];
  blocks.forEach(function (block) {
    var target = document.getElementById(block.getAttribute("data-figure"));
    var figure;
    try {
      figure = JSON.parse(block.textContent);
    } catch (err) {
      target.textContent = "Chart data could not be read: " + err;
      return;
    }
    var layout = Object.assign({ autosize: true }, figure.layout || {});
    drawn.push(window.Plotly.newPlot(target, figure.data || [], layout, config).then(function () {
      target.setAttribute("data-drawn", "true");
    }));
  });
  Promise.all(drawn).then(function () {
    document.body.setAttribute("data-charts-drawn", "true");
  });
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll(".js-plotly-plot").forEach(function (plot) {
      window.Plotly.Plots.resize(plot);
    });
  });
})();
"""


@dataclass(frozen=True)
class Table:
    """A small table: a header row, then rows of cells (text, or numbers aligned right; None is
    an empty cell). The caller formats numbers as the page does."""

    columns: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    caption: str | None = None


@dataclass(frozen=True)
class Section:
    """A part of the page under its heading: plain text (newlines kept), a note (plain text whose
    URLs, commits and Message-IDs are linked as on the app's pages), a bulleted list (warnings),
    tables, then figures (Plotly figure dicts, as `app.charts` builds)."""

    heading: str
    text: str = ""
    note: str = ""
    items: Sequence[str] = ()
    tables: Sequence[Table] = ()
    figures: Sequence[Figure] = ()


def render_snapshot(
    title: str,
    sections: Sequence[Section],
    *,
    plotly_js: str,
    subtitle: str = "",
    footer: str = "",
) -> str:
    """The snapshot page: `title` (its `<title>` and heading), `subtitle` under it, the sections
    in order, `footer` at the end (say there what the snapshot is of, and when it was taken:
    plain text, so a URL in it is shown, not linked). `plotly_js` is the vendored bundle's text.

    Raises `ValueError` naming the argument when `plotly_js` is not a bundle that can be inlined
    (no licence header first, or it holds `</script` or `<!--`) or a figure is not a figure dict.
    """
    _check_bundle(plotly_js)
    body: list[str] = [f"<h1>{_escape(_string('title', title))}</h1>"]
    if _string("subtitle", subtitle):
        body.append(f'<p class="subtitle text">{_escape(subtitle)}</p>')
    chart_count = 0
    for s, section in enumerate(sections):
        where = f"sections[{s}]"
        if not isinstance(section, Section):
            raise ValueError(f"{where}: a Section, got {type(section).__name__}")
        body.append(f"<section>\n<h2>{_escape(_string(f'{where}.heading', section.heading))}</h2>")
        if _string(f"{where}.text", section.text):
            body.append(f'<div class="text">{_escape(section.text)}</div>')
        if _string(f"{where}.note", section.note):
            body.append(f'<div class="note">{render_note(section.note)}</div>')
        items = [_string(f"{where}.items[{i}]", item) for i, item in enumerate(section.items)]
        if items:
            body.append("<ul>" + "".join(f'<li class="text">{_escape(i)}</li>' for i in items) + "</ul>")
        body += [_table(f"{where}.tables[{t}]", table) for t, table in enumerate(section.tables)]
        for f, figure in enumerate(section.figures):
            chart_count += 1
            body.append(_figure(f"sections[{s}].figures[{f}]", f"chart-{chart_count}", figure))
        body.append("</section>")
    if chart_count:
        body.append(
            '<noscript><p class="text">The charts need JavaScript; their data is in this file.</p></noscript>'
        )
    if _string("footer", footer):
        body.append(f'<p class="footer text">{_escape(footer)}</p>')
    scripts = ""
    if chart_count:
        draw = DRAW_SCRIPT % {"config": script_json(PLOT_CONFIG)}
        scripts = f"<script>\n{plotly_js}\n</script>\n<script>{draw}</script>\n"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_escape(SNAPSHOT_CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n"
        + scripts
        + "</body>\n</html>\n"
    )


def script_json(value: Any) -> str:
    """JSON for inside a `<script>` element: `<`, `>`, `&`, U+2028 and U+2029 written as
    `\\uXXXX` (the same value to JSON.parse; nothing the HTML parser can end the element on).
    NaN and infinities become null, as in the app's pages."""
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    return _JSON_ESCAPED.sub(lambda m: _JSON_ESCAPES[m.group()], text)


def _check_bundle(plotly_js: str) -> None:
    if not isinstance(plotly_js, str) or not plotly_js.lstrip().startswith("/*"):
        raise ValueError(
            "plotly_js: expected the vendored plotly.js bundle's text, which starts with its licence header"
        )
    breaker = _SCRIPT_BREAKERS.search(plotly_js)
    if breaker:
        raise ValueError(
            f"plotly_js: holds {breaker.group()!r} at character {breaker.start()}, so it cannot be inlined"
        )


def _figure(where: str, chart_id: str, figure: Figure) -> str:
    if not isinstance(figure, Mapping):
        raise ValueError(
            f"{where}: a Plotly figure is a mapping with 'data' and 'layout', got {type(figure).__name__}"
        )
    if not isinstance(figure.get("data", []), Sequence) or isinstance(figure.get("data"), str):
        raise ValueError(f"{where}.data: a list of traces, got {type(figure.get('data')).__name__}")
    if not isinstance(figure.get("layout", {}), Mapping):
        raise ValueError(f"{where}.layout: a mapping, got {type(figure.get('layout')).__name__}")
    label = _figure_title(figure)
    return (
        f'<figure><div class="chart" id="{chart_id}" role="img" aria-label="{_escape(label)}"></div>'
        f'<script type="application/json" data-figure="{chart_id}">{script_json(figure)}</script></figure>'
    )


def _figure_title(figure: Figure) -> str:
    title = figure.get("layout", {}).get("title")
    if isinstance(title, Mapping):
        title = title.get("text")
    return title if isinstance(title, str) else "chart"


def _table(where: str, table: Table) -> str:
    columns = [_string(f"{where}.columns[{c}]", column) for c, column in enumerate(table.columns)]
    for r, row in enumerate(table.rows):
        if len(row) != len(columns):
            raise ValueError(f"{where}.rows[{r}]: {len(row)} cells for {len(columns)} columns")
    if table.caption is not None:
        _string(f"{where}.caption", table.caption)
    head = "".join(f"<th>{_escape(c)}</th>" for c in columns)
    rows = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>\n" for row in table.rows)
    caption = f"<caption>{_escape(table.caption)}</caption>" if table.caption else ""
    table_html = f"<table>{caption}<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody></table>"
    return f'<div class="table-wrap">{table_html}</div>'


def _cell(cell: Cell) -> str:
    if cell is None:
        return "<td></td>"
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return f'<td class="num">{_escape(str(cell))}</td>'
    return f"<td>{_escape(str(cell))}</td>"


def _string(where: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: a string, got {type(value).__name__}")
    return value


def _escape(text: str) -> str:
    return html.escape(text, quote=True)
