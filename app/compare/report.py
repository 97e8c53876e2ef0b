"""A comparison as people paste it: plain text in the kernel test robot's layout (the tables its
mails to linux-pm carry) and Markdown for a GitHub issue.

Both render the statistics of `app.compare.stats` (one `PairComparison` per side after the base)
and compute nothing themselves. Rows whose metric got a verdict (better, worse, higher, lower) on
any side come first; with `all=True` the others follow after a blank line (in the text) or in a
second table (Markdown). The robot's layout, as its mails show it (golden data in
`tests/data/robot/`): a rule of 89 `=`, the parameters as `key/key/...:` over `  value/value/...`,
`commit:` over one line per side, the sides' ids right-aligned in 16 then 27 characters over
dashes, the heads `%stddev     %change         %stddev` and `\\          |                \\`, then
per row each side's mean in 10 characters (two decimals below 1,000, `%.4g` above 10^8, a whole
number between) followed by ` ±NNN%` when the %stddev is above 2% (its integer part) or 6 spaces,
each change in 12 (`%+10.1f` then `% `, or two spaces for a change in percentage points), and
two spaces before the metric's dotted name.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.compare.stats import ALPHA, MetricComparison, PairComparison, SideSummary

RULE = "=" * 89
FIRST_WIDTH = 16  # a side's mean (10) and its %stddev (6)
OTHER_WIDTH = 27  # a change (11, with its separator), a mean (10), a %stddev (6)
VALUE_WIDTH = 10
CHANGE_WIDTH = 10
STDDEV_SHOWN_ABOVE_PCT = 2.0  # the robot leaves out a spread this small
NOT_AVAILABLE = "n/a"
SIGNIFICANT = ("better", "worse", "higher", "lower")


@dataclass(frozen=True)
class ReportSide:
    """How a compared run is named: `id` heads its column; the `commit:` lines show `short_id`
    (else `id`) and, when given, `("title")`, as the robot shows a commit's subject."""

    id: str
    title: str | None = None
    short_id: str | None = None

    def line(self) -> str:
        name = self.short_id or self.id
        return name if self.title is None else f'{name} ("{self.title}")'


def robot_table(
    pairs: Sequence[PairComparison],
    *,
    sides: Sequence[ReportSide] | None = None,
    parameters: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
    all: bool = False,
) -> str:
    """The robot's table: header and rows, each line ending in a newline."""
    sides = _sides(pairs, sides)
    significant, rest = _split_rows(pairs)
    lines = _robot_header(sides, parameters or {})
    lines += [_robot_row(pairs, key, names) for key in significant]
    if all and rest:
        lines.append("")
        lines += [_robot_row(pairs, key, names) for key in rest]
    return "".join(line + "\n" for line in lines)


