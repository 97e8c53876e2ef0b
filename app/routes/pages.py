"""HTML pages of the dashboard, their downloads, and the locally served plotly.js.

Every page gets its data from the same loader as its JSON twin in `app.views` (`/runs/{id}` and
`/api/runs/{id}` both call `load_run_view`), then adds the chart figures from `app.charts`.
No inline scripts: chart data travels in `<script type="application/json">` blocks, escaped so
user text cannot close them, and static/js/*.js modules draw it. `install(app)` adds the
Content-Security-Policy header to every HTML response and caching/compression to /static.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib
import io
import logging
import math
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, get_args

import orjson
import plotly
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from fastapi.templating import Jinja2Templates
from jinja2 import Undefined, pass_context
from markupsafe import Markup
from starlette.datastructures import MutableHeaders
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import charts, store
from app.cache import FINISHED, Answer, Entry, ReadCache, etag_of, register, stamp_of
from app.config import REPO_ROOT
from app.db import session_scope
from app.errors import NotFound
from app.models import RenderedPage
from app.routes import base_url_of
from engine import ENGINE_VERSION
from engine.config import GovernorName, Mechanism, SimConfig
from engine.governors import GOVERNOR_KERNEL

router = APIRouter(include_in_schema=False)
log = logging.getLogger("idlelab")

TEMPLATES_DIR = REPO_ROOT / "templates"
STATIC_DIR = REPO_ROOT / "static"

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'"
)
# Versioned URLs (the plotly bundle, `?v=<hash>` static links) never change content.
CACHE_IMMUTABLE = "public, max-age=31536000, immutable"
# Unversioned static files (JS modules imported by path) are revalidated with their ETag.
CACHE_REVALIDATE = "no-cache"


# --- templates -------------------------------------------------------------------------------------


def json_script(value: Any) -> Markup:
    """JSON for a `<script type="application/json">` block: `<`, `>` and `&` escaped as \\uXXXX,
    so a run title such as `</script><script>...` stays data."""
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


@cache
def _file_hash(path: str) -> str:
    return hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:12]


def static_url(path: str) -> str:
    """`/static/<path>?v=<content hash>`: cacheable forever, changes when the file does."""
    try:
        return f"/static/{path}?v={_file_hash(path)}"
    except OSError:
        return f"/static/{path}"


def fmt_num(value: Any, digits: int = 3) -> str:
    """A number for tables: integers with thousands separators, others to `digits` significant."""
    if value is None or isinstance(value, Undefined):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) >= 10**digits:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def fmt_us(ns: float | None) -> str:
    if ns is None or isinstance(ns, Undefined):
        return "–"
    return fmt_num(ns / 1000.0) + " us"


def fmt_time(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return "" if value is None or isinstance(value, Undefined) else str(value)


class PageTemplates(Jinja2Templates):
    """Jinja2 templates whose HTML responses carry the CSP header even without `install(app)`
    (error pages rendered by `app.errors` included)."""

    def TemplateResponse(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 - Starlette's name
        response = super().TemplateResponse(*args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response


@pass_context
def url_path_for(context: Mapping[str, Any], name: str, /, **path_params: Any) -> str:
    """Like Starlette's `url_for` in templates, but the path only (`/runs/abc`): links keep working
    behind a proxy that rewrites the host, and shared HTML carries no internal host name."""
    request: Request = context["request"]
    return str(request.app.url_path_for(name, **path_params))


def make_templates() -> PageTemplates:
    templates = PageTemplates(directory=str(TEMPLATES_DIR))
    env = templates.env
    env.autoescape = True
    env.globals.update(
        url_for=url_path_for,
        static_url=static_url,
        plotly_js_url=lambda: f"/vendor/plotly-{plotly_js_version()}.min.js",
        state_color=charts.state_color,
        source_names=charts.SOURCE_NAMES,
        mechanism_names=charts.MECHANISM_NAMES,
        governor_kernel=GOVERNOR_KERNEL,
    )
    env.filters.update(json_script=json_script, num=fmt_num, us=fmt_us, time=fmt_time)
    return templates


templates = make_templates()


def render(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> Any:
    return templates.TemplateResponse(request, name, context, status_code=status_code)


# --- plotly.js, served from the installed plotly package -------------------------------------------

PLOTLY_JS_PATH = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@cache
def plotly_js_version() -> str:
    """plotly.js's own version (not the Python package's), read from the bundle's banner."""
    from plotly.offline import get_plotlyjs_version

    return get_plotlyjs_version()


@cache
def _plotly_js_bytes() -> tuple[bytes, bytes, str]:
    """The bundle, its gzip (compressed once per process) and its ETag."""
    raw = PLOTLY_JS_PATH.read_bytes()
    return raw, gzip.compress(raw, compresslevel=9, mtime=0), hashlib.sha256(raw).hexdigest()[:16]


