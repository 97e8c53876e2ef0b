"""`intel_idle.table=`: the boot parameter that adjusts the registered table (7.0-rc1).

A transcription of the kernel's parser and validator as commits 111f77a23348 ("intel_idle: Add
cmdline option to adjust C-states table") and be6a150829b3 ("intel_idle: Add C-states
validation") wrote them in drivers/idle/intel_idle.c (cmdline_table_adjust(),
get_cmdline_field(), validate_cmdline_cstate()), with kstrtouint() (lib/kstrtox.c) for the numbers
and param_set_copystring() (kernel/params.c) for the length. The messages are the kernel's
printk texts, with intel_idle's "intel_idle: " prefix (pr_fmt).

The rules, as the code has them:
- the string is at most 255 characters (a 256-byte buffer with its NUL); longer, the parameter
  is refused and the table left as it is;
- entries `name:latency:residency` separated by commas adjust the registered state of that name;
  an empty field keeps the value; up to 3 more `:` fields are ignored, a fourth is an error;
  numbers are kstrtouint(base 0): decimal, 0x hex or 0-prefixed octal, an optional '+';
- POLL and unknown names are skipped with an error message, the rest still applies;
- whitespace ends a field without ending the string (so it makes the entry malformed), and a
  trailing comma leaves an empty entry, which is malformed;
- any malformed entry, or any state of the whole resulting table (from index 1, POLL as 0/0
  before it) failing validation, makes the kernel ignore the whole string: latency > 0 and
  <= 5,000 us; residency <= 100,000 us and >= latency; latency and residency each strictly
  greater than the previous state's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.platforms import Platform

PREFIX = "intel_idle: "
MAX_CMDLINE_TABLE_LEN = 256  # the buffer, NUL included
MAX_CMDLINE_LATENCY_US = 5 * 1000
MAX_CMDLINE_RESIDENCY_US = 100 * 1000
UINT_MAX = 2**32 - 1
ULLONG_MAX = 2**64 - 1
# lib/ctype.c: _S for \t \n \v \f \r and space, and 0xA0 (Latin-1 no-break space).
_SPACE = frozenset(b"\t\n\v\f\r \xa0")


class TableStringError(ValueError):
    """The kernel would ignore the string: `message` is its printk, `log` everything it printed."""

    def __init__(self, message: str, log: list[str]) -> None:
        super().__init__(message)
        self.message = message
        self.log = log


@dataclass
class TableAdjustment:
    """What cmdline_table_adjust() did: the registered (name, latency, residency) rows after it,
    POLL first, whether it applied the string, and what it printed."""

    rows: list[tuple[str, int, int]]
    applied: bool
    log: list[str] = field(default_factory=list)
    # Why the string was not applied: the kernel's error message where it prints one (too long, too
    # many fields, validation), else its closing "Failed to adjust..." line (a malformed entry).
    error: str | None = None


def _cstr(buf: bytearray, at: int) -> bytes:
    """The C string at `at` (up to the next NUL)."""
    end = buf.index(0, at)
    return bytes(buf[at:end])


def _get_cmdline_field(buf: bytearray, args: int, sep: int) -> tuple[int, int | None]:
    """get_cmdline_field(): (the field's start, the continuation after the separator or None).
    The scan stops at NUL, whitespace or `sep`; only a separator is overwritten with NUL."""
    i = args
    while buf[i] != 0 and buf[i] not in _SPACE:
        if buf[i] == sep:
            break
        i += 1
    if buf[i] != sep:
        return args, None
    buf[i] = 0
    return args, i + 1


def _kstrtouint(s: bytes) -> int | None:
    """kstrtouint(s, 0, &v): the value, or None where the kernel returns an error."""
    if s[:1] == b"+":
        s = s[1:]
    base = 10
    if s[:1] == b"0":
        base = 16 if s[1:2].lower() == b"x" and s[2:3] != b"" and s[2:3] in b"0123456789abcdefABCDEF" else 8
    if base == 16:
        s = s[2:]
    value, n = 0, 0
    overflow = False
    for ch in s:
        c = chr(ch).lower()
        if "0" <= c <= "9":
            digit = ord(c) - ord("0")
        elif "a" <= c <= "f":
            digit = ord(c) - ord("a") + 10
        else:
            break
        if digit >= base:
            break
        value = value * base + digit
        if value > ULLONG_MAX:
            overflow = True
        n += 1
    if overflow or n == 0:
        return None
    rest = s[n:]
    if rest[:1] == b"\n":
        rest = rest[1:]
    if rest or value > UINT_MAX:
        return None
    return value


def _validate(state: tuple[str, int, int], prev: tuple[str, int, int]) -> bool:
    """validate_cmdline_cstate() (be6a150829b3)."""
    _, lat, res = state
    _, prev_lat, prev_res = prev
    if lat == 0:  # exit latency 0 can only be used for the POLL state
        return False
    if lat > MAX_CMDLINE_LATENCY_US or res > MAX_CMDLINE_RESIDENCY_US or res < lat:
        return False
    return lat > prev_lat and res > prev_res


def adjust_rows(rows: list[tuple[str, int, int]], table: str) -> TableAdjustment:
    """cmdline_table_adjust() on registered rows (POLL first, as the driver has them): the rows
    it leaves, and its messages."""
    log: list[str] = []
    raw = table.encode()
    if len(raw) >= MAX_CMDLINE_TABLE_LEN:
        # param_set_copystring() refuses it; the table stays as it is, with kernel/params.c's message.
        msg = f"intel_idle.table: string doesn't fit in {MAX_CMDLINE_TABLE_LEN - 1} chars."
        return TableAdjustment(rows=list(rows), applied=False, log=[msg], error=msg)
    buf = bytearray(raw + b"\0")
    if buf[0] == 0:
        return TableAdjustment(rows=list(rows), applied=False, log=[], error="the string is empty")
    names = [r[0].encode() for r in rows]
    new: list[list[str | int]] = [list(r) for r in rows]

    def fail(reason: str | None = None) -> TableAdjustment:
        if reason is not None:
            log.append(reason)
        closing = PREFIX + "Failed to adjust C-states with data from 'intel_idle.table'"
        log.append(closing)
        return TableAdjustment(rows=list(rows), applied=False, log=log, error=reason or closing)

    args: int | None = 0
    while args is not None:
        fields, args = _get_cmdline_field(buf, args, ord(","))
        name_at, rest = _get_cmdline_field(buf, fields, ord(":"))
        if rest is None:
            return fail()
        name = _cstr(buf, name_at)
        if name == b"POLL":
            log.append(PREFIX + "Cannot adjust POLL")
            continue
        index = next((i for i, n in enumerate(names) if n == name), None)
        if index is None:
            log.append(PREFIX + f"C-state '{name.decode(errors='replace')}' was not found")
            continue
        state = new[index]
        val_at, rest2 = _get_cmdline_field(buf, rest, ord(":"))
        if rest2 is None:
            return fail()
        val = _cstr(buf, val_at)
        if val:
            v = _kstrtouint(val)
            if v is None:
                return fail()
            state[1] = v
        val_at, more = _get_cmdline_field(buf, rest2, ord(":"))
        val = _cstr(buf, val_at)
        if val:
            v = _kstrtouint(val)
            if v is None:
                return fail()
            state[2] = v
        # Up to 3 more fields, ignored (room for future extensions of the format).
        for _ in range(3):
            if more is None:
                break
            _, more = _get_cmdline_field(buf, more, ord(":"))
            if more is None:
                break
        if more is not None:
            return fail(PREFIX + f"Too many fields for C-state '{state[0]}'")
        log.append(
            PREFIX + f"C-state from cmdline: name={state[0]}, latency={state[1]}, residency={state[2]}"
        )
    adjusted = [(str(r[0]), int(r[1]), int(r[2])) for r in new]  # names and figures, as registered
    for i in range(1, len(adjusted)):
        if not _validate(adjusted[i], adjusted[i - 1]):
            return fail(PREFIX + f"C-state '{adjusted[i][0]}' validation failed")
    log.append(PREFIX + "Adjusted C-states with data from 'intel_idle.table'")
    return TableAdjustment(rows=adjusted, applied=True, log=log)


def _registered_rows(platform: Platform) -> list[tuple[str, int, int]]:
    """The rows the driver registers (UNUSABLE states are skipped), POLL as 0/0."""
    rows = []
    for s in platform.states:
        if "CPUIDLE_FLAG_UNUSABLE" in s.flags:
            continue
        if s.exit_latency_us != int(s.exit_latency_us) or s.target_residency_us != int(s.target_residency_us):
            raise ValueError(f"{platform.name}: {s.name}'s figures are not whole microseconds")
        rows.append((s.name, int(s.exit_latency_us), int(s.target_residency_us)))
    return rows


def apply_table_string(platform: Platform, table: str, *, name: str | None = None) -> Platform:
    """`platform` as intel_idle registers it with `intel_idle.table=<table>`; raises
    TableStringError with the kernel's message where the kernel would ignore the string (or
    where it changes nothing because it is empty or too long). Each adjusted state keeps its
    model terms (power, entry cost); exit distributions the new worst case contradicts are
    dropped, so the default median applies."""
    if platform.driver != "intel_idle":
        raise TableStringError(f"{platform.name} is not an intel_idle table ({platform.driver})", [])
    result = adjust_rows(_registered_rows(platform), table)
    if not result.applied:
        raise TableStringError(result.error or "not applied", result.log)
    figures = {n: (lat, res) for n, lat, res in result.rows}
    states = []
    for s in platform.states:
        if s.name in figures and figures[s.name] != (s.exit_latency_us, s.target_residency_us):
            lat, res = figures[s.name]
            update: dict[str, object] = {
                "exit_latency_us": float(lat),
                "target_residency_us": float(res),
                "source": f"intel_idle.table={table} on {platform.name}'s {s.name} "
                f"({s.exit_latency_us:g}/{s.target_residency_us:g} us)",
            }
            for key in ("exit_latency_median_us", "hw_exit_latency_us", "core_exit_latency_us"):
                p = getattr(s, key)
                if p is not None and p.value > lat:
                    update[key] = None
            s = s.model_copy(update=update)
            if s.core_exit_latency_us is None:
                s = s.model_copy(update={"core_exit_latency_median_us": None})
        states.append(s)
    return Platform.model_validate(
        {
            **platform.model_dump(),
            "name": name or f"{platform.name}+table",
            "title": f"{platform.title or platform.name} with intel_idle.table={table}",
            "states": [st.model_dump() for st in states],
            "notes": [
                *platform.notes,
                f"Adjusted by intel_idle.table={table} (validated as the kernel does).",
            ],
        }
    )


@dataclass
class TableString:
    """A platform's table as an `intel_idle.table=` string, or why no valid one exists."""

    string: str | None
    error: str | None