def render_text(
    pairs: Sequence[PairComparison],
    *,
    sides: Sequence[ReportSide] | None = None,
    parameters: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
    link: str | None = None,
    versions: Mapping[str, str] | None = None,
    warnings: Sequence[str] = (),
    all: bool = False,
) -> str:
    """The comparison as plain text for a mail: what makes its figures not comparable (one
    `Warning:` line each), the robot's table, then a footer saying how rows were chosen, where the
    comparison is, and which versions computed it."""
    head = "".join(f"Warning: {w}\n" for w in warnings) + ("\n" if warnings else "")
    table = head + robot_table(pairs, sides=sides, parameters=parameters, names=names, all=all)
    footer = textwrap.wrap(_verdict_note(pairs, all), width=len(RULE))
    if link:
        footer.append(f"Compare: {link}")
    if versions:
        footer.append("Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    return table + "\n" + "".join(line + "\n" for line in footer)


def render_markdown(
    pairs: Sequence[PairComparison],
    *,
    sides: Sequence[ReportSide] | None = None,
    parameters: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
    link: str | None = None,
    versions: Mapping[str, str] | None = None,
    warnings: Sequence[str] = (),
    all: bool = False,
) -> str:
    """The comparison as Markdown for a GitHub issue: warnings, parameters, one table of the metrics with a
    verdict (each side's mean ± %stddev, change, 95% interval, adjusted p, verdict), with `all` a
    second table of the others, then the same footer as the text."""
    sides = _sides(pairs, sides)
    significant, rest = _split_rows(pairs)
    others = ", ".join(_md_text(s.line()) for s in sides[1:])
    out = [f"### {others} against {_md_text(sides[0].line())}", ""]
    out += [f"> **Warning:** {_md_text(w)}" for w in warnings] + ([""] if warnings else [])
    if parameters:
        out += [", ".join(f"`{_md_code(k)}={_md_code(v)}`" for k, v in parameters.items()), ""]
    out += (
        _md_table(pairs, sides, significant, names) if significant else ["No metric changed significantly."]
    )
    if all and rest:
        out += ["", "#### Without a significant change", ""]
        out += _md_table(pairs, sides, rest, names)
    out += ["", _verdict_note(pairs, all)]
    if link:
        out += ["", f"[Compare]({_md_url(link)})"]
    if versions:
        out += ["", "Versions: " + ", ".join(f"{_md_text(k)} `{_md_code(v)}`" for k, v in versions.items())]
    return "\n".join(out) + "\n"


# --- figures as the robot prints them ------------------------------------------------------------


def format_value(value: float | None) -> str:
    """A mean in 10 characters, as the robot prints it."""
    if value is None:
        return f"{NOT_AVAILABLE:>{VALUE_WIDTH}}"
    if abs(value) < 1000:
        return f"{value:{VALUE_WIDTH}.2f}"
    if abs(value) > 100_000_000:
        return f"{value:{VALUE_WIDTH}.4g}"
    return f"{int(value):{VALUE_WIDTH}d}"  # int() truncates, as the robot's %d of a float does


def format_stddev(stddev_pct: float | None) -> str:
    """` ±NNN%` (its integer part) when the spread is above 2% of the mean, else 6 spaces."""
    if stddev_pct is None or not stddev_pct > STDDEV_SHOWN_ABOVE_PCT:
        return " " * 6
    return f" ±{int(stddev_pct):3d}%"


def format_change(change: float | None, unit: str) -> str:
    """A change in 12 characters: `%+10.1f` (`%+10.2g` from 100,000 on) and `% ` for a percent, two
    spaces for percentage points."""
    suffix = "% " if unit == "%" else "  "
    if change is None:
        return f"{NOT_AVAILABLE:>{CHANGE_WIDTH}}" + suffix
    spec = ".1f" if abs(change) < 100_000 else ".2g"
    return f"{change:+{CHANGE_WIDTH}{spec}}" + suffix


# --- inside --------------------------------------------------------------------------------------


def _sides(pairs: Sequence[PairComparison], sides: Sequence[ReportSide] | None) -> list[ReportSide]:
    if not pairs:
        raise ValueError("pairs: a report needs at least one compared pair")
    base_id = pairs[0].base_id
    keys = [m.key for m in pairs[0].metrics]
    for i, pair in enumerate(pairs):
        if pair.base_id != base_id:
            raise ValueError(f"pairs[{i}].base_id: every pair compares with the same base ({base_id!r})")
        if [m.key for m in pair.metrics] != keys:
            raise ValueError(f"pairs[{i}].metrics: every pair must list the same metrics in the same order")
    ids = [base_id] + [p.other_id for p in pairs]
    if sides is None:
        return [ReportSide(i) for i in ids]
    if len(sides) != len(ids):
        raise ValueError(f"sides: {len(sides)} names for {len(ids)} compared runs")
    return list(sides)


def _split_rows(pairs: Sequence[PairComparison]) -> tuple[list[str], list[str]]:
    significant: list[str] = []
    rest: list[str] = []
    for i, m in enumerate(pairs[0].metrics):
        verdicts = [p.metrics[i].verdict for p in pairs]
        (significant if any(v in SIGNIFICANT for v in verdicts) else rest).append(m.key)
    return significant, rest


def _robot_header(sides: Sequence[ReportSide], parameters: Mapping[str, str]) -> list[str]:
    lines = [RULE]
    if parameters:
        lines += ["/".join(parameters) + ":", "  " + "/".join(parameters.values()), ""]
    lines.append("commit: ")
    lines += ["  " + s.line() for s in sides]
    lines.append("")
    others = sides[1:]
    lines.append(
        f"{sides[0].id[:FIRST_WIDTH]:>{FIRST_WIDTH}} "
        + "".join(f"{s.id[:OTHER_WIDTH]:>{OTHER_WIDTH}} " for s in others)
    )
    lines.append("-" * FIRST_WIDTH + " " + ("-" * OTHER_WIDTH + " ") * len(others))
    lines.append("         %stddev" + "     %change         %stddev" * len(others))
    lines.append("             \\  " + "        |                \\  " * len(others))
    return lines


def _row(pairs: Sequence[PairComparison], key: str) -> list[MetricComparison]:
    return [p.metric(key) for p in pairs]


def _robot_cell(side: SideSummary) -> str:
    return format_value(side.mean) + format_stddev(side.stddev_pct)


def _robot_row(pairs: Sequence[PairComparison], key: str, names: Mapping[str, str] | None) -> str:
    row = _row(pairs, key)
    text = _robot_cell(row[0].base)
    for m in row:
        text += format_change(m.change, m.change_unit) + _robot_cell(m.other)
    return f"{text}  {_name(key, names)}"


def _name(key: str, names: Mapping[str, str] | None) -> str:
    return names.get(key, key) if names else key


def _verdict_note(pairs: Sequence[PairComparison], all: bool) -> str:
    significant, rest = _split_rows(pairs)
    tests = sum(1 for p in pairs for m in p.metrics if m.test is not None and m.test.p_adjusted is not None)
    shown = "" if all or not rest else "; the others are left out"
    return (
        f"{len(significant)} of {len(significant) + len(rest)} metrics changed: significant after "
        f"Benjamini-Hochberg at {ALPHA:.0%} over {tests} tests and at or above each metric's "
        f"practical threshold{shown}."
    )


# --- Markdown ------------------------------------------------------------------------------------

# What can start emphasis, code, links, HTML, entities or a table cell inside a line (the text
# never starts one, so list and heading markers need nothing).
_MD_SPECIAL = set("\\`*_[]<>|~&")


def _md_text(text: str) -> str:
    """Plain text that Markdown shows as it is."""
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in text)