@router.api_route(f"/vendor/plotly-{plotly_js_version()}.min.js", methods=["GET", "HEAD"], name="plotly_js")
def plotly_js(request: Request) -> Response:
    raw, gz, etag = _plotly_js_bytes()
    headers = {"Cache-Control": CACHE_IMMUTABLE, "ETag": f'"{etag}"', "Vary": "Accept-Encoding"}
    if request.headers.get("if-none-match") == f'"{etag}"':
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(gz, media_type="text/javascript", headers=headers)
    return Response(raw, media_type="text/javascript", headers=headers)


# --- middleware ------------------------------------------------------------------------------------


class DashboardMiddleware:
    """CSP (and nosniff) on every HTML response; gzip and Cache-Control for /static files."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=512)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")
        versioned = static and b"v=" in scope.get("query_string", b"")

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith("text/html"):
                    if "content-security-policy" not in headers:
                        headers["Content-Security-Policy"] = CSP
                    if "x-content-type-options" not in headers:
                        headers["X-Content-Type-Options"] = "nosniff"
                if static and message["status"] in (200, 304):
                    headers["Cache-Control"] = CACHE_IMMUTABLE if versioned else CACHE_REVALIDATE
            await send(message)

        await (self.gzip if static else self.app)(scope, receive, send_wrapper)


def install(app: Any) -> None:
    """Call from `create_app()`: adds `DashboardMiddleware`, the page templates (for error.html),
    the cached run pages and their rendering when a run finishes."""
    app.add_middleware(DashboardMiddleware)
    register(app, "/runs/(?P<run_id>[^/]+)", cached_run_page)
    app.state.run_finished_hooks.append(prerender_run_page)
    if getattr(app.state, "templates", None) is None:
        app.state.templates = templates


# --- loaders (from app.views, the pages' JSON twins) -----------------------------------------------


def _views() -> Any:
    return importlib.import_module("app.views")


def _plain(obj: Any) -> Any:
    """A loader's answer as plain JSON-ready data (pydantic models dumped, stored bytes parsed)."""
    if obj is None:
        return None
    if hasattr(obj, "to_json"):  # app.views' RunView/RunListView: exactly the API's JSON body
        return orjson.loads(obj.to_json())
    if hasattr(obj, "model_dump"):
        return _plain(obj.model_dump(mode="json"))
    if isinstance(obj, bytes | bytearray | memoryview):
        return orjson.loads(bytes(obj))
    if isinstance(obj, orjson.Fragment):
        return orjson.loads(obj.contents)
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


def load_run(request: Request, run_id: str) -> dict[str, Any]:
    """The run as `/api/runs/{id}` answers it; `NotFound` (a 404 page) for an unknown id."""
    # The same base URL as the API passes, so /runs/{id}.json equals GET /api/runs/{id}.
    run = _plain(_call_view("load_run_view", request, run_id, base_url=base_url_of(request)))
    if not run:
        raise NotFound(f"run {run_id!r} not found")
    return run


def _call_view(name: str, request: Request, *args: Any, **kwargs: Any) -> Any:
    loader: Callable[..., Any] = getattr(_views(), name)
    with session_scope(request.app.state.sessionmaker) as session:
        return loader(session, *args, **kwargs)


# --- pages -----------------------------------------------------------------------------------------


def _scenario_item(name: str | None, obj: Any) -> dict[str, Any]:
    data = _plain(obj) if isinstance(obj, Mapping) or hasattr(obj, "model_dump") else {}
    keys = ("name", "title", "description", "url")
    out = {k: data.get(k) for k in keys} if isinstance(data, Mapping) else {}
    for k in keys:
        if not out.get(k):
            out[k] = getattr(obj, k, None)
    out["name"] = out.get("name") or name
    return out


def _scenarios() -> list[dict[str, Any]]:
    """Built-in scenarios: from the app's scenarios module when it exposes them (another author's),
    else from `engine.scenarios`; none if neither is importable (the home page never breaks)."""
    candidates = [
        ("app.routes.scenarios", ("list_scenarios", "scenarios_view", "SCENARIOS")),
        ("app.scenarios", ("list_scenarios", "scenarios_view", "SCENARIOS")),
        ("engine.scenarios", ("SCENARIOS",)),
    ]
    for module_name, attrs in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for attr in attrs:
            found = getattr(module, attr, None)
            if found is None:
                continue
            try:
                items = found() if callable(found) else found
                if hasattr(items, "model_dump"):
                    items = _plain(items)
                if isinstance(items, Mapping) and "scenarios" in items:
                    items = items["scenarios"]
                if isinstance(items, Mapping):
                    return [_scenario_item(k, v) for k, v in items.items()]
                return [_scenario_item(None, v) for v in items]
            except Exception:  # noqa: BLE001 - an optional module must not break the home page
                return []
    return []


def _runs_list(request: Request, **params: Any) -> dict[str, Any]:
    listing = _plain(_call_view("list_runs_view", request, **params))
    if isinstance(listing, list):
        listing = {"runs": listing}
    listing.setdefault("runs", listing.get("items", []))
    return listing


