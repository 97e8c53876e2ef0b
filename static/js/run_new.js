// New-run form: builds the SimConfig JSON from the form, POSTs it to /api/runs and goes to the
// run's page; a 422 puts each message next to the field it names (loc from the API).
//
// Inputs carry data-path="a.b.c" (the SimConfig field) and data-type:
//   str, int, float, bool, int?, float? (blank = null: "use the platform's value"),
//   float-omit (blank = leave out), select, select? (blank = null), cpus ("all" or a list),
//   cpu-list (a list; blank = none), int-list? (a list; blank = null).
// Timer rows use "wakeups.timers.#.field"; # becomes the row's position when sent.

const form = document.getElementById("run-form");
const platforms = JSON.parse(document.getElementById("platforms-data").textContent);
const prefill = JSON.parse(document.getElementById("prefill-data").textContent);
const formError = document.getElementById("form-error");

// ---- per-platform parts: the state table, fixed_state options, cost placeholders ----------

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  if (text !== undefined) node.textContent = text;
  return node;
}

function kindBadge(param) {
  const badge = el("span", { class: `kind kind-${param.kind}`, title: param.source || "" }, param.kind);
  return badge;
}

function buildStateTable(platformName, values) {
  const platform = platforms[platformName];
  const body = document.getElementById("state-rows");
  body.replaceChildren();
  if (!platform) return;
  const disabled = new Set((values.states && values.states.disabled) || []);
  const irq = (values.states && values.states.irq_enable) || {};
  const watts = (values.power && values.power.state_watts) || {};
  for (const state of platform.states) {
    const tr = el("tr");
    const name = el("td");
    name.append(el("span", { class: "swatch", "data-state-color": state.name }), state.name);
    tr.append(name);
    const flags = el("td", { class: "mono" }, state.flags.map((f) => f.replace("CPUIDLE_FLAG_", "")).join(" ") || "-");
    tr.append(flags);
    // disabled
    const dis = el("td");
    const disId = `disabled-${state.name}`;
    const box = el("input", { type: "checkbox", id: disId, value: state.name, "data-list": "states.disabled", checked: disabled.has(state.name) });
    dis.append(box, el("label", { for: disId, class: "sr-only" }, `disable ${state.name}`));
    tr.append(dis);
    // irq_enable override
    const irqTd = el("td", { class: "field" });
    const path = `states.irq_enable.${state.name}`;
    const select = el("select", { "data-path": path, "data-type": "bool-omit", "aria-label": `IRQ_ENABLE for ${state.name}` });
    const current = irq[state.name];
    select.append(
      el("option", { value: "", selected: current === undefined }, `table (${state.irq_enable ? "on" : "off"})`),
      el("option", { value: "true", selected: current === true }, "on"),
      el("option", { value: "false", selected: current === false }, "off"),
    );
    irqTd.append(select, el("div", { class: "field-error", "data-error-for": path }));
    tr.append(irqTd);
    // power override
    const powTd = el("td", { class: "field" });
    const wpath = `power.state_watts.${state.name}`;
    const w = el("input", {
      type: "number", step: "any", "data-path": wpath, "data-type": "float-omit",
      "aria-label": `power of ${state.name} in watts`,
      placeholder: `${state.power_watts.value} (${state.power_watts.kind})`,
      value: watts[state.name] !== undefined ? watts[state.name] : null,
    });
    powTd.append(w, el("div", { class: "field-error", "data-error-for": wpath }));
    tr.append(powTd);
    body.append(tr);
  }
  for (const sw of body.querySelectorAll("[data-state-color]")) {
    const color = (window.IDLELAB_STATE_COLORS || {})[sw.dataset.stateColor];
    if (color) sw.style.background = color;
  }
  // fixed_state choices follow the table.
  const fixed = form.querySelector('[data-path="governor.fixed_state"]');
  const want = values.governor ? values.governor.fixed_state : null;
  fixed.replaceChildren(el("option", { value: "", selected: !want }, "deepest enabled state"));
  for (const state of platform.states) {
    fixed.append(el("option", { value: state.name, selected: want === state.name }, state.name));
  }
  // cost and power placeholders show the platform's value and its kind.
  for (const input of form.querySelectorAll("[data-cost]")) {
    const param = platform.costs[input.dataset.cost];
    input.placeholder = param ? `${param.value} (${param.kind})` : "";
    const badge = form.querySelector(`[data-kind-for="${input.dataset.cost}"]`);
    if (badge && param) badge.replaceChildren(kindBadge(param));
  }
  const busy = form.querySelector('[data-path="power.busy_watts"]');
  busy.placeholder = `${platform.busy_watts.value} (${platform.busy_watts.kind})`;
  const cores = form.querySelector('[data-path="topology.cores_per_socket"]');
  cores.placeholder = `${platform.topology.cores_per_socket} (platform default)`;
}

