"""The HTML snapshot, checked by parsing it: nothing refers outside the file, data stays data
whatever it holds, the plotly.js bundle goes in verbatim with its licence header. (Drawn in
Chromium from file:// in tests/browser/test_snapshot.py.)"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.compare.snapshot import SNAPSHOT_CSP, Section, Table, render_snapshot, script_json

VENDOR = Path(__file__).resolve().parents[3] / "static" / "vendor"
FAKE_BUNDLE = "/*! a licence header */\nwindow.Plotly = {};\n"
HOSTILE = "</script><script>alert(1)</script>"
# Attributes and tags through which a page loads or links to something.
URL_ATTRIBUTES = {
    "src",
    "href",
    "action",
    "formaction",
    "srcset",
    "poster",
    "data",
    "background",
    "xlink:href",
}
LOADING_TAGS = {"link", "img", "iframe", "object", "embed", "base", "audio", "video", "source", "frame"}


def real_bundle() -> str:
    (path,) = VENDOR.glob("plotly-cartesian-*.min.js")
    return path.read_text(encoding="utf-8")


class Page(HTMLParser):
    """Every tag with its attributes, and the text of each <script> and <style> element."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.scripts.append((dict(attrs), ""))
        self._in = tag

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif self._in == "style":
            self.styles.append(data)
        else:
            self.text.append(data)

    def figures(self) -> list[Any]:
        return [json.loads(text) for attrs, text in self.scripts if attrs.get("type") == "application/json"]


def figure(title: str = "Residency", name: str = "C6") -> dict[str, Any]:
    return {
        "data": [{"type": "bar", "name": name, "x": ["C1", "C1E", "C6"], "y": np.array([1.5, 2.0, 96.5])}],
        "layout": {"title": {"text": title}, "yaxis": {"title": {"text": "% of time"}}},
    }


def sections(hostile: str = "") -> list[Section]:
    return [
        Section(
            "Summary" + hostile,
            text="C6 off on CPU 0-3.\nNote: see 85975daeaa4d" + hostile,
            items=["durations differ: 1,000 ms against 200 ms" + hostile],
            tables=[
                Table(
                    ["metric", "base", "patch" + hostile],
                    [["energy_j", 1.25, 1.31], ["c6" + hostile, None, 3]],
                )
            ],
        ),
        Section("Charts", figures=[figure(), figure("IPIs" + hostile, name=hostile)]),
    ]


def test_nothing_refers_outside_the_file() -> None:
    bundle = real_bundle()
    markup = render_snapshot(
        "Compare ab12 against cd34", sections(), plotly_js=bundle, footer="Taken 2026-12-01"
    )
    page = Page(markup)
    for tag, attrs in page.tags:
        assert tag not in LOADING_TAGS, tag
        assert not URL_ATTRIBUTES & set(attrs), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
    for css in page.styles:
        assert "url(" not in css and "@import" not in css
    # The bundle names XML namespaces and project pages in strings; everything else is ours.
    ours = markup.replace(bundle, "")
    for reference in ("http:", "https:", "//", "/static", "file:"):
        assert reference not in ours, reference
    metas = [attrs for tag, attrs in page.tags if tag == "meta" and attrs.get("http-equiv")]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": SNAPSHOT_CSP}]
    assert "default-src 'none'" in SNAPSHOT_CSP and "connect-src" not in SNAPSHOT_CSP


def test_the_bundle_goes_in_verbatim_with_its_licence_header_first() -> None:
    bundle = real_bundle()
    header = bundle[: bundle.index("*/") + 2]
    assert "plotly.js" in header and "MIT" in header
    page = Page(render_snapshot("t", sections(), plotly_js=bundle))
    inline = [text for attrs, text in page.scripts if not attrs]
    assert inline[0].strip("\n") == bundle.strip("\n")
    assert inline[0].lstrip("\n").startswith(header)


def test_hostile_text_and_figures_stay_data() -> None:
    markup = render_snapshot(
        HOSTILE, sections(HOSTILE), plotly_js=FAKE_BUNDLE, subtitle=HOSTILE, footer=HOSTILE
    )
    assert "<script>alert" not in markup
    page = Page(markup)
    kinds = [attrs.get("type") for attrs, _ in page.scripts]
    assert kinds == ["application/json", "application/json", None, None]  # 2 figures, bundle, drawing
    drawn = page.figures()
    assert drawn[1]["layout"]["title"]["text"] == "IPIs" + HOSTILE
    assert drawn[1]["data"][0]["name"] == HOSTILE
    assert drawn[0]["data"][0]["y"] == [1.5, 2.0, 96.5]
    assert [tag for tag, _ in page.tags].count("h1") == 1
    assert HOSTILE in page.text and "patch" + HOSTILE in page.text
    title = [attrs["aria-label"] for tag, attrs in page.tags if tag == "div" and "aria-label" in attrs]
    assert title == ["Residency", "IPIs" + HOSTILE]