def _platforms(request: Request) -> list[dict[str, Any]]:
    items = _plain(_call_view("platforms_view", request))
    if isinstance(items, Mapping):
        items = items.get("platforms", items.get("items", list(items.values())))
    return list(items)


@router.get("/", name="home")
def home(request: Request) -> Any:
    return render(
        request,
        "home.html",
        {
            "platforms": _platforms(request),
            "scenarios": _scenarios(),
            "recent": _runs_list(request, limit=10)["runs"],
        },
    )


def _load_platform(request: Request, name: str) -> dict[str, Any]:
    platform = _plain(_call_view("platform_view", request, name))
    if not platform:
        raise NotFound(f"platform {name!r} not found")
    return platform


@router.get("/platforms/{name}", name="platform_page")
def platform_page(request: Request, name: str, vs: str | None = None) -> Any:
    view = _load_platform(request, name)
    platform = _table(view)
    other = _table(_load_platform(request, vs)) if vs and vs != name else None
    shown = [platform, *([other] if other else [])]
    return render(
        request,
        "platform.html",
        {
            "view": view,
            "platform": platform,
            "other": other,
            "platforms": _platforms(request),
            "figure": charts.platform_figure([_table(p) for p in shown]),
            "cost_labels": COST_LABELS,
        },
    )


def _table(platform: Mapping[str, Any]) -> Mapping[str, Any]:
    """The C-state table of a `platform_view` answer (the table itself or `{"table": ...}`)."""
    return platform.get("table", platform) if "states" not in platform else platform


COST_LABELS: dict[str, tuple[str, str]] = {
    "tsc_mhz": ("TSC frequency", "MHz"),
    "line_same_socket_ns": ("Cache-line transfer, same socket", "ns"),
    "line_other_socket_ns": ("Cache-line transfer, other socket", "ns"),
    "call_setup_cycles": ("smp_call_function_single setup", "cycles"),
    "apic_send_same_socket_cycles": ("APIC IPI send, same socket", "cycles"),
    "apic_send_other_socket_cycles": ("APIC IPI send, other socket", "cycles"),
    "ipi_delivery_ns": ("IPI delivery to the target", "ns"),
    "irq_entry_ns": ("Interrupt entry to the handler", "ns"),
    "exit_housekeeping_ns": ("cpuidle exit housekeeping (h)", "ns"),
    "entry_housekeeping_ns": ("Idle entry and governor select", "ns"),
    "irq_direct_saving_ns": ("IRQ_ENABLE direct-interrupt saving", "ns"),
    "sched_switch_ns": ("Idle exit and switch to the woken task", "ns"),
}


# --- the new-run form ------------------------------------------------------------------------------


@dataclass
class FormField:
    path: str
    label: str
    type: str  # see static/js/run_new.js
    unit: str = ""
    options: Sequence[tuple[str, str]] = ()
    hint: str = ""
    cost: str = ""  # the platform cost this field overrides (the input hint shows its value)
    width: str = ""


@dataclass
class FormSection:
    title: str
    fields: list[FormField] = field(default_factory=list)
    note: str = ""
    id: str = ""


def _describe(path: str) -> str:
    """The pydantic description of a SimConfig field, for the form's hint text."""
    model: Any = SimConfig
    info = None
    for part in path.split("."):
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return ""
        info = fields[part]
        ann = info.annotation
        model = next((a for a in (ann, *get_args(ann)) if hasattr(a, "model_fields")), None)
    return (info.description or "") if info else ""


def _limits(path: str) -> str:
    model: Any = SimConfig
    info = None
    for part in path.split("."):
        info = getattr(model, "model_fields", {}).get(part)
        if info is None:
            return ""
        model = next(
            (a for a in (info.annotation, *get_args(info.annotation)) if hasattr(a, "model_fields")), None
        )
    lo = hi = None
    for meta in info.metadata if info else ():
        lo = getattr(meta, "ge", None) if getattr(meta, "ge", None) is not None else lo
        lo = getattr(meta, "gt", None) if getattr(meta, "gt", None) is not None else lo
        hi = getattr(meta, "le", None) if getattr(meta, "le", None) is not None else hi
    if lo is None and hi is None:
        return ""
    return f"{fmt_num(lo) if lo is not None else ''}..{fmt_num(hi) if hi is not None else ''}"


_CPUS_HINT = '"all", or CPU numbers and ranges: 0,2,4-7'