def table_string(platform: Platform) -> TableString:
    """The string that gives the platform's registered table, checked by the kernel's own rules:
    tables whose rows tie or shrink (skl C7s/C8 800 us, snb C6/C7 345 us) have none, because the
    validation covers the whole resulting table."""
    if platform.driver != "intel_idle":
        return TableString(
            None, f"not intel_idle: {platform.name}'s table is registered by {platform.driver}"
        )
    try:
        rows = _registered_rows(platform)
    except ValueError as exc:
        return TableString(None, str(exc))
    string = ",".join(f"{n}:{lat}:{res}" for n, lat, res in rows[1:])
    result = adjust_rows(rows, string)
    if result.applied:
        return TableString(string, None)
    why = result.error or "not applied"
    bad = why.split("'")[1] if "validation failed" in why else None
    detail = ""
    if bad is not None:
        i = [r[0] for r in rows].index(bad)
        (pn, pl, pr), (_, lat, res) = rows[i - 1], rows[i]
        detail = (
            f": {bad} is {lat}/{res} us after {pn}'s {pl}/{pr} us, and each latency and residency must be "
            f"strictly greater than the previous state's (and residency >= latency, latency 1..5000 us)"
        )
    return TableString(
        None, f"no valid intel_idle.table string: the kernel would refuse its own table ({why}){detail}"
    )