def _md_code(text: str) -> str:
    """Text inside a code span (a pipe still ends a table cell)."""
    return text.replace("`", "'").replace("|", "\\|")


def _md_url(url: str) -> str:
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def _md_side(side: SideSummary) -> str:
    mean = format_value(side.mean).strip()
    shown = format_stddev(side.stddev_pct).strip()
    return f"{mean} ± {int(side.stddev_pct)}%" if shown and side.stddev_pct is not None else mean


def _md_interval(m: MetricComparison) -> str:
    if m.ci95 is None:
        return NOT_AVAILABLE
    if m.change_unit == "%":
        return f"[{m.ci95[0]:+.1f}%, {m.ci95[1]:+.1f}%]"
    return f"[{m.ci95[0]:+.2f}, {m.ci95[1]:+.2f}] pp"


def _md_p(m: MetricComparison) -> str:
    if m.test is None:
        return NOT_AVAILABLE
    if m.test.name == "exact":
        return "exact"
    q = m.test.p_adjusted
    if q is None:
        return NOT_AVAILABLE
    return "<0.0001" if q < 0.0001 else f"{q:.4f}"


def _md_verdict(m: MetricComparison) -> str:
    return NOT_AVAILABLE if m.verdict is None else m.verdict.replace("_", " ")


def _md_table(
    pairs: Sequence[PairComparison],
    sides: Sequence[ReportSide],
    keys: Sequence[str],
    names: Mapping[str, str] | None,
) -> list[str]:
    head = ["metric", _md_text(sides[0].id)]
    align = ["---", "---:"]
    for side in sides[1:]:
        head += ["change", "95% CI", "p (BH)", _md_text(side.id), "verdict"]
        align += ["---:", "---:", "---:", "---:", "---"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for key in keys:
        row = _row(pairs, key)
        cells = [f"`{_md_code(_name(key, names))}`", _md_side(row[0].base)]
        for m in row:
            change = format_change(m.change, m.change_unit).strip()
            cells += [
                change if m.change_unit == "%" or m.change is None else f"{change} pp",
                _md_interval(m),
                _md_p(m),
                _md_side(m.other),
                _md_verdict(m),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