def form_sections(platform_names: Sequence[str]) -> list[FormSection]:
    gov_opts = [(g, f"{g}: {GOVERNOR_KERNEL.get(g, '')}") for g in get_args(GovernorName)]
    mech_opts = [(m, f"{m}: {charts.MECHANISM_NAMES.get(m, m)}") for m in get_args(Mechanism)]
    dist = [("exponential", "exponential"), ("fixed", "fixed")]
    costs = [
        FormField(f"costs.{key}", label, "float?", unit, cost=key, hint=_describe(f"costs.{key}"))
        for key, (label, unit) in COST_LABELS.items()
    ]
    return [
        FormSection(
            "Run",
            [
                FormField("title", "Title", "str", hint="Shown on the run page and in lists.", width="wide"),
                FormField("platform", "Platform", "select", options=[(p, p) for p in platform_names]),
                FormField("duration_ms", "Simulated time", "float", "ms"),
                FormField("seed", "Seed", "int", hint="Same config and seed, same result."),
                FormField("unlisted", "Unlisted (only the link finds it)", "bool"),
            ],
        ),
        FormSection(
            "Topology",
            [
                FormField("topology.sockets", "Sockets", "int"),
                FormField(
                    "topology.cores_per_socket",
                    "Cores per socket",
                    "int?",
                    hint="Blank: the platform's part.",
                ),
            ],
        ),
        FormSection(
            "Governor",
            [
                FormField("governor.name", "cpuidle governor", "select", options=gov_opts),
                FormField("governor.fixed_state", "State for the fixed governor", "select?", options=[]),
            ],
        ),
        FormSection(
            "C-states",
            [FormField("states.latency_limit_us", "PM QoS CPU latency limit", "float?", "us")],
            note="Per-state switches follow the platform's table: disable a state as sysfs `disable` does, "
            "override CPUIDLE_FLAG_IRQ_ENABLE, or set the state's power (an estimate).",
            id="states",
        ),
        FormSection(
            "Scheduler tick",
            [
                FormField(
                    "wakeups.tick.hz", "HZ", "int", options=[(str(h), str(h)) for h in (100, 250, 300, 1000)]
                ),
                FormField("wakeups.tick.nohz", "NO_HZ_IDLE (governor may stop the tick)", "bool"),
                FormField("wakeups.tick.handler_us", "Tick handler time (estimate)", "float", "us"),
            ],
        ),
        FormSection("Periodic timers (cyclictest-like)", [], id="timers"),
        FormSection(
            "Device interrupts (Poisson, per CPU; not visible to the governor)",
            [
                FormField("wakeups.interrupts.rate_hz", "Rate per CPU", "float", "Hz"),
                FormField("wakeups.interrupts.handler_us", "Handler time", "float", "us"),
                FormField("wakeups.interrupts.work_us", "Work after the interrupt", "float", "us"),
                FormField(
                    "wakeups.interrupts.work_distribution", "Work distribution", "select", options=dist
                ),
                FormField("wakeups.interrupts.cpus", "CPUs", "cpus", hint=_CPUS_HINT),
            ],
        ),
        FormSection(
            "IPIs: no-wait smp_call_function_single()",
            [
                FormField("wakeups.ipis.rate_hz", "Rate per sender", "float", "Hz"),
                FormField("wakeups.ipis.same_socket_share", "Share to the same socket", "float", "0..1"),
                FormField("wakeups.ipis.function_us", "Function run time", "float", "us"),
                FormField("wakeups.ipis.senders", "Senders", "cpus", hint=_CPUS_HINT),
                FormField("wakeups.ipis.targets", "Targets", "cpus", hint=_CPUS_HINT),
            ],
        ),
        FormSection(
            "Scheduler wake-ups (try_to_wake_up on another CPU)",
            [
                FormField("wakeups.sched_wakeups.rate_hz", "Rate per sender", "float", "Hz"),
                FormField(
                    "wakeups.sched_wakeups.same_socket_share", "Share to the same socket", "float", "0..1"
                ),
                FormField("wakeups.sched_wakeups.work_us", "Task run time", "float", "us"),
                FormField(
                    "wakeups.sched_wakeups.work_distribution", "Run-time distribution", "select", options=dist
                ),
                FormField("wakeups.sched_wakeups.senders", "Senders", "cpus", hint=_CPUS_HINT),
                FormField("wakeups.sched_wakeups.targets", "Targets", "cpus", hint=_CPUS_HINT),
            ],
        ),
        FormSection(
            "IPI wake-up mechanism",
            [
                FormField("ipi_wakeup.mechanism", "Mechanism", "select", options=mech_opts),
                FormField("ipi_wakeup.read_before_cmpxchg", "mwait_rfc: read before cmpxchg", "bool"),
                FormField(
                    "ipi_wakeup.irqs_off_across_wake", "mwait_rfc: IRQs off from WAKING to WOKENUP", "bool"
                ),
            ],
        ),
        FormSection(
            "Cost model overrides",
            costs,
            note="Blank keeps the platform's value (shown greyed, with its kind). Values marked "
            "estimate are guesses until someone publishes better.",
        ),
        FormSection(
            "Power (estimates)",
            [FormField("power.busy_watts", "Busy (C0) power per core", "float?", "W")],
            note="All power figures are labelled estimates; per-state power is in the C-states table above.",
        ),
        FormSection(
            "Output",
            [
                FormField("output.timeline_cpus", "Timeline CPUs", "int"),
                FormField("output.timeline_ms", "Timeline length", "float", "ms"),
            ],
        ),
    ]