// ---- timers --------------------------------------------------------------------------------

const timerTemplate = document.getElementById("timer-template");
const timerList = document.getElementById("timer-rows");

function renumberTimers() {
  [...timerList.querySelectorAll(".timer-row")].forEach((row, i) => {
    row.querySelector("[data-timer-number]").textContent = String(i);
    for (const node of row.querySelectorAll("[data-path-template]")) {
      node.dataset.path = node.dataset.pathTemplate.replace("#", String(i));
    }
    for (const node of row.querySelectorAll("[data-error-template]")) {
      node.dataset.errorFor = node.dataset.errorTemplate.replace("#", String(i));
    }
    for (const fieldNode of row.querySelectorAll(".field")) {
      const input = fieldNode.querySelector("[data-path]");
      const label = fieldNode.querySelector("label[for]");
      if (!input) continue;
      input.id = "f-" + input.dataset.path.replaceAll(".", "-");
      if (label) label.htmlFor = input.id;
    }
  });
}

function addTimer(values = {}) {
  const row = timerTemplate.content.firstElementChild.cloneNode(true);
  for (const input of row.querySelectorAll("[data-path-template]")) {
    const key = input.dataset.pathTemplate.split(".").pop();
    if (values[key] !== undefined) input.value = formatValue(values[key], input.dataset.type);
  }
  row.querySelector("[data-remove-timer]").addEventListener("click", () => { row.remove(); renumberTimers(); });
  timerList.append(row);
  renumberTimers();
}

document.getElementById("add-timer").addEventListener("click", () => addTimer());

// ---- values in and out -----------------------------------------------------------------------

function formatValue(value, type) {
  if (type === "cpus" || type === "cpu-list" || type === "int-list?") {
    return Array.isArray(value) ? value.join(",") : value == null ? "" : String(value);
  }
  if (value === null || value === undefined) return "";
  return String(value);
}

function parseCpus(text) {
  const t = text.trim();
  if (t === "" || t === "all") return "all";
  const out = [];
  for (const part of t.split(/[\s,]+/).filter(Boolean)) {
    const range = part.match(/^(\d+)-(\d+)$/);
    if (range) {
      for (let c = Number(range[1]); c <= Number(range[2]); c += 1) out.push(c);
    } else if (/^\d+$/.test(part)) {
      out.push(Number(part));
    } else {
      return t; // not a CPU list: let the server name the problem
    }
  }
  return out;
}

function parseInput(input) {
  const type = input.dataset.type;
  const raw = input.type === "checkbox" ? input.checked : input.value;
  switch (type) {
    case "bool": return raw;
    case "str": case "select": return raw;
    case "select?": return raw === "" ? null : raw;
    case "bool-omit": return raw === "" ? undefined : raw === "true";
    case "cpus": return parseCpus(raw);
    case "cpu-list": return raw.trim() === "" ? [] : parseCpus(raw);
    case "int-list?": return raw.trim() === "" ? null : raw.split(/[\s,]+/).filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    case "int": case "float": {
      if (raw.trim() === "") return null;
      const n = Number(raw);
      return Number.isFinite(n) ? n : raw;
    }
    case "int?": case "float?": case "float-omit": {
      if (raw.trim() === "") return type === "float-omit" ? undefined : null;
      const n = Number(raw);
      return Number.isFinite(n) ? n : raw;
    }
    default: return raw;
  }
}

function setPath(obj, path, value) {
  const keys = path.split(".");
  let node = obj;
  keys.slice(0, -1).forEach((key, i) => {
    const nextIsIndex = /^\d+$/.test(keys[i + 1]);
    if (node[key] === undefined) node[key] = nextIsIndex ? [] : {};
    node = node[key];
  });
  node[keys[keys.length - 1]] = value;
}