def test_script_json_escapes_what_could_end_a_script_and_keeps_the_value() -> None:
    value = {"t": "</SCRIPT><!-- a&b > c \u2028\u2029", "nan": math.nan, "n": np.int64(3)}
    text = script_json(value)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert "\\u003c/SCRIPT\\u003e\\u003c!-- a\\u0026b \\u003e c \\u2028\\u2029" in text
    assert json.loads(text) == {"t": value["t"], "nan": None, "n": 3}


def test_same_arguments_same_bytes_and_no_scripts_without_figures() -> None:
    a = render_snapshot("t", sections(), plotly_js=FAKE_BUNDLE)
    assert a == render_snapshot("t", sections(), plotly_js=FAKE_BUNDLE)
    plain = Page(render_snapshot("t", [Section("Only text", text="x")], plotly_js=FAKE_BUNDLE))
    assert plain.scripts == []


def test_text_keeps_its_newlines_and_numbers_align_right() -> None:
    page = Page(render_snapshot("t", sections(), plotly_js=FAKE_BUNDLE))
    assert "C6 off on CPU 0-3.\nNote: see 85975daeaa4d" in page.text  # plain text, not a link
    cells = [attrs.get("class") for tag, attrs in page.tags if tag == "td"]
    assert cells == [None, "num", "num", None, None, "num"]


@pytest.mark.parametrize(
    ("bundle", "message"),
    [
        ("window.Plotly = {};", "plotly_js: expected the vendored plotly.js bundle's text"),
        ("/* l */ var s = '</Script>';", "plotly_js: holds '</Script' at character 17"),
        ("/* l */ var s = '<!--';", "plotly_js: holds '<!--'"),
    ],
)
def test_a_bundle_that_cannot_be_inlined_is_refused(bundle: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        render_snapshot("t", sections(), plotly_js=bundle)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([1, 2], "sections[1].figures[0]: a Plotly figure is a mapping with 'data' and 'layout', got list"),
        ({"data": "x"}, "sections[1].figures[0].data: a list of traces, got str"),
        ({"data": [], "layout": []}, "sections[1].figures[0].layout: a mapping, got list"),
    ],
)
def test_a_figure_that_is_not_one_is_refused_naming_it(bad: Any, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        render_snapshot("t", [Section("a"), Section("b", figures=[bad])], plotly_js=FAKE_BUNDLE)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("title", "given", "message"),
    [
        (3, [], "title: a string, got int"),
        ("t", [Section(None)], "sections[0].heading: a string, got NoneType"),  # type: ignore[arg-type]
        ("t", ["Summary"], "sections[0]: a Section, got str"),
        ("t", [Section("a", items=["x", 2])], "sections[0].items[1]: a string, got int"),  # type: ignore[list-item]
        (
            "t",
            [Section("a", tables=[Table(["a", "b"], [["x", 1], [2]])])],
            "sections[0].tables[0].rows[1]: 1 cells for 2 columns",
        ),
    ],
)
def test_text_that_is_not_text_is_refused_naming_it(title: Any, given: Any, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        render_snapshot(title, given, plotly_js=FAKE_BUNDLE)
    assert str(caught.value) == message


def test_a_note_is_escaped_and_linked_as_on_the_app_s_pages() -> None:
    note = f"see 85975daeaa4d and <202508251419.d8117ed7-lkp@intel.com>{HOSTILE} javascript:alert(1)"
    markup = render_snapshot("Run", [Section("Note", note=note)], plotly_js=FAKE_BUNDLE)
    page = Page(markup)
    anchors = [attrs for tag, attrs in page.tags if tag == "a"]
    assert [a["href"] for a in anchors] == [
        "https://git.kernel.org/torvalds/c/85975daeaa4d",
        "https://lore.kernel.org/r/202508251419.d8117ed7-lkp@intel.com",
    ]
    assert all(a["rel"] == "noopener nofollow" for a in anchors)
    assert [tag for tag, _ in page.tags if tag == "script"] == [], "the hostile text stays text"
    assert HOSTILE in "".join(page.text) and "javascript:alert(1)" in "".join(page.text)
    for tag, attrs in page.tags:
        assert tag not in LOADING_TAGS and "src" not in attrs, (tag, attrs)