TIMER_FIELDS = [
    FormField("wakeups.timers.#.period_us", "Period", "float", "us"),
    FormField("wakeups.timers.#.cpus", "CPUs", "cpus", hint=_CPUS_HINT),
    FormField("wakeups.timers.#.handler_us", "hrtimer handler (estimate)", "float", "us"),
    FormField("wakeups.timers.#.work_us", "Thread work per expiry", "float", "us"),
]


def _get_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, Mapping):
            data = data.get(part)
        else:
            return None
    return data


def _form_value(data: Mapping[str, Any], f: FormField) -> Any:
    value = _get_path(data, f.path)
    if f.type == "cpus":
        return ",".join(str(c) for c in value) if isinstance(value, list) else (value or "all")
    if f.type == "bool":
        return bool(value)
    return "" if value is None else value


def _platform_form_data(platforms: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What run_new.js needs to rebuild the per-state rows when the platform changes."""
    out = {}
    for p in platforms:
        table = _table(p)
        if "states" not in table:
            continue
        out[table["name"]] = {
            "title": table.get("title", ""),
            "states": [
                {
                    "name": s["name"],
                    "flags": s.get("flags", []),
                    "irq_enable": "CPUIDLE_FLAG_POLLING" in s.get("flags", [])
                    or "CPUIDLE_FLAG_IRQ_ENABLE" in s.get("flags", []),
                    "power_watts": s.get("power_watts") or {"value": 1.0, "kind": "estimate"},
                }
                for s in table["states"]
            ],
            "costs": table.get("costs", {}),
            "busy_watts": table.get("busy_watts") or {"value": 5.0, "kind": "estimate"},
            "topology": table.get("topology", {}),
        }
    return out


@router.get("/runs/new", name="new_run_page")
def new_run_page(
    request: Request, from_: str | None = Query(default=None, alias="from"), platform: str | None = None
) -> Any:
    platforms = _platforms(request)
    data = SimConfig().model_dump(mode="json")
    title = ""
    source = None
    if from_:
        source = load_run(request, from_)
        config = source.get("config") or {}
        data = _merge(data, config)
        title = source.get("title") or ""
    elif platform:
        data["platform"] = platform
    data["title"] = title
    data.pop("platform_table", None)
    platform_data = _platform_form_data(platforms)
    names = list(platform_data)
    if data["platform"] not in names:
        names.append(data["platform"])
    state_names = {s["name"] for p in platform_data.values() for s in p["states"]}
    return render(
        request,
        "run_new.html",
        {
            "sections": form_sections(names),
            "timer_fields": TIMER_FIELDS,
            "values": data,
            "form_value": _form_value,
            "prefill": data,
            "platform_data": platform_data,
            "state_colors": charts.palette(sorted(state_names)),
            "source": source,
            "describe": _describe,
            "limits": _limits,
        },
    )


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


# --- runs ------------------------------------------------------------------------------------------

SORT_LABELS = {
    "created_at": "Created",
    "finished_at": "Finished",
    "title": "Title",
    "status": "Status",
    "platform": "Platform",
    "governor": "Governor",
    "mechanism": "Mechanism",
    "cpus": "CPUs",
    "duration_ms": "Simulated time",
    "busy_share": "Busy share",
    "wakeups": "Wake-ups",
    "events": "Events",
    "wake_latency_mean_ns": "WakeLatency mean",
    "wake_latency_p99_ns": "WakeLatency p99",
    "intr_latency_mean_ns": "IntrLatency mean",
    "intr_latency_p99_ns": "IntrLatency p99",
    "ipis_sent": "IPIs sent",
    "ipis_avoided": "IPIs avoided",
    "energy_joules": "Energy (estimate)",
    "wall_s": "Wall time",
}


# Columns the runs table always shows; sorting by another adds it as a column.
SHOWN_COLUMNS = {
    "created_at",
    "title",
    "status",
    "platform",
    "governor",
    "mechanism",
    "cpus",
    "duration_ms",
    "wake_latency_mean_ns",
    "intr_latency_p99_ns",
    "ipis_sent",
    "ipis_avoided",
}


def run_sorts() -> list[tuple[str, str]]:
    """Every column the store can sort by (app.models.SORTABLE_COLUMNS), with a readable label."""
    try:
        from app.models import SORTABLE_COLUMNS
    except ImportError:  # pragma: no cover - the service is always there in practice
        SORTABLE_COLUMNS = tuple(SORT_LABELS)  # noqa: N806
    return [(c, SORT_LABELS.get(c, c.replace("_", " "))) for c in SORTABLE_COLUMNS]


PAGE_SIZE = 25


@router.get("/runs", name="runs_page")
def runs_page(
    request: Request,
    platform: str | None = None,
    governor: str | None = None,
    mechanism: str | None = None,
    status: str | None = None,
    sort: str = "created_at",
    order: str = "desc",
    page: int = Query(default=1, ge=1),
) -> Any:
    filters = {
        k: v
        for k, v in {
            "platform": platform,
            "governor": governor,
            "mechanism": mechanism,
            "status": status,
        }.items()
        if v
    }
    listing = _runs_list(
        request, **filters, sort=sort, order=order, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE
    )
    total = listing.get("total")
    return render(
        request,
        "runs.html",
        {
            "runs": listing["runs"],
            "total": total,
            "page": page,
            "pages": max(1, math.ceil(total / PAGE_SIZE)) if isinstance(total, int) else None,
            "has_next": (page * PAGE_SIZE < total)
            if isinstance(total, int)
            else len(listing["runs"]) == PAGE_SIZE,
            "filters": filters,
            "sort": sort,
            "order": order,
            "sorts": run_sorts(),
            "extra": None if sort in SHOWN_COLUMNS else (sort, dict(run_sorts()).get(sort, sort)),
            "platforms": [_table(p)["name"] for p in _platforms(request)],
            "governors": list(get_args(GovernorName)),
            "mechanisms": list(get_args(Mechanism)),
            "statuses": ["queued", "running", "done", "failed"],
        },
    )


def _result(run: Mapping[str, Any]) -> dict[str, Any] | None:
    result = run.get("result")
    return result if isinstance(result, Mapping) and result else None


@router.get("/runs/{run_id}.json", name="run_json")
def run_json(request: Request, run_id: str) -> Response:
    run = load_run(request, run_id)
    return Response(
        orjson.dumps(run, option=orjson.OPT_INDENT_2),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="idlelab-{run["id"]}.json"'},
    )


@router.get("/runs/{run_id}.csv", name="run_csv")
def run_csv(request: Request, run_id: str) -> Response:
    run = load_run(request, run_id)
    result = _result(run)
    if result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {run.get('status')})")
    return Response(
        result_csv(result),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="idlelab-{run["id"]}.csv"'},
    )


def result_csv(result: Mapping[str, Any]) -> str:
    """A result as one long CSV table `section,name,metric,value,unit` (spreadsheet friendly)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["section", "name", "metric", "value", "unit"])
    for key in (
        "platform",
        "governor",
        "governor_kernel",
        "mechanism",
        "cpus",
        "sockets",
        "duration_ns",
        "events",
        "wakeups",
        "busy_share",
        "engine_version",
        "config_hash",
    ):
        w.writerow(["run", "", key, result.get(key), "ns" if key.endswith("_ns") else ""])
    for s in result["states"]:
        for key, unit in (
            ("usage", ""),
            ("time_ns", "ns"),
            ("residency", "share"),
            ("above", ""),
            ("below", ""),
            ("rejected", ""),
            ("exit_latency_us", "us"),
            ("target_residency_us", "us"),
            ("irq_enable", ""),
            ("disabled", ""),
            ("wake_latency_mean_ns", "ns"),
            ("intr_latency_mean_ns", "ns"),
            ("exit_latency_mean_ns", "ns"),
        ):
            w.writerow(["state", s["name"], key, s.get(key), unit])
    for src, stats in result["latency"].items():
        for key in ("count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"):
            w.writerow(["latency", src, key, stats[key], "" if key == "count" else "ns"])
    ipi = result["ipi"]
    for key, value in ipi.items():
        if isinstance(value, Mapping):
            for sub, v in value.items():
                w.writerow(["ipi", key, sub, v, "cycles" if "cycles" in sub else ""])
        elif key != "mechanism":
            w.writerow(["ipi", "", key, value, "ns" if key.endswith("_ns") else ""])
    names = list(result["per_cpu_state_names"])
    for cpu, row in enumerate(result["per_cpu_residency"]):
        for name, share in zip(names, row, strict=False):
            w.writerow(["per_cpu_residency", f"cpu{cpu}", name, share, "share"])
    energy = result["energy"]
    w.writerow(["energy (estimate)", "", "joules", energy["joules"], "J"])
    w.writerow(["energy (estimate)", "", "mean_watts_per_cpu", energy["mean_watts_per_cpu"], "W"])
    w.writerow(["energy (estimate)", "", "busy_joules", energy["busy_joules"], "J"])
    for name, j in energy["per_state_joules"].items():
        w.writerow(["energy (estimate)", name, "joules", j, "J"])
    return out.getvalue()


