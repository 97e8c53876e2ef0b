"""Notes: validation naming the field, and rendering that escapes everything and links only
http(s) URLs, commit ids and Message-IDs. Rendered HTML is checked by parsing it."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.compare.notes import MAX_NOTE_CHARS, NoteError, render_note, validate_note


class Parsed(HTMLParser):
    """The text a browser would show (`<br>` as a newline), the links, and every tag seen."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.text = ""
        self.tags: list[str] = []
        self.links: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._label = ""
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "br":
            self.text += "\n"
        elif tag == "a":
            self._open, self._label = dict(attrs), ""

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        if tag == "a" and self._open is not None:
            self.links.append((self._open, self._label))
            self._open = None

    def handle_data(self, data: str) -> None:
        # render_note writes "<br>\n": the newline after the tag is markup, not text
        if self.tags and self.tags[-1] == "br" and data.startswith("\n"):
            data = data[1:]
        self.text += data
        if self._open is not None:
            self._label += data


def links(note: str) -> list[tuple[str, str]]:
    parsed = Parsed(render_note(note))
    for attrs, _ in parsed.links:
        assert set(attrs) == {"href", "rel"} and attrs["rel"] == "noopener nofollow", attrs
    return [(str(attrs["href"]), label) for attrs, label in parsed.links]


# --- validation -----------------------------------------------------------------------------------


def test_a_note_of_the_limit_with_newlines_and_tabs_is_kept_unchanged() -> None:
    head = "C6 off on CPU 0-3\n\tsee <x@y>\n"
    note = head + "é" * (MAX_NOTE_CHARS - len(head))
    assert len(note) == MAX_NOTE_CHARS
    assert validate_note(note) == note
    assert validate_note("") == ""


@pytest.mark.parametrize(
    ("note", "reason"),
    [
        ("x" * (MAX_NOTE_CHARS + 1), "note: at most 2,000 characters, got 2,001"),
        ("ab\0c", "note: NUL (U+0000) at character 2 is not allowed"),
        ("a\x07", "note: control character U+0007 at character 1 is not allowed; only newline and tab are"),
        (
            "a\r\nb",
            "note: control character U+000D (carriage return; end lines with \\n alone) at character 1",
        ),
        ("\x1b[31mred", "note: control character U+001B at character 0"),
        ("a\x85", "note: control character U+0085 at character 1"),
        ("a\ud800", "note: lone surrogate U+D800 at character 1 is not text"),
        (42, "note: must be a string, got int"),
    ],
)
def test_bad_notes_are_refused_naming_the_field_and_why(note: object, reason: str) -> None:
    with pytest.raises(NoteError) as caught:
        validate_note(note)
    assert str(caught.value).startswith(reason)
    assert caught.value.field == "note"
    assert isinstance(caught.value, ValueError)  # so a pydantic validator may raise it as is


# --- rendering ------------------------------------------------------------------------------------


def test_links_urls_commits_and_message_ids() -> None:
    note = (
        "Regressed by 85975daeaa4d (teo), see <202508251419.d8117ed7-lkp@intel.com>\n"
        "and https://lore.kernel.org/linux-pm/?q=menu&x=1 for the thread."
    )
    assert links(note) == [
        ("https://git.kernel.org/torvalds/c/85975daeaa4d", "85975daeaa4d"),
        (
            "https://lore.kernel.org/r/202508251419.d8117ed7-lkp@intel.com",
            "202508251419.d8117ed7-lkp@intel.com",
        ),
        ("https://lore.kernel.org/linux-pm/?q=menu&x=1", "https://lore.kernel.org/linux-pm/?q=menu&x=1"),
    ]
    markup = render_note(note)
    assert "&amp;x=1" in markup and "<br>\n" in markup
    assert Parsed(markup).text == note


@pytest.mark.parametrize(
    ("note", "url"),
    [
        ("see https://example.org/a.", "https://example.org/a"),
        ("(see https://example.org/a)", "https://example.org/a"),
        ("https://en.wikipedia.org/wiki/Idle_(CPU)).", "https://en.wikipedia.org/wiki/Idle_(CPU)"),
        ("https://example.org/a, https://example.org/b;", "https://example.org/a"),
        ("'https://example.org/q?a=1'!", "https://example.org/q?a=1"),
        ("[https://example.org/x]", "https://example.org/x"),
        ("HTTPS://example.org/up", "HTTPS://example.org/up"),
    ],
)
def test_trailing_punctuation_stays_outside_the_link(note: str, url: str) -> None:
    assert links(note)[0] == (url, url)
    assert Parsed(render_note(note)).text == note


def test_a_commit_id_is_12_to_40_lowercase_hex_standing_alone() -> None:
    full = "85975daeaa4d6ec560bfcd354fc9c08ad7f38888"
    assert links(f"fixed in {full}.") == [(f"https://git.kernel.org/torvalds/c/{full}", full)]
    assert links("too short 85975daeaa4") == []
    assert links("too long " + full + "a") == []
    assert links("a count of 123456789012 entries") == []  # digits only: a number, not a commit
    assert links("inside a word x85975daeaa4d or 85975daeaa4dz or v6.12-g85975daeaa4d") == []
    assert links("upper case 85975DAEAA4D") == []


def test_hostile_markup_stays_text() -> None:
    for note in [
        "<script>alert(1)</script>",
        '"onmouseover="alert(1)" x=\'',
        "<img src=x onerror=alert(1)>",
        "</textarea><b>bold</b>&amp;",
    ]:
        parsed = Parsed(render_note(note))
        assert parsed.tags == [], note
        assert parsed.text == note


def test_a_url_with_a_quote_in_it_cannot_leave_its_attribute() -> None:
    note = 'https://example.org/a"onmouseover="alert(1)'
    parsed = Parsed(render_note(note))
    assert [(a["href"], label) for a, label in parsed.links] == [
        ("https://example.org/a", "https://example.org/a")
    ]
    assert parsed.tags == ["a", "/a"]
    assert parsed.text == note
    # and one with a ' (legal in a URL) is escaped inside the attribute
    assert links("https://example.org/it's") == [("https://example.org/it's", "https://example.org/it's")]
    assert "&#x27;" in render_note("https://example.org/it's")


@pytest.mark.parametrize(
    "note",
    [
        "javascript:alert(1)",
        "JavaScript://example.org/%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1) file:///etc/passwd ftp://example.org/ //example.org/x",
        "<javascript:alert(1)@x>",
        "http:// https://",
    ],
)
def test_no_other_scheme_is_ever_linked(note: str) -> None:
    assert links(note) == []
    assert Parsed(render_note(note)).text == note


def test_a_message_id_link_percent_encodes_what_would_change_the_path() -> None:
    assert links("<a/b?c#d%e@host.example>") == [
        ("https://lore.kernel.org/r/a%2Fb%3Fc%23d%25e@host.example", "a/b?c#d%e@host.example")
    ]
    assert links("<https://user@example.org/>") == [
        ("https://user@example.org/", "https://user@example.org/")
    ]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_text_renders_to_itself_with_only_safe_links(note: str) -> None:
    parsed = Parsed(render_note(note))
    assert parsed.text == note
    assert set(parsed.tags) <= {"a", "/a", "br"}
    for attrs, _ in parsed.links:
        assert str(attrs["href"]).lower().startswith(("https://", "http://"))