function collect() {
  const config = { wakeups: { timers: [] }, states: { disabled: [], irq_enable: {} }, power: { state_watts: {} } };
  let title = "";
  let unlisted = false;
  let repeats;
  for (const input of form.querySelectorAll("[data-path]")) {
    if (input.closest("template")) continue;
    const value = parseInput(input);
    if (value === undefined) continue;
    const path = input.dataset.path;
    if (path === "title") title = value;
    else if (path === "unlisted") unlisted = value;
    else if (path === "repeats") repeats = value;
    else setPath(config, path, value);
  }
  for (const box of form.querySelectorAll('[data-list="states.disabled"]')) {
    if (box.checked) config.states.disabled.push(box.value);
  }
  return { config, title, unlisted, repeats };
}

// ---- errors --------------------------------------------------------------------------------

function clearErrors() {
  formError.replaceChildren();
  for (const node of form.querySelectorAll("[data-error-for]")) node.textContent = "";
  for (const node of form.querySelectorAll(".field.invalid")) node.classList.remove("invalid");
}

function fieldPath(loc) {
  const parts = [...loc];
  if (parts[0] === "body") parts.shift();
  if (parts[0] === "config") parts.shift();
  return parts.map(String);
}

function showErrors(detail) {
  const items = Array.isArray(detail) ? detail : [{ loc: [], msg: typeof detail === "string" ? detail : JSON.stringify(detail) }];
  const unplaced = [];
  let first = null;
  for (const item of items) {
    const parts = fieldPath(item.loc || []);
    let slot = null;
    // The deepest field the location names: "wakeups.timers.0.cpus.3" lands on the timer's cpus.
    for (let n = parts.length; n > 0 && !slot; n -= 1) {
      slot = form.querySelector(`[data-error-for="${CSS.escape(parts.slice(0, n).join("."))}"]`);
    }
    if (slot) {
      slot.textContent = slot.textContent ? `${slot.textContent}; ${item.msg}` : item.msg;
      const field = slot.closest(".field");
      if (field) field.classList.add("invalid");
      const fold = slot.closest("details");
      if (fold) fold.open = true;  // an error in a folded section opens it
      first = first || slot;
    } else {
      unplaced.push(`${parts.join(".") || "config"}: ${item.msg}`);
    }
  }
  if (unplaced.length) {
    const list = el("ul");
    for (const line of unplaced) list.append(el("li", {}, line));
    formError.append(el("strong", {}, "The run was not accepted:"), list);
    first = first || formError;
  }
  if (first) first.scrollIntoView({ block: "center" });
}

// ---- submit --------------------------------------------------------------------------------

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  clearErrors();
  const button = form.querySelector('button[type="submit"]');
  button.disabled = true;
  const { config, title, unlisted, repeats } = collect();
  const body = { config, title };
  if (unlisted) body.unlisted = true;
  if (repeats != null) body.repeats = repeats;  // blank: one repeat
  try {
    const response = await fetch(form.dataset.api, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({ detail: `HTTP ${response.status}` }));
    if (response.ok && data.id) {
      const runUrl = form.dataset.runUrl.replace("__ID__", encodeURIComponent(data.id));
      window.location.assign(runUrl);
      return;
    }
    showErrors(data.detail !== undefined ? data.detail : `HTTP ${response.status}`);
    if (response.status === 422) {
      // Refused as it stands (a field out of range, a run over the event limit): nothing was
      // stored, and the same config cannot be sent again until a field changes.
      form.dataset.refused = "true";
      form.addEventListener("input", () => {
        delete form.dataset.refused;
        button.disabled = false;
      }, { once: true });
      return;
    }
  } catch (err) {
    showErrors(`Could not reach the server: ${err.message}`);
  }
  button.disabled = false;
});

// ---- start -----------------------------------------------------------------------------------

const platformSelect = form.querySelector('[data-path="platform"]');
platformSelect.addEventListener("change", () => buildStateTable(platformSelect.value, collect().config));
window.IDLELAB_STATE_COLORS = JSON.parse(document.getElementById("state-colors").textContent);
buildStateTable(platformSelect.value, prefill);
for (const timer of (prefill.wakeups && prefill.wakeups.timers) || []) addTimer(timer);
form.dataset.ready = "true";