# Where the "compare with" candidates go in a rendered run page: they change whenever another run
# finishes, so a finished run's page is cached around them. Random: page content cannot forge it.
_COMPARE_OPTIONS_MARK = f"<!--compare-options-{secrets.token_hex(8)}-->"
_COMPARE_OPTIONS_KEY = ("compare-options",)
HTML_HEADERS = (("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"))


@dataclass(frozen=True)
class CompareOptions:
    """The newest finished runs as `<option>` HTML, by run id."""

    items: list[tuple[str, bytes]]
    etag: str


@dataclass(frozen=True)
class RunPage:
    """A rendered run page cut where the compare candidates go (`tail` empty: none go there)."""

    head: bytes
    tail: bytes
    etag: str

    def answer(self, run_id: str, options: CompareOptions | None) -> Answer:
        if not self.tail or options is None:
            return Answer(self.head + self.tail, self.etag, "text/html; charset=utf-8", HTML_HEADERS)
        others = b"".join(html for rid, html in options.items if rid != run_id)
        etag = f"{self.etag[:-1]}-{options.etag[1:]}"
        return Answer(self.head + others + self.tail, etag, "text/html; charset=utf-8", HTML_HEADERS)


def _page_key(run_id: str) -> tuple[str, ...]:
    return ("run", run_id, "page")


