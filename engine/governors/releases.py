"""Which kernel each governor follows: mainline tags, commits between them, stable point releases.

`governor.kernel` names a git object: a mainline tag (`v6.6`, `v6.12`, `v6.18`, `v6.19`; `v7.0-rc1`
and `v7.0-rc2` as prereleases), a stable point release (`v6.12.60`: its tag plus the backports
listed for it), or a commit (12 hex digits, or any unambiguous prefix of at least 7). Each name
resolves to the behaviour codes of `engine.governors.menu`, `engine.governors.teo` and the core
(engine.governors.cpuidle), packed into the one integer the compiled loop dispatches on.

The mainline history below is menu.c's, teo.c's and the core's, in merge order, each commit with
what it changes (sources: the commits' patches on linux-pm, quoted in the tests' transcriptions).
A commit names the tree as it stood there: every step up to and including it, so menu and teo
both accept every name, and a sweep over `governor.kernel` walks one governor's commits. ladder
and haltpoll did not change in behaviour between the tags modelled: for them a name resolves to
that one transcription with the core's behaviour of that tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.governors import menu as M
from engine.governors import teo as T
from engine.governors.common import (
    N_V,
    V_ONE_STATE,
    V_POLL_RULE,
    V_REJECTED,
    V_STOPPED_TICK,
    V_TEO_DECAY,
    V_TEO_HIT,
    V_TEO_KEEP_TICK,
    V_TEO_LINE,
    V_TEO_LOOKUP,
    V_TEO_LOW_LATENCY,
    V_TEO_RECENT,
    V_TEO_SHALLOWER,
    V_TEO_STATE0,
    V_TEO_TICK_INTERCEPTS,
    V_TEO_TICK_METRIC,
    V_TEO_TICK_WAKEUP,
    V_TEO_TOTAL,
    V_TYPICAL,
    pack_variant,
)
from engine.governors.cpuidle import ONE_STATE_CORE_SKIPS, ONE_STATE_GOVERNOR


@dataclass(frozen=True)
class Step:
    """One mainline commit (or a tag's own change where no commit id is recorded)."""

    commit: str | None  # 12 hex digits; None: known only by the release that has it
    subject: str
    release: str  # the first mainline release that has it
    changes: dict[int, int] = field(default_factory=dict)  # V_* field -> code
    note: str = ""
    file: str = "menu"  # the governor whose file it changes, or "cpuidle" (the core)


@dataclass(frozen=True)
class Backport:
    upstream: str  # the mainline commit (12 hex)
    stable_commit: str | None  # the stable tree's commit, where recorded
    source: str


@dataclass(frozen=True)
class StableRelease:
    base: str  # the mainline tag
    backports: tuple[Backport, ...]


# menu.c, teo.c and cpuidle.c at v6.6 (menu: 5484e31bbbff's timer skip included, 85975daeaa4d
# not yet; teo: the NR_RECENT ring, tick_hits, the sleep length skipped for shallow candidates).
V6_6 = {
    V_TYPICAL: M.TYPICAL_UPSIDE,
    V_POLL_RULE: M.POLL_RULE_LATENCY_CLAMP,
    V_STOPPED_TICK: M.STOPPED_TICK_SHORT_SKIPS_TIMER,
    V_REJECTED: M.REJECTED_NOTHING,
    V_ONE_STATE: ONE_STATE_GOVERNOR,
    V_TEO_LINE: T.TEO_LINE_V6_6,
    V_TEO_RECENT: T.RECENT_KEPT,
    V_TEO_STATE0: T.STATE0_SKIPS_SLEEP_LENGTH,
    V_TEO_SHALLOWER: T.SHALLOWER_IF_STATE_OK,
    V_TEO_DECAY: T.DECAY_SHIFT_ONLY,
    V_TEO_TICK_WAKEUP: T.TICK_WAKEUP_SAFETY_NET,
    V_TEO_TICK_INTERCEPTS: T.TICK_INTERCEPTS_ABOVE_TICK,
    V_TEO_LOOKUP: T.LOOKUP_FIRST_SUITABLE,
    V_TEO_KEEP_TICK: T.KEEP_TICK_5_8,
    V_TEO_HIT: T.HIT_SAME_BIN,
    V_TEO_TICK_METRIC: T.TICK_METRIC_HITS,
    V_TEO_TOTAL: T.TOTAL_FROM_BINS,
    V_TEO_LOW_LATENCY: T.LOW_LATENCY_READS_SLEEP_LENGTH,
}
MENU_FIELDS = (V_TYPICAL, V_POLL_RULE, V_STOPPED_TICK, V_REJECTED)
TEO_FIELDS = (
    V_TEO_LINE, V_TEO_RECENT, V_TEO_STATE0, V_TEO_SHALLOWER, V_TEO_DECAY, V_TEO_TICK_WAKEUP,
    V_TEO_TICK_INTERCEPTS, V_TEO_LOOKUP, V_TEO_KEEP_TICK, V_TEO_HIT, V_TEO_TICK_METRIC, V_TEO_TOTAL,
    V_TEO_LOW_LATENCY,
)
CORE_FIELDS = (V_ONE_STATE,)

MAINLINE: tuple[Step, ...] = (
    Step("449914398083", "cpuidle: teo: Remove recent intercepts metric", "v6.12",
         {V_TEO_RECENT: T.RECENT_REMOVED}, file="teo",
         note="after the util-awareness revert of the same series, which changes nothing here "
         "(no utilisation in the model)"),
    Step("4b20b07ce72f", "cpuidle: teo: Don't count non-existent intercepts", "v6.12",
         {V_TEO_STATE0: T.STATE0_READS_SLEEP_LENGTH}, file="teo"),
    Step("38f83090f515", "cpuidle: menu: Remove iowait influence", "v6.13",
         note="no iowaiters in the model: nothing changes here"),
    # v6.14: Rafael J. Wysocki's January 2025 series ("cpuidle: teo: Cleanups and very frequent
    # wakeups handling update", <6116275.lOV4Wx5bFT@rjwysocki.net>, and the patch posted on top
    # of it), merged for v6.14-rc1 in this order. A commit that changes nothing teo computes has
    # no codes: it runs its predecessor's code.
    Step("425b75364576", "cpuidle: teo: Rearrange idle state lookup code", "v6.14", file="teo",
         note="no change in what teo computes: the lookup loop's branches reordered"),
    Step("92ce5c07b7a1", "cpuidle: teo: Reorder candidate state index checks", "v6.14",
         {V_TEO_STATE0: T.STATE0_CLAMP_FIRST}, file="teo"),
    Step("ea185406d1ed", "cpuidle: teo: Combine candidate state index checks against 0", "v6.14",
         file="teo", note="no change in what teo computes: two adjacent checks combined"),
    Step("b9a6af26bd83", "cpuidle: teo: Drop local variable prev_intercept_idx", "v6.14", file="teo",
         note="no change in what teo computes: the variable is never 0 where it is tested"),
    Step("e24f8a55de50", "cpuidle: teo: Clarify two code comments", "v6.14", file="teo",
         note="comments only"),
    Step("d619b5cc6780", "cpuidle: teo: Simplify counting events used for tick management", "v6.14",
         {V_TEO_TICK_METRIC: T.TICK_METRIC_INTERCEPTS}, file="teo"),
    Step("13ed5c4a6d9c", "cpuidle: teo: Skip getting the sleep length if wakeups are very frequent",
         "v6.14", {V_TEO_LINE: T.TEO_LINE_V6_14}, file="teo"),
    Step("ddcfa7964677", "cpuidle: teo: Simplify handling of total events count", "v6.14",
         {V_TEO_TOTAL: T.TOTAL_DECAYS}, file="teo",
         note="posted as having no intended effect; the decayed total differs from the sum of the "
         "decayed bins by rounding, which some decisions see"),
    Step("65e18e654475", "cpuidle: teo: Replace time_span_ns with a flag", "v6.14", file="teo",
         note="no change in what teo computes: time_span_ns < 0 already meant a safety net"),
    Step("16c8d7586c19", "cpuidle: teo: Skip sleep length computation for low latency constraints",
         "v6.14", {V_TEO_LOW_LATENCY: T.LOW_LATENCY_SKIPS}, file="teo"),
    Step("85975daeaa4d", "cpuidle: menu: Avoid discarding useful information", "v6.15",
         {V_TYPICAL: M.TYPICAL_BOTH_ENDS_KEEP_MAX},
         note="the last of the February 2025 series (one-pass variance, outliers on both ends)"),
    Step("fa3fa55de0d6", "cpuidle: governors: menu: Avoid using invalid recent intervals data",
         "v6.17-rc2", {V_REJECTED: M.REJECTED_PUSHES_UINT_MAX}),
    Step("779b1a1cb13a", "cpuidle: governors: menu: Avoid selecting states with too much latency",
         "v6.17-rc3", {V_POLL_RULE: M.POLL_RULE_LATENCY_FIRST}),
    Step("10fad4012234", 'Revert "cpuidle: menu: Avoid discarding useful information"', "v6.18-rc",
         {V_TYPICAL: M.TYPICAL_BOTH_ENDS}),
    Step("db86f55bf81a", "cpuidle: governors: menu: Select polling state in some more cases",
         "v6.18-rc", {V_POLL_RULE: M.POLL_RULE_EXIT_IN_PREDICTION}),
    Step("07d815701274", "cpuidle: menu: Use residency threshold in polling state override decisions",
         "v6.19", {V_POLL_RULE: M.POLL_RULE_RESIDENCY_THRESHOLD}),
    Step("a03b2011808a", "cpuidle: governors: teo: Drop misguided target residency check", "v6.19",
         {V_TEO_SHALLOWER: T.SHALLOWER_ALWAYS}, file="teo"),
    Step("b54df61c7428", "cpuidle: governors: teo: Decay metrics below DECAY_SHIFT threshold", "v6.19",
         {V_TEO_DECAY: T.DECAY_TO_ZERO, V_TEO_TOTAL: T.TOTAL_FROM_BINS}, file="teo"),
    Step("083654ded547", "cpuidle: governors: teo: Rework the handling of tick wakeups", "v6.19",
         {V_TEO_TICK_WAKEUP: T.TICK_WAKEUP_DOMINANT_HITS}, file="teo"),
    Step("50db438231dc", "cpuidle: governors: teo: Fix tick_intercepts handling in teo_update()", "v6.19",
         {V_TEO_TICK_INTERCEPTS: T.TICK_INTERCEPTS_WITHIN_TICK}, file="teo"),
    Step("d834e68a0e8b", "cpuidle: governors: teo: Simplify intercepts-based state lookup", "v6.19",
         {V_TEO_LOOKUP: T.LOOKUP_MIN_IDX}, file="teo"),
    Step("80606f4eb8d7", "cpuidle: governors: menu: Always check timers with tick stopped", "v7.0-rc1",
         {V_STOPPED_TICK: M.STOPPED_TICK_READS_TIMER}),
    Step("4bd2221f231d", "cpuidle: governors: teo: Avoid selecting states with zero-size bins", "v7.0-rc1",
         {V_TEO_LOOKUP: T.LOOKUP_SKIP_EQUAL_RESIDENCY}, file="teo"),
    Step("60836533b4c7", "cpuidle: governors: teo: Avoid fake intercepts produced by tick", "v7.0-rc1",
         {V_TEO_TICK_WAKEUP: T.TICK_WAKEUP_NO_FAKE_INTERCEPTS}, file="teo"),
    Step("475ca3470b37", "cpuidle: governors: teo: Refine tick_intercepts vs total events check",
         "v7.0-rc1", {V_TEO_KEEP_TICK: T.KEEP_TICK_2_3}, file="teo"),
    Step("f36de72673ad", "cpuidle: governors: teo: Adjust the classification of wakeup events",
         "v7.0-rc1", {V_TEO_HIT: T.HIT_AFTER_TIMER}, file="teo"),
    Step("a971f984b845", "cpuidle: governors: teo: Refine intercepts-based idle state lookup",
         "v7.0-rc1", {V_TEO_LOOKUP: T.LOOKUP_MAX_INTERCEPTS}, file="teo"),
    Step(None, "cpuidle: Skip governor when only one idle state is available", "v7.0-rc2",
         {V_ONE_STATE: ONE_STATE_CORE_SKIPS}, file="cpuidle",
         note="teo's own one-state handling, removed in the same series, is never reached after it"),
)

# Released tags first, then prereleases; each is the tree after every step of an earlier release.
RELEASED_TAGS = ("v6.6", "v6.12", "v6.13", "v6.14", "v6.15", "v6.17", "v6.18", "v6.19")
PRERELEASE_TAGS = ("v7.0-rc1", "v7.0-rc2")
_ORDER = ("v6.6", "v6.12", "v6.13", "v6.14", "v6.15", "v6.17-rc2", "v6.17-rc3", "v6.17", "v6.18-rc",
          "v6.18", "v6.19", "v7.0-rc1", "v7.0-rc2")

# A commit posted with 779b1a1cb13a ("A fix, a corner case adjustment and a cleanup", August 2025)
# whose effect is selectable on top of that tree. The linux-pm archive shows it not taken further
# (February 2026: "too risky"), and mainline's menu.c as 80606f4eb8d7 quotes it has no such check.
SIDE_COMMITS = {
    "7bcc8bbeca35": (
        "779b1a1cb13a",
        Step("7bcc8bbeca35", "cpuidle: governors: menu: Special-case nohz_full CPUs", "(not in a release)",
             {V_STOPPED_TICK: M.STOPPED_TICK_NOHZ_FULL_KEPT}),
    ),
}

STABLE: dict[str, StableRelease] = {
    "v6.12.60": StableRelease("v6.12", (
        Backport("779b1a1cb13a", None,
                 "stable to 4.17+; that 6.12.60 has it is inferred from its date (estimate)"),
        Backport("db86f55bf81a", None,
                 "stable to 6.6.y, 6.12.y, 6.17.y; that 6.12.60 has it is inferred from "
                 "its date (estimate)"),
        Backport("38f83090f515", "b39b62075ab4", "linux-pm, December 2025: vdbench regression on v6.12.60 "
                 "against v6.12.48 bisected to b39b62075ab4"),
    )),
}

KERNEL_GOVERNORS = ("menu", "teo", "ladder", "haltpoll")
DEFAULT_KERNEL = "v6.19"  # the newest released tag modelled


@dataclass(frozen=True)
class Resolved:
    name: str  # the canonical name: a tag, a stable release, or a 12-hex commit
    variant: int
    description: str


def _codes_after(steps: list[Step]) -> dict[int, int]:
    codes = dict(V6_6)
    for s in steps:
        codes.update(s.changes)
    return codes


def _steps_through_release(tag: str) -> list[Step]:
    k = _ORDER.index(tag)
    return [s for s in MAINLINE if _ORDER.index(s.release) <= k]


def _steps_through_commit(commit: str) -> list[Step]:
    out = []
    for s in MAINLINE:
        out.append(s)
        if s.commit == commit:
            return out
    raise KeyError(commit)


def _tree_steps(canon: str) -> list[Step]:
    """The steps the tree named by `canon` (a canonical name) has, in history order."""
    if canon in RELEASED_TAGS or canon in PRERELEASE_TAGS:
        return _steps_through_release(canon)
    if canon in STABLE:
        rel = STABLE[canon]
        ups = [b.upstream for b in rel.backports]
        return _steps_through_release(rel.base) + [s for s in MAINLINE if s.commit in ups]
    if canon in SIDE_COMMITS:
        base, step = SIDE_COMMITS[canon]
        return _steps_through_commit(base) + [step]
    return _steps_through_commit(canon)


def history_position(governor: str, name: str | None) -> float:
    """Where `name` sits in the merged history above (ValueError: unknown): a commit at its index,
    a tag just after its last commit, a stable release or a side commit just after its base."""
    canon = resolve(governor, name).name
    if not canon:
        return -1.0
    if canon in RELEASED_TAGS or canon in PRERELEASE_TAGS:
        return len(_steps_through_release(canon)) - 0.5
    if canon in STABLE:
        return history_position(governor, STABLE[canon].base) + 0.25
    if canon in SIDE_COMMITS:
        return history_position(governor, SIDE_COMMITS[canon][0]) + 0.25
    return float(len(_steps_through_commit(canon)) - 1)


def steps_between(governor: str, before: str | None, after: str | None) -> tuple[list[Step], list[Step]]:
    """The governor's own and the core's steps that the tree `after` has and `before` has not, and
    those `before` has and `after` has not (a stable release against a later tag, an older tree
    after a newer one), each in history order (ValueError: an unknown name)."""
    a, b = resolve(governor, before).name, resolve(governor, after).name
    if not a or not b or governor not in KERNEL_GOVERNORS:
        return [], []
    ours = (governor, "cpuidle")
    old, new = _tree_steps(a), _tree_steps(b)
    added = [s for s in new if s not in old and s.file in ours]
    return added, [s for s in old if s not in new and s.file in ours]


def known_names(governor: str) -> list[str]:
    """Every name `governor.kernel` accepts for this governor, tags first."""
    if governor in ("ladder", "haltpoll"):
        return [*RELEASED_TAGS, *PRERELEASE_TAGS]
    if governor not in ("menu", "teo"):
        return []
    commits = [s.commit for s in MAINLINE if s.commit] + list(SIDE_COMMITS)
    return [*RELEASED_TAGS, *PRERELEASE_TAGS, *STABLE, *commits]


def _canonical(governor: str, name: str) -> str:
    names = known_names(governor)
    if name in names:
        return name
    low = name.lower()
    if len(low) >= 7 and all(ch in "0123456789abcdef" for ch in low):
        hits = [n for n in names if not n.startswith("v") and (n.startswith(low) or low.startswith(n))]
        if len(hits) == 1:
            return hits[0]
    raise ValueError(name)


def default_kernel(governor: str) -> str | None:
    return DEFAULT_KERNEL if governor in KERNEL_GOVERNORS else None


def resolve(governor: str, name: str | None) -> Resolved:
    """The behaviour codes and the description of `name` for `governor` (ValueError: unknown)."""
    if name is None:
        name = default_kernel(governor)
    if governor not in KERNEL_GOVERNORS:
        if name is not None:
            raise ValueError(name)
        what = "knows the next wake-up" if governor == "oracle" else "one state only"
        return Resolved("", pack_variant((0,) * N_V), f"not a kernel governor: {what}")
    assert name is not None
    canon = _canonical(governor, name)
    steps = _tree_steps(canon)
    if canon in RELEASED_TAGS or canon in PRERELEASE_TAGS:
        kind = "mainline tag" if canon in RELEASED_TAGS else "mainline prerelease"
        what = f"{governor}.c at {canon} ({kind})"
    elif canon in STABLE:
        rel = STABLE[canon]
        listed = ", ".join(b.upstream + (f" (stable {b.stable_commit})" if b.stable_commit else "")
                           for b in rel.backports)
        what = f"{governor}.c at {canon}: {rel.base} with {listed} backported"
        if governor == "teo":
            what = f"teo.c at {canon}: {rel.base}'s (no teo backport listed for it)"
    elif canon in SIDE_COMMITS:
        base, step = SIDE_COMMITS[canon]
        what = f"{governor}.c at {canon} ({step.subject}), on {base}"
    else:
        step = steps[-1]
        what = f"{governor}.c at {canon} ({step.subject}), mainline {step.release}"
        if step.file not in (governor, "cpuidle"):
            what = f"{governor}.c as the tree has it at {canon} ({step.subject}, {step.release})"
    # Each governor reads its own fields and the core's; the others stay at their v6.6 codes, so
    # two names give the same variant exactly when this governor behaves the same at both.
    own = {"menu": MENU_FIELDS, "teo": TEO_FIELDS}.get(governor, ())
    after = _codes_after(steps)
    codes = dict(V6_6)
    for k in (*own, *CORE_FIELDS):
        codes[k] = after[k]
    return Resolved(canon, pack_variant(tuple(codes[k] for k in range(N_V))), what)


def mainline_walk(governor: str, start: str, end: str) -> list[str]:
    """The names from tag `start` to tag `end`, commit by commit (the governor's own and the
    core's), for a sweep over `governor.kernel`."""
    if governor not in ("menu", "teo"):
        return [n for n in (start, end) if n in known_names(governor)]
    k0, k1 = _ORDER.index(start), _ORDER.index(end)
    out = [start]
    for s in MAINLINE:
        k = _ORDER.index(s.release)
        if k0 < k <= k1 and s.file in (governor, "cpuidle"):
            # A step known only by its release (the core's v7.0-rc2 change) is walked as that tag.
            name = s.commit or (s.release if s.release in (*RELEASED_TAGS, *PRERELEASE_TAGS) else None)
            if name and name not in out:
                out.append(name)
    if end not in out:
        out.append(end)
    return out
