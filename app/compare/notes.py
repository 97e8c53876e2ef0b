"""Notes: a short plain text attached to a run, sweep, measurement or fit, checked on the way in
and rendered to safe HTML on the way out.

Rendering escapes everything and then links exactly three things, always to an `http(s)` URL
built here or taken from the text: http(s) URLs, commit ids (12 to 40 lowercase hex digits, to
the kernel's git web) and `<Message-ID>`s (to lore's archive). No other scheme is ever linked, so
`javascript:` in a note stays text. Pure functions: no database, no web framework.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any
from urllib.parse import quote

FIELD = "note"
MAX_NOTE_CHARS = 2000
ALLOWED_CONTROLS = frozenset("\n\t")
# The same as a JSON Schema pattern: no control character (Unicode category Cc) but those.
NOTE_PATTERN = "^[^\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f]*$"
COMMIT_URL = "https://git.kernel.org/torvalds/c/"
MESSAGE_ID_URL = "https://lore.kernel.org/r/"
LINK_REL = "noopener nofollow"

# A URL ends at whitespace or at a character that may not appear in one unescaped (RFC 3986):
# a `"` or `<` in a note ends the link instead of breaking out of its attribute.
_URL = r"(?i:https?)://[A-Za-z0-9\[][^\s<>\"`{}|\\^]*"
# git prints ids in lowercase; at least one letter, so a 12-digit decimal count is not linked.
_COMMIT = r"(?<![\w/.@-])(?=[0-9]*[a-f])[0-9a-f]{12,40}(?![\w/@-])"
# RFC 5322's msg-id: dot-atom-text "@" dot-atom-text (no `:`, so `<https://...>` is not one).
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]"
_MESSAGE_ID = rf"<(?P<message_id>{_ATEXT}+@{_ATEXT}+)>"
_LINKABLE = re.compile(rf"(?P<url>{_URL})|{_MESSAGE_ID}|(?P<commit>{_COMMIT})")
# Punctuation that ends a sentence rather than the URL it follows.
_TRAILING = ".,:;!?'*_"
_CLOSERS = {")": "(", "]": "["}
# What a Message-ID keeps unescaped in lore's path (`/`, `?`, `#`, `%` are percent-encoded).
_PATH_SAFE = "@!$&'()*+,;=-._~"


class NoteError(ValueError):
    """A note that cannot be stored. `str()` is `note: <why>`, the form `app.errors` turns into a
    422 whose `loc` ends in `note`; `field` and `reason` hold the parts."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{FIELD}: {reason}")
        self.field = FIELD
        self.reason = reason


def validate_note(text: Any) -> str:
    """The note unchanged if it can be stored, else `NoteError` saying why.

    At most `MAX_NOTE_CHARS` characters; NUL refused (PostgreSQL's text cannot hold it); other
    control characters refused except newline and tab (a carriage return included: lines end in
    `\\n`); lone surrogates refused (they are not text and cannot be encoded as UTF-8).
    """
    if not isinstance(text, str):
        raise NoteError(f"must be a string, got {type(text).__name__}")
    if len(text) > MAX_NOTE_CHARS:
        raise NoteError(f"at most {MAX_NOTE_CHARS:,} characters, got {len(text):,}")
    for position, char in enumerate(text):
        if char == "\0":
            raise NoteError(f"NUL (U+0000) at character {position} is not allowed")
        category = unicodedata.category(char)
        if category == "Cc" and char not in ALLOWED_CONTROLS:
            name = {"\r": " (carriage return; end lines with \\n alone)"}.get(char, "")
            raise NoteError(
                f"control character U+{ord(char):04X}{name} at character {position} is not allowed; "
                "only newline and tab are"
            )
        if category == "Cs":
            raise NoteError(f"lone surrogate U+{ord(char):04X} at character {position} is not text")
    return text


def render_note(text: str) -> str:
    """The note as HTML to place inside an element: every character escaped, newlines as `<br>`
    (so the element keeps ordinary `white-space`), URLs, commit ids and Message-IDs as
    `<a href="..." rel="noopener nofollow">` links (the only tags besides `<br>`). A URL's
    trailing sentence punctuation, and a closing bracket it did not open, stay outside its link.
    In a template, wrap it in `markupsafe.Markup`."""
    parts: list[str] = []
    position = 0
    for match in _LINKABLE.finditer(text):
        start, end = match.span()
        parts.append(_text(text[position:start]))
        if match.group("url"):
            url = _trim_url(match.group("url"))
            parts.append(_link(url, url))
            end = start + len(url)
        elif match.group("message_id"):
            message_id = match.group("message_id")
            href = MESSAGE_ID_URL + quote(message_id, safe=_PATH_SAFE)
            parts.append(_text("<") + _link(href, message_id) + _text(">"))
        else:
            commit = match.group("commit")
            parts.append(_link(COMMIT_URL + commit, commit))
        position = end
    parts.append(_text(text[position:]))
    return "".join(parts)


def _trim_url(url: str) -> str:
    """Drop trailing punctuation and unbalanced closing brackets: `(see https://x/a_(b)).` links
    `https://x/a_(b)`."""
    while url:
        last = url[-1]
        if last in _TRAILING:
            url = url[:-1]
        elif last in _CLOSERS and url.count(last) > url.count(_CLOSERS[last]):
            url = url[:-1]
        else:
            break
    return url


def _link(href: str, label: str) -> str:
    return f'<a href="{html.escape(href, quote=True)}" rel="{LINK_REL}">{html.escape(label, quote=True)}</a>'


def _text(text: str) -> str:
    return html.escape(text, quote=True).replace("\n", "<br>\n")