def cached_run_page(request: Request, run_id: str) -> Answer | None:
    """The page if it is cached or stored, and its compare candidates cached (no rendering here)."""
    cache: ReadCache = request.app.state.read_cache
    entry = _ready_run_page(cache, run_id)
    if entry is None:
        return None
    page: RunPage = entry.value
    if not page.tail:
        return page.answer(run_id, None)
    options = cache.versioned_entry(_COMPARE_OPTIONS_KEY)
    return None if options is None else page.answer(run_id, options.value)


@router.get("/runs/{run_id}", name="run_page")
def run_page(request: Request, run_id: str) -> Response:
    """A finished run's page is rendered once (its charts are most of the cost) and cached as
    bytes (`cached_run_page` serves it); only the recent runs to compare with are filled in."""
    page: RunPage = _run_page_entry(request, run_id).value
    return page.answer(run_id, _compare_options(request) if page.tail else None).response(request)


def _run_page_entry(request: Request, run_id: str) -> Entry:
    """The page from the read cache, else the stored one (a restarted server), else rendered now
    (and, for a finished run, cached and stored)."""
    cache: ReadCache = request.app.state.read_cache
    entry = _ready_run_page(cache, run_id)
    if entry is not None:
        return entry
    version = cache.version()
    run = load_run(request, run_id)
    head, _, tail = _render_run_page(request, run).encode().partition(_COMPARE_OPTIONS_MARK.encode())
    stamp = stamp_of(run)
    entry = Entry(RunPage(head, tail, etag_of(head, tail)), len(head) + len(tail), stamp=stamp)
    if run["status"] in FINISHED:
        cache.put(_page_key(run_id), replace(entry, version=version))
        _store_run_page(request.app, run_id, entry)
    return entry


def _ready_run_page(cache: ReadCache, run_id: str) -> Entry | None:
    """A finished run's page from the read cache, else from the database (then cached)."""
    entry = cache.run_entry(_page_key(run_id), run_id)
    if entry is not None:
        return entry
    version = cache.version()
    row = cache.first(store.RENDERED_PAGE, run_id=run_id, renderer=page_renderer())
    if row is None:
        return None
    head, tail = row["head"], row["tail"]
    page = RunPage(head, tail, etag_of(head, tail))
    stamp = stamp_of(row)
    return cache.put(_page_key(run_id), Entry(page, len(head) + len(tail), stamp=stamp, version=version))


@cache
def page_renderer() -> str:
    """A digest of everything a page is made from (this app's code, templates, static files, the
    engine's version, the plotly.js bundle it links to): a stored page rendered by another version
    of the app is not served."""
    digest = hashlib.blake2b(f"{ENGINE_VERSION} {plotly_js_version()}".encode(), digest_size=16)
    for folder, pattern in ((REPO_ROOT / "app", "**/*.py"), (TEMPLATES_DIR, "**/*"), (STATIC_DIR, "**/*")):
        for path in sorted(folder.glob(pattern)):
            if path.is_file():
                digest.update(str(path.relative_to(REPO_ROOT)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _store_run_page(app: Any, run_id: str, entry: Entry) -> None:
    """Store a finished run's page on the background thread (no write on the request path)."""
    page: RunPage = entry.value
    status, reused_from = entry.stamp

    def save() -> None:
        row = RenderedPage(
            run_id=run_id,
            renderer=page_renderer(),
            status=status,
            reused_from=reused_from,
            head=page.head,
            tail=page.tail,
        )
        try:
            with session_scope(app.state.sessionmaker) as session:
                store.save_rendered_page(session, row)
        except Exception:  # noqa: BLE001 - the page is only not stored: it is rendered again when asked for
            log.exception("storing the page of run %s failed", run_id)

    background = getattr(app.state, "background", None)  # None: no lifespan (a bare test app)
    if background is None:
        save()
    else:
        background.submit(save)


def prerender_run_page(app: Any, run_id: str) -> None:
    """Render a run's page into the read cache and the database as soon as the run finishes, off
    the request path: its first viewer (whoever watched it run, or opens a shared link, even after
    a restart) gets stored bytes. The page holds path-only links, so a request made up here renders
    what a real one would."""
    scope = {
        "type": "http",
        "app": app,
        "router": app.router,
        "method": "GET",
        "scheme": "http",
        "server": ("localhost", 80),
        "root_path": "",
        "path": f"/runs/{run_id}",
        "query_string": b"",
        "headers": [],
    }
    try:
        _run_page_entry(Request(scope), run_id)
    except NotFound:
        pass  # deleted meanwhile


def _render_run_page(request: Request, run: dict[str, Any]) -> str:
    result = _result(run)
    context: dict[str, Any] = {
        "request": request,
        "run": run,
        "result": result,
        "config_json": orjson.dumps(
            run.get("config"), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
        ).decode(),
        "charts": charts.run_charts(result) if result is not None else {},
        "figures": charts.summary_figures(result) if result is not None else [],
        "compare_options": Markup(_COMPARE_OPTIONS_MARK),
    }
    return templates.get_template("run.html").render(context)


def _compare_options(request: Request) -> CompareOptions:
    """The 20 newest finished runs, kept until the database changes."""
    cache: ReadCache = request.app.state.read_cache
    entry = cache.versioned_entry(_COMPARE_OPTIONS_KEY)
    if entry is None:
        version = cache.version()
        option = templates.env.get_template("_macros.html").module.compare_option
        runs = _runs_list(request, limit=20, status="done")["runs"]
        items = [(r["id"], str(option(r)).encode()) for r in runs]
        html = b"".join(o for _, o in items)
        entry = Entry(CompareOptions(items, etag_of(html)), len(html), version=version)
        if version is not None:
            cache.put(_COMPARE_OPTIONS_KEY, entry)
    return entry.value  # type: ignore[no-any-return]


# --- compare ---------------------------------------------------------------------------------------


@router.get("/compare", name="compare_page")
def compare_page(request: Request, ids: list[str] = Query(default=[])) -> Any:  # noqa: B008
    """Runs overlaid, and `compare_view`'s aligned metrics (the `/api/compare` twin) with the better
    direction of each marked. `?ids=a,b` or `?ids=a&ids=b` (the run page's form sends the latter)."""
    id_list = _ids(ids)
    view = _plain(_call_view("compare_view", request, id_list))
    runs = view["runs"]
    labels = [_run_label(r, i) for i, r in enumerate(runs)]
    # The comparison carries figures, not whole results: the overlaid charts need each result.
    results = [_result(load_run(request, r["id"])) if r["status"] == "done" else None for r in runs]
    # Charts name runs by letter only ("C6 · B"): full titles would crowd the legends.
    letters = [label.split(":")[0] for label in labels]
    pairs = [(letter, res) for letter, res in zip(letters, results, strict=True) if res is not None]
    return render(
        request,
        "compare.html",
        {
            "view": view,
            "runs": runs,
            "labels": labels,
            "done": [res is not None for res in results],
            "rows": annotate_metrics(view["metrics"]),
            "charts": charts.compare_charts(pairs) if len(pairs) >= 2 else {},
            "ids": [r["id"] for r in runs],
        },
    )


def _ids(values: Sequence[str]) -> list[str]:
    ids: list[str] = []
    for v in values:
        for part in v.replace(" ", ",").split(","):
            if part and part not in ids:
                ids.append(part)
    return ids


def _run_label(run: Mapping[str, Any], i: int) -> str:
    title = (run.get("title") or "").strip()
    if len(title) > 40:
        title = title[:37] + "..."
    short = title or run.get("id", f"run {i + 1}")
    return f"{chr(ord('A') + i % 26)}: {short}"


def better_direction(key: str) -> str | None:
    """Which way a compared metric (a `compare_view` key) is better: "lower", "higher" or None.

    Residency shares, entry counts and wake-up counts describe the workload's outcome, not a
    quality, so they get no direction; latencies, sender cycles, IPIs and line transfers are
    costs; avoided IPIs are savings.
    """
    if key.startswith(("residency.", "usage.")) or key in ("busy_share", "wakeups", "ipi.requested"):
        return None
    if key.endswith("_avoided"):
        return "higher"
    if key.startswith(("latency.", "ipi.", "energy.")):
        return "lower"
    return None


def annotate_metrics(metrics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`compare_view` metrics for display: ns shown in us, shares in %, each delta judged
    better/worse/same by the metric's direction (|delta| < 0.05% counts as the same)."""
    rows = []
    for m in metrics:
        scale, unit = 1.0, m["unit"]
        if unit == "ns":
            scale, unit = 1e-3, "us"
        elif unit == "share":
            scale, unit = 100.0, "%"
        better = better_direction(m["key"])
        values = [None if v is None else v * scale for v in m["values"]]
        if all(v is None for v in values):
            continue
        deltas = []
        for i, pct in enumerate(m["deltas_pct"]):
            verdict = None
            if i > 0 and pct is not None and better:
                improved = (pct < 0) == (better == "lower")
                verdict = "same" if abs(pct) < 0.05 else ("better" if improved else "worse")
            deltas.append({"pct": pct, "verdict": verdict})
        rows.append(
            {
                **m,
                "unit": unit,
                "values": values,
                "deltas": deltas,
                "better": better,
                "estimate": m["group"] == "energy" or "estimate" in m["label"],
            }
        )
    return rows
