// tvbo dashboard: draws sessions from the JSON API under /v1 with hand-made SVG charts.
// No framework, no external asset. Time charts share one time window: drag across any of
// them to zoom all, double-click to reset. Hover reads values out.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const COLORS = ["#2563eb", "#ea580c", "#16a34a", "#7c3aed", "#0d9488", "#db2777", "#ca8a04", "#475569"];
const FORGET_COLORS = { reset: "#dc2626", budget: "#7c3aed", relevance: "#ea580c", expired: "#9aa3ad" };
const POLL_MS = 1000;

/// The path prefix a reverse proxy serves tvbo under (TVBO_BASE_PATH), "" at the root.
const base = () => document.body.dataset.base || "";

/// The API key the person signed in with (kept in this browser's local storage), if any.
const KEY_STORAGE = "tvbo.apiKey";
const storedKey = () => { try { return localStorage.getItem(KEY_STORAGE); } catch (_) { return null; } };
/// Whether the server wants a key on /v1 (TVBO_AUTH).
const authRequired = () => document.body.dataset.auth === "on";

async function api(path, options) {
  const headers = Object.assign({}, (options || {}).headers);
  const key = storedKey();
  if (key) headers.authorization = "Bearer " + key;
  const response = await fetch(base() + path, Object.assign({}, options, { headers }));
  if (!response.ok) {
    let detail = response.status + " " + response.statusText;
    try { const problem = await response.json(); detail = problem.detail || problem.title || detail; } catch (_) { /* not JSON */ }
    const error = new Error(detail);
    error.status = response.status;
    throw error;
  }
  return response.json();
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function fmt(x, digits = 4) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3)) return x.toExponential(2);
  return Number(x.toPrecision(digits)).toString();
}

function fmtTime(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.abs(seconds);
  if (s < 120) return fmt(seconds, 3) + " s";
  if (s < 7200) return fmt(seconds / 60, 3) + " min";
  if (s < 172800) return fmt(seconds / 3600, 3) + " h";
  return fmt(seconds / 86400, 3) + " d";
}

function algorithmName(session) { return session.algorithm && session.algorithm.name; }

/// Where a timeline's regrets come from: "reported" by the client, "estimated" by the
/// model, or both.
function regretProvenance(timeline) {
  const reported = timeline.reported_regrets, estimated = timeline.estimated_regrets;
  if (!reported && !estimated) return "";
  if (!estimated) return "reported";
  return reported ? "reported and estimated" : "estimated";
}

// ---------------------------------------------------------------------------------------
// Charts

const tooltip = () => document.getElementById("tooltip");

/// The shared time window of every time chart: null for "everything".
const timeWindow = { range: null, listeners: [] };
function setTimeWindow(range) {
  timeWindow.range = range;
  for (const redraw of timeWindow.listeners) redraw();
}

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) { hi = lo + 1; lo = lo - 1; }
  const step0 = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0) || step0;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(v);
  return ticks;
}

/// A line/point chart. spec: {title, xLabel, yLabel, time (x is session time: linked
/// zoom), series: [{name, points: [[x, y, extra?]], mode: "line"|"points"|"step", color,
/// dash, width}], marks: [{x, label, color}], note, logY}
function chart(container, spec) {
  const card = el("div", { class: "card chart" + (spec.wide ? " wide" : "") });
  card.dataset.chart = spec.id || spec.title;
  card.append(el("h2", { text: spec.title }));
  const holder = el("div");
  card.append(holder);
  if (spec.note) card.append(el("p", { class: "note", text: spec.note }));
  container.append(card);
  const draw = () => drawChart(holder, spec);
  draw();
  if (spec.time) timeWindow.listeners.push(draw);
  return card;
}

function drawChart(holder, spec) {
  holder.replaceChildren();
  const W = spec.wide ? 1300 : 640, H = 250, L = 62, R = 12, T = 22, B = 34;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": spec.title });
  holder.append(root);
  const all = spec.series.flatMap(s => s.points.map(p => [p[0], p[1]]))
    .filter(p => Number.isFinite(p[0]) && Number.isFinite(p[1]));
  let xs = all.map(p => p[0]);
  for (const m of spec.marks || []) xs.push(m.x);
  let [x0, x1] = xs.length ? [Math.min(...xs), Math.max(...xs)] : [0, 1];
  if (spec.time && timeWindow.range) [x0, x1] = timeWindow.range;
  if (spec.xMin !== undefined) x0 = Math.min(x0, spec.xMin);
  if (!(x1 > x0)) { x1 = x0 + 1; }
  const visible = all.filter(p => p[0] >= x0 && p[0] <= x1);
  let ys = visible.map(p => p[1]);
  for (const y of spec.extraY || []) ys.push(y);
  if (spec.logY) ys = ys.filter(y => y > 0);
  let [y0, y1] = ys.length ? [Math.min(...ys), Math.max(...ys)] : [0, 1];
  if (spec.yMin !== undefined) y0 = Math.min(y0, spec.yMin);
  if (y1 - y0 <= 1e-9 * Math.max(Math.abs(y0), Math.abs(y1), 1e-300)) { const c = y0; y1 = c + 0.5 * (Math.abs(c) || 1); y0 = c - 0.5 * (Math.abs(c) || 1); }
  const pad = (y1 - y0) * 0.06; if (!spec.logY) { y0 -= pad; y1 += pad; }
  const ly = v => Math.log10(v);
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const sy = spec.logY
    ? y => T + (1 - (ly(Math.max(y, 1e-300)) - ly(y0)) / ((ly(y1) - ly(y0)) || 1)) * (H - T - B)
    : y => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  // Axes and grid.
  const axis = svg("g", { class: "axis" });
  const grid = svg("g", { class: "grid" });
  root.append(grid, axis);
  for (const t of niceTicks(x0, x1, 6)) {
    const x = sx(t);
    grid.append(svg("line", { x1: x, x2: x, y1: T, y2: H - B }));
    const label = svg("text", { x, y: H - B + 14, "text-anchor": "middle" });
    label.textContent = spec.time ? fmtTime(t) : fmt(t);
    axis.append(label);
  }
  const yTicks = spec.logY
    ? niceTicks(ly(y0), ly(y1), 4).map(v => Math.pow(10, v))
    : niceTicks(y0, y1, 5);
  for (const t of yTicks) {
    const y = sy(t);
    grid.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y }));
    const label = svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" });
    label.textContent = fmt(t, 3);
    axis.append(label);
  }
  axis.append(svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B }));
  axis.append(svg("line", { x1: L, x2: L, y1: T, y2: H - B }));
  const xl = svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" });
  xl.textContent = spec.xLabel || (spec.time ? "session time" : "");
  const yl = svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` });
  yl.textContent = spec.yLabel || "";
  axis.append(xl, yl);
  if (!visible.length) {
    const empty = svg("text", { x: (L + W - R) / 2, y: (T + H - B) / 2, "text-anchor": "middle", class: "empty" });
    empty.textContent = spec.empty || "no data yet";
    root.append(empty);
  }
  // Clip to the plot area.
  const clipId = "clip-" + Math.random().toString(36).slice(2);
  const defs = svg("defs");
  const clip = svg("clipPath", { id: clipId });
  clip.append(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B }));
  defs.append(clip);
  root.append(defs);
  const plot = svg("g", { "clip-path": `url(#${clipId})` });
  root.append(plot);
  for (const m of spec.marks || []) {
    if (m.x < x0 || m.x > x1) continue;
    const line = svg("line", { x1: sx(m.x), x2: sx(m.x), y1: T, y2: H - B, stroke: m.color || "#9aa3ad", "stroke-width": 1, "stroke-dasharray": "2 3" });
    const title = svg("title"); title.textContent = m.label; line.append(title);
    plot.append(line);
  }
  spec.series.forEach((s, i) => {
    const color = s.color || COLORS[i % COLORS.length];
    const pts = s.points.filter(p => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!spec.logY || p[1] > 0));
    if (s.mode === "points") {
      const g = svg("g", { fill: color, "fill-opacity": s.opacity || 0.75 });
      for (const p of pts) {
        if (p[0] < x0 || p[0] > x1) continue;
        g.append(svg("circle", { cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: s.radius || 2.2, fill: p[2] && p[2].color || color }));
      }
      plot.append(g);
    } else if (pts.length) {
      let d = "";
      pts.forEach((p, j) => {
        const X = sx(p[0]).toFixed(1), Y = sy(p[1]).toFixed(1);
        if (j === 0) d += `M${X},${Y}`;
        else if (s.mode === "step") d += `H${X}V${Y}`;
        else d += `L${X},${Y}`;
      });
      plot.append(svg("path", { d, fill: "none", stroke: color, "stroke-width": s.width || 1.6, "stroke-dasharray": s.dash || "" }));
    }
  });
  // Legend.
  const legend = svg("g", { class: "legend" });
  let lx = L;
  spec.series.forEach((s, i) => {
    const color = s.color || COLORS[i % COLORS.length];
    legend.append(svg("rect", { x: lx, y: 6, width: 10, height: 10, fill: color }));
    const text = svg("text", { x: lx + 14, y: 15 }); text.textContent = s.name;
    legend.append(text);
    lx += 24 + s.name.length * 6;
  });
  root.append(legend);
  // Hover read-out and drag-to-zoom.
  const cursor = svg("line", { class: "cursor", y1: T, y2: H - B, visibility: "hidden" });
  const brush = svg("rect", { class: "brush", y: T, height: H - T - B, width: 0, visibility: "hidden" });
  const overlay = svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent", class: "overlay" });
  root.append(cursor, brush, overlay);
  const toX = event => {
    const box = root.getBoundingClientRect();
    return (event.clientX - box.left) / box.width * W;
  };
  let dragFrom = null;
  overlay.addEventListener("mousemove", event => {
    const px = toX(event);
    const x = x0 + (px - L) / (W - L - R) * (x1 - x0);
    cursor.setAttribute("x1", px); cursor.setAttribute("x2", px); cursor.setAttribute("visibility", "visible");
    const lines = [(spec.time ? fmtTime(x) : (spec.xLabel || "x") + " " + fmt(x))];
    spec.series.forEach(s => {
      let best = null;
      for (const p of s.points) {
        if (!Number.isFinite(p[1])) continue;
        if (best === null || Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
      }
      if (best) lines.push(`${s.name}: ${fmt(best[1])}` + (best[2] && best[2].label ? ` (${best[2].label})` : ""));
    });
    const tip = tooltip();
    tip.textContent = lines.join("\n");
    tip.hidden = false;
    tip.style.left = (event.clientX + 14) + "px";
    tip.style.top = (event.clientY + 10) + "px";
    if (dragFrom !== null) {
      brush.setAttribute("x", Math.min(dragFrom, px)); brush.setAttribute("width", Math.abs(px - dragFrom));
      brush.setAttribute("visibility", "visible");
    }
  });
  overlay.addEventListener("mouseleave", () => { tooltip().hidden = true; cursor.setAttribute("visibility", "hidden"); dragFrom = null; brush.setAttribute("visibility", "hidden"); });
  if (spec.time) {
    overlay.addEventListener("mousedown", event => { dragFrom = toX(event); });
    overlay.addEventListener("mouseup", event => {
      if (dragFrom === null) return;
      const a = Math.min(dragFrom, toX(event)), b = Math.max(dragFrom, toX(event));
      dragFrom = null;
      if (b - a < 4) return;
      const inv = px => x0 + (px - L) / (W - L - R) * (x1 - x0);
      setTimeWindow([inv(a), inv(b)]);
    });
    overlay.addEventListener("dblclick", () => setTimeWindow(null));
  }
}

// ---------------------------------------------------------------------------------------
// The sessions list

async function sessionsView(main) {
  document.getElementById("crumb").textContent = "sessions";
  main.replaceChildren();
  const filters = el("div", { class: "filters" });
  const name = el("input", { type: "search", placeholder: "filter by name", "aria-label": "filter by name" });
  const algorithm = el("select", { "aria-label": "filter by algorithm" }, el("option", { value: "", text: "all algorithms" }));
  filters.append(name, algorithm);
  const table = el("table", { id: "sessions" });
  const more = el("button", { text: "More sessions", hidden: "" });
  main.append(el("h1", { text: "Sessions" }), filters, table, more);
  table.append(el("thead", {}, el("tr", {}, ...["name", "algorithm", "status", "observations", "dataset / n*", "avg regret", "last activity", "regret"].map(h => el("th", { text: h })))));
  const body = el("tbody");
  table.append(body);
  let cursor = null;
  const rows = [];
  const algorithms = new Set();
  const apply = () => {
    const q = name.value.toLowerCase(), a = algorithm.value;
    for (const r of rows) r.node.hidden = !(r.name.toLowerCase().includes(q) && (!a || r.algorithm === a));
  };
  name.addEventListener("input", apply);
  algorithm.addEventListener("change", apply);
  const load = async () => {
    const page = await api("/v1/sessions?limit=50" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    for (const u of page.unreadable || []) {
      body.append(el("tr", { "data-session": u.id, class: "unreadable" },
        el("td", { colspan: "8", class: "muted", text: `session ${u.id}: its stored row does not read back (run tvbo check; it can still be deleted)` })));
    }
    if (!page.sessions.length && !rows.length && !(page.unreadable || []).length) {
      body.append(el("tr", {}, el("td", { colspan: "8", class: "muted", text: "No sessions yet. Create one with POST /v1/sessions (see /openapi.json)." })));
    }
    for (const s of page.sessions) {
      const alg = algorithmName(s);
      if (!algorithms.has(alg)) { algorithms.add(alg); algorithm.append(el("option", { value: alg, text: alg })); }
      const link = el("a", { href: base() + "/sessions/" + s.id, text: s.name });
      const avg = el("td", { text: "…" }), last = el("td", { text: "…" }), spark = el("td");
      const node = el("tr", { "data-session": s.id }, el("td", {}, link), el("td", { text: alg }), el("td", { text: s.status }),
        el("td", { text: String(s.observation_count) }),
        el("td", { text: s.dataset_size + (s.max_dataset_size !== null ? " / " + s.max_dataset_size : "") }), avg, last, spark);
      body.append(node);
      rows.push({ node, name: s.name, algorithm: alg });
      api(`/v1/sessions/${s.id}/timeline?points=100`).then(tl => {
        const regrets = tl.observations.filter(o => o.regret !== null);
        const provenance = regretProvenance(tl);
        if (tl.average_regret !== null) {
          avg.textContent = fmt(tl.average_regret);
          avg.append(" ", el("span", { class: "tag" + (provenance === "reported" ? "" : " est"), text: provenance }));
        } else avg.textContent = "–";
        const times = tl.steps.map(x => x.t).concat(tl.observations.map(o => o.t));
        last.textContent = times.length ? fmtTime(Math.max(...times)) : "created " + new Date(s.created_at).toLocaleString();
        spark.append(sparkline(regrets.map(o => o.regret)));
      }).catch(e => { avg.textContent = "error: " + e.message; });
    }
    apply();
  };
  more.addEventListener("click", load);
  await load();
}

function sparkline(values) {
  const W = 120, H = 24;
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "sparkline" });
  if (values.length < 2) return root;
  const lo = Math.min(...values), hi = Math.max(...values);
  const d = values.map((v, i) => `${i ? "L" : "M"}${(i / (values.length - 1) * W).toFixed(1)},${(H - 2 - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (H - 4)).toFixed(1)}`).join("");
  root.append(svg("path", { d, fill: "none", stroke: "#2563eb", "stroke-width": 1.2 }));
  return root;
}

// ---------------------------------------------------------------------------------------
// One session

async function sessionView(main, id) {
  let session;
  try {
    session = await api("/v1/sessions/" + id);
  } catch (e) {
    main.replaceChildren(el("h1", { text: "Session not found" }), el("p", { class: "muted", text: e.message }), el("a", { href: base() + "/", text: "All sessions" }));
    return;
  }
  document.title = session.name + " · tvbo";
  document.getElementById("crumb").textContent = "/ " + session.name;
  let version = -1;
  const refresh = async () => {
    const current = await api("/v1/sessions/" + id);
    if (current.version === version) return;
    version = current.version;
    await renderSession(main, current);
  };
  await refresh();
  const live = document.getElementById("live");
  live.textContent = "live";
  live.classList.add("on");
  let delay = POLL_MS;
  const poll = async () => {
    if (!document.hidden) {
      try { await refresh(); delay = POLL_MS; live.classList.add("on"); live.textContent = "live"; }
      catch (e) { delay = Math.min(delay * 2, 30000); live.classList.remove("on"); live.textContent = "offline: " + e.message; }
    }
    setTimeout(poll, document.hidden ? 4 * POLL_MS : delay);
  };
  setTimeout(poll, delay);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh().catch(() => {}); });
}

async function renderSession(main, session) {
  const id = session.id;
  const [timeline, best] = await Promise.all([
    api(`/v1/sessions/${id}/timeline`),
    // Without active observations (and no prior) there is nothing to recommend: 409.
    session.dataset_size > 0 || session.algorithm.priors ? api(`/v1/sessions/${id}/best`) : null,
  ]);
  const sign = session.goal === "minimize" ? -1 : 1;
  timeWindow.listeners = [];
  const scrollY = window.scrollY;
  main.replaceChildren();
  main.append(el("h1", { text: session.name }));
  const alg = algorithmName(session);
  const regrets = timeline.observations.filter(o => o.regret !== null);
  const provenance = regretProvenance(timeline);
  const summary = el("div", { class: "summary" });
  const fact = (label, value) => summary.append(el("div", {}, el("b", { text: value }), el("span", { class: "muted", text: label })));
  fact("algorithm", alg);
  fact("goal", session.goal);
  fact("observations", String(session.observation_count));
  fact("active dataset", session.dataset_size + (session.max_dataset_size !== null ? " of n* " + session.max_dataset_size : ""));
  fact("pending", String(session.pending_count));
  const ended = kind => timeline.ended_runs.filter(r => r.kind === kind).length;
  if (timeline.ended_run_count > 0) fact("failed · abandoned", `${ended("failed")} · ${ended("abandoned")}` + (timeline.ended_runs.length < timeline.ended_run_count ? ` (newest ${timeline.ended_runs.length} of ${timeline.ended_run_count})` : ""));
  fact("average regret" + (provenance ? ` (${provenance})` : ""), fmt(timeline.average_regret));
  fact("time", session.time.source === "client" ? "client time" : "wall clock");
  main.append(summary);
  // Recommendation and export.
  const toolbar = el("div", { class: "toolbar" });
  if (best) {
    const params = Object.entries(best.params).map(([k, v]) => `${k} = ${fmt(v)}`).join(", ");
    toolbar.append(el("span", {}, el("b", { text: "Run now: " }), (best.arm ? best.arm + ": " : "") + params,
      el("span", { class: "muted", text: `  (posterior mean ${fmt(best.mean)} ± ${fmt(best.std)} at ${fmtTime(best.t)})` })));
  } else {
    toolbar.append(el("span", { class: "muted", text: "No recommendation yet: the session has no active observations." }));
  }
  const exportJson = el("a", { href: `${base()}/v1/sessions/${id}/timeline?points=20000`, download: `${session.name}-timeline.json`, text: "Export JSON" });
  const exportCsv = el("button", { text: "Export CSV" });
  exportCsv.addEventListener("click", () => exportObservationsCsv(session));
  toolbar.append(exportJson, exportCsv, el("span", { class: "muted", text: "Drag across a time chart to zoom; double-click to reset." }));
  main.append(toolbar);
  const grid = el("div", { class: "grid" });
  main.append(grid);
  const marks = timeline.forgotten.map(f => ({
    x: f.t, color: FORGET_COLORS[f.reason],
    label: `${f.count} forgotten (${f.reason}) ` + (f.t_end > f.t ? `from ${fmtTime(f.t)} to ${fmtTime(f.t_end)}` : `at ${fmtTime(f.t)}`),
  }));
  const downsampled = timeline.observations.length < timeline.observation_count
    ? ` Showing ${timeline.observations.length} of ${timeline.observation_count} observations (each bucket's extremes kept).` : "";
  // 1. Regret. The running average is of the points drawn: exact unless downsampled.
  let running = 0;
  const runningAvg = regrets.map((o, i) => { running += o.regret; return [o.t, running / (i + 1)]; });
  chart(grid, {
    id: "regret", title: "Dynamic regret" + (provenance ? ` (${provenance})` : ""), time: true, wide: true, yLabel: "regret",
    series: [
      { name: "instantaneous", mode: "points", points: regrets.map(o => [o.t, o.regret, { label: o.estimated ? "estimated" : "reported", color: o.estimated ? "#ea580c" : "#2563eb" }]) },
      { name: downsampled ? "running average (of the points drawn)" : "running average", points: runningAvg, color: "#111827", width: 2 },
    ],
    marks,
    note: "Regret r = f*(t) − f(x_t) at each observation: as the client reported it (blue), else estimated (orange) from the posterior optimum the model recorded at the last suggest. Dashed verticals: data forgotten (red reset, purple budget, orange relevance)." + downsampled,
  });
  // 2. Values and the posterior optimum's value.
  const optimumSteps = timeline.steps.filter(s => s.snapshot && s.snapshot.optimum);
  chart(grid, {
    id: "values", title: "Observed values and the posterior optimum", time: true, yLabel: "value",
    series: [
      { name: "observed (active)", mode: "points", points: timeline.observations.filter(o => o.active).map(o => [o.t, o.value]) },
      { name: "observed (forgotten)", mode: "points", color: "#9aa3ad", points: timeline.observations.filter(o => !o.active).map(o => [o.t, o.value, { label: o.removed_reason }]) },
      { name: "posterior optimum", mode: "line", color: "#16a34a", points: optimumSteps.map(s => [s.snapshot.optimum.t, s.snapshot.optimum.mean]) },
    ],
    marks,
    note: "The green line is the posterior mean at its maximiser, recorded when each suggestion was made: where the model believed the best value was.",
  });
  // 3. Parameters and the moving optimum.
  for (const p of session.parameters) {
    // A categorical parameter is drawn at its choice's index (listed in the note).
    const choices = p.type === "categorical" ? p.choices : null;
    const y = v => choices ? choices.indexOf(v) : v;
    const box = choices
      ? "Choices: " + choices.map((c, i) => `${i} = ${c}`).join(", ") + "."
      : `Box [${fmt(p.low)}, ${fmt(p.high)}]${p.scale === "log" ? ", log scale" : ""}.`;
    chart(grid, {
      id: "param-" + p.name, title: `Parameter ${p.name}: suggestions and the moving optimum`, time: true, yLabel: p.name + (choices ? " (choice)" : ""),
      series: [
        { name: "observed at", mode: "points", points: timeline.observations.map(o => [o.t, y(o.params[p.name]), { label: String(o.params[p.name]) }]) },
        { name: "moving optimum", mode: "step", color: "#16a34a", width: 2, points: optimumSteps.map(s => [s.snapshot.optimum.t, y(s.snapshot.optimum.params[p.name])]) },
        ...endedSeries(timeline, r => y(r.params[p.name])),
      ],
      extraY: choices ? [-0.5, choices.length - 0.5] : [p.low, p.high],
      note: `${box} ${p.context ? "A context parameter: given at every suggest." : "The step line is the posterior argmax as it was at each suggest."}`,
    });
  }
  // 4. Dataset size.
  const snap = timeline.steps.filter(s => s.snapshot);
  const datasetSeries = [{ name: "active dataset", mode: "step", points: snap.map(s => [s.t, s.snapshot.dataset_size]) }];
  if (snap.some(s => s.snapshot.max_dataset_size !== undefined)) datasetSeries.push({ name: "n* (BOLT)", mode: "step", color: "#dc2626", dash: "5 3", points: snap.filter(s => s.snapshot.max_dataset_size !== undefined).map(s => [s.t, s.snapshot.max_dataset_size]) });
  chart(grid, { id: "dataset", title: "Active dataset size", time: true, yLabel: "observations", yMin: 0, series: datasetSeries, marks,
    note: alg === "bolt" ? "BOLT keeps at most n* observations: the size whose response time maximises its regret bound." : "What the model still remembers; drops are forgetting." });
  if (alg === "w-dbo") {
    chart(grid, { id: "budget", title: "W-DBO removal budget", time: true, yLabel: "budget", series: [{ name: "budget", mode: "step", points: snap.filter(s => s.snapshot.budget !== undefined).map(s => [s.t, s.snapshot.budget]) }], marks,
      note: "Grows with time (Δt/l_T · ln(1+α)); spent by each removal (its relevance)." });
  }
  // 5. Response time R(n).
  const rt = timeline.response_time;
  const rtSeries = [{ name: "measured", mode: "points", points: rt.samples.map(s => [s.n, s.seconds]) }];
  if (rt.coefficients) {
    const ns = rt.samples.map(s => s.n);
    const hi = Math.max(...ns, session.max_dataset_size || 0, 1);
    const c = rt.coefficients;
    rtSeries.push({ name: "fitted cubic", color: "#16a34a", points: Array.from({ length: 60 }, (_, i) => { const n = i / 59 * hi; return [n, c[0] + c[1] * n + c[2] * n * n + c[3] * n * n * n]; }) });
  }
  chart(grid, { id: "response-time", title: "Response time R(n)", xLabel: "dataset size n", yLabel: "seconds", xMin: 0, series: rtSeries,
    marks: session.max_dataset_size !== null ? [{ x: session.max_dataset_size, label: "n* = " + session.max_dataset_size, color: "#dc2626" }] : [],
    note: "Seconds between consecutive suggests against the dataset size: BOLT fits the cubic and picks n* from it.", empty: "no samples yet (two suggests make one)" });
  // 6. Hyperparameters.
  const hyper = snap.filter(s => s.snapshot.hyperparameters);
  const hyperSeries = [
    { name: "l_S (space)", points: hyper.map(s => [s.t, s.snapshot.hyperparameters.spatial_lengthscale]) },
    { name: "signal var", points: hyper.map(s => [s.t, s.snapshot.hyperparameters.signal_variance]) },
    { name: "noise var", points: hyper.map(s => [s.t, s.snapshot.hyperparameters.noise_variance]) },
  ];
  // Sessions on priors fit no kernel: no hyperparameters to draw.
  if (hyper.length || !session.algorithm.priors) {
    chart(grid, { id: "hyperparameters", title: "Hyperparameters", time: true, logY: true, yLabel: "value (log)", series: hyperSeries,
      note: "Fitted at each step on standardised values.", empty: "not fitted yet (warm-up or random search)" });
  }
  if (hyper.some(s => s.snapshot.hyperparameters.temporal_lengthscale !== null)) {
    const temporal = [{ name: "l_T (seconds)", points: hyper.map(s => [s.t, s.snapshot.hyperparameters.temporal_lengthscale]) }];
    if (hyper.some(s => s.snapshot.hyperparameters.epsilon !== null)) temporal.push({ name: "ε", color: "#ea580c", points: hyper.map(s => [s.t, s.snapshot.hyperparameters.epsilon]) });
    chart(grid, { id: "temporal", title: "Temporal lengthscale", time: true, logY: true, yLabel: "value (log)", series: temporal,
      note: "How fast the model believes the objective drifts: a short l_T forgets quickly." });
  }
  // 7. Priors.
  const priorSteps = snap.filter(s => s.snapshot.prior_probabilities || s.snapshot.priors_active);
  if (priorSteps.length && session.algorithm.priors) {
    const names = session.algorithm.priors.map((p, i) => p.name || `prior-${i}`);
    const series = names.map((name, p) => ({
      name, mode: "step",
      points: priorSteps.map(s => [s.t, s.snapshot.prior_probabilities ? s.snapshot.prior_probabilities[p] : (s.snapshot.priors_active[p] ? 1 : 0)]),
    }));
    const eliminates = priorSteps.some(s => s.snapshot.priors_active);
    chart(grid, { id: "priors", title: eliminates ? "Priors still active (1) or eliminated (0)" : "Prior probabilities", time: true, yLabel: eliminates ? "active" : "P(prior)", yMin: 0, series,
      note: eliminates ? "PE-GP: a prior leaves the active set when its prediction errors exceed their confidence." : "HP/MAP-GP-TS: the hyperposterior over the priors." });
  }
  // 8. Posterior over a 1-D space at the current time.
  if (!session.arms && timeline.observations.some(o => o.active)) {
    // Over numeric parameters only (a heat map of choices would mislead).
    const numeric = session.parameters.every(p => p.type !== "categorical");
    if (numeric && session.parameters.length === 1) await posterior1d(grid, session, timeline, best);
    if (numeric && session.parameters.length === 2) await posterior2d(grid, session, timeline, best);
  }
  // 9. Recent observations.
  const card = el("div", { class: "card wide" });
  card.append(el("h2", { text: "Recent observations" }));
  const table = el("table", { id: "observations" });
  table.append(el("thead", {}, el("tr", {}, ...["seq", "time", ...session.parameters.map(p => p.name), "value", "regret", "state"].map(h => el("th", { text: h })))));
  const body = el("tbody");
  for (const o of timeline.observations.slice(-20).reverse()) {
    body.append(el("tr", { class: o.active ? "" : "forgotten", "data-seq": String(o.seq) },
      el("td", { text: String(o.seq) }), el("td", { text: fmtTime(o.t) }),
      ...session.parameters.map(p => el("td", { text: fmt(o.params[p.name]) })),
      el("td", { text: fmt(o.value) }), el("td", { text: o.regret === null ? "–" : fmt(o.regret) + (o.estimated ? " (est.)" : "") }),
      el("td", { text: o.active ? "active" : `forgotten (${o.removed_reason || "?"}${o.removed_t !== null ? " at " + fmtTime(o.removed_t) : ""})` })));
  }
  if (!timeline.observations.length) body.append(el("tr", {}, el("td", { colspan: "9", class: "muted", text: "No observations yet." })));
  table.append(body);
  card.append(table);
  grid.append(card);
  // 10. Runs that ended without a value.
  if (timeline.ended_runs.length) {
    const endedCard = el("div", { class: "card wide" });
    endedCard.append(el("h2", { text: "Failed and abandoned runs" }));
    const endedTable = el("table", { id: "ended-runs" });
    endedTable.append(el("thead", {}, el("tr", {}, ...["time", ...session.parameters.map(p => p.name), "ended", "reason"].map(h => el("th", { text: h })))));
    const endedBody = el("tbody");
    for (const r of timeline.ended_runs.slice(-20).reverse()) {
      endedBody.append(el("tr", { class: r.kind },
        el("td", { text: fmtTime(r.t) }), ...session.parameters.map(p => el("td", { text: fmt(r.params[p.name]) })),
        el("td", { text: r.kind + (r.suggestion_id ? "" : " (own setting)") }), el("td", { text: r.reason ?? "–" })));
    }
    endedTable.append(endedBody);
    endedCard.append(endedTable, el("p", { class: "note", text: "Recorded and kept from the model: a failed run's suggestion and an abandoned one are no longer pending." }));
    grid.append(endedCard);
  }
  window.scrollTo(0, scrollY);
  document.body.dataset.rendered = String(session.version);
}

/// The failed (red) and abandoned (grey) runs as point series at [t, y(run)]; none
/// when the session has none.
function endedSeries(timeline, y) {
  return [["failed", "#dc2626"], ["abandoned", "#9aa3ad"]]
    .map(([kind, color]) => ({ name: kind, mode: "points", color, points: timeline.ended_runs.filter(r => r.kind === kind).map(r => [r.t, y(r), { label: kind + (r.reason ? ": " + r.reason : ""), color }]) }))
    .filter(series => series.points.length);
}

async function posterior1d(grid, session, timeline, best) {
  const p = session.parameters[0];
  const points = parameterGrid(p, 80).map(v => ({ [p.name]: v }));
  const prediction = await api(`/v1/sessions/${session.id}/predict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ points }) });
  const rows = prediction.predictions.map(q => [q.params[p.name], q.mean, q.std]);
  chart(grid, {
    id: "posterior", title: `Posterior now (t = ${fmtTime(prediction.t)})`, xLabel: p.name, yLabel: "value",
    series: [
      { name: "mean", points: rows.map(r => [r[0], r[1]]), color: "#2563eb", width: 2 },
      { name: "mean ± 2σ", points: rows.map(r => [r[0], r[1] + 2 * r[2]]), color: "#93c5fd", dash: "4 3" },
      { name: " ", points: rows.map(r => [r[0], r[1] - 2 * r[2]]), color: "#93c5fd", dash: "4 3" },
      { name: "active observations", mode: "points", color: "#111827", points: timeline.observations.filter(o => o.active).map(o => [o.params[p.name], o.value]) },
    ],
    marks: best ? [{ x: best.params[p.name], label: "recommendation", color: "#16a34a" }] : [],
    note: "The model at the current time; the green line is the recommendation.",
  });
}

/// Evenly spaced values of a parameter over its box (log-spaced on a log scale).
function parameterGrid(p, n) {
  return Array.from({ length: n }, (_, i) => {
    const u = i / (n - 1);
    const v = p.scale === "log" ? Math.exp(Math.log(p.low) + u * (Math.log(p.high) - Math.log(p.low))) : p.low + u * (p.high - p.low);
    return p.type === "int" ? Math.round(v) : v;
  });
}

/// A blue (low) to yellow (high) colour for u in [0, 1].
function ramp(u) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.min(Math.max(u, 0), 1) * (stops.length - 1);
  const i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/// The posterior mean and standard deviation over a two-parameter box at the current
/// time, as two heat maps, with the active observations and the recommendation.
async function posterior2d(grid, session, timeline, best) {
  const [px, py] = session.parameters;
  const n = 24;
  const xs = parameterGrid(px, n), ys = parameterGrid(py, n);
  const points = ys.flatMap(y => xs.map(x => ({ [px.name]: x, [py.name]: y })));
  const prediction = await api(`/v1/sessions/${session.id}/predict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ points }) });
  for (const [key, label] of [["mean", "Posterior mean"], ["std", "Posterior standard deviation"]]) {
    const values = prediction.predictions.map(q => q[key]);
    const lo = Math.min(...values), hi = Math.max(...values);
    const card = el("div", { class: "card chart" });
    card.dataset.chart = "posterior-" + key;
    card.append(el("h2", { text: `${label} now (t = ${fmtTime(prediction.t)})` }));
    const W = 640, H = 300, L = 62, R = 70, T = 10, B = 34;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
    const cw = (W - L - R) / n, ch = (H - T - B) / n;
    const cells = svg("g");
    values.forEach((v, k) => {
      const i = k % n, j = Math.floor(k / n);
      cells.append(svg("rect", { x: (L + i * cw).toFixed(1), y: (H - B - (j + 1) * ch).toFixed(1), width: (cw + 0.5).toFixed(1), height: (ch + 0.5).toFixed(1), fill: ramp(hi > lo ? (v - lo) / (hi - lo) : 0.5) }));
    });
    root.append(cells);
    const sx = v => L + (px.scale === "log" ? Math.log(v / px.low) / Math.log(px.high / px.low) : (v - px.low) / (px.high - px.low)) * (W - L - R);
    const sy = v => H - B - (py.scale === "log" ? Math.log(v / py.low) / Math.log(py.high / py.low) : (v - py.low) / (py.high - py.low)) * (H - T - B);
    const dots = svg("g", { fill: "#fff", stroke: "#111827", "stroke-width": 0.8 });
    for (const o of timeline.observations.filter(o => o.active)) dots.append(svg("circle", { cx: sx(o.params[px.name]).toFixed(1), cy: sy(o.params[py.name]).toFixed(1), r: 2.5 }));
    root.append(dots);
    if (best) {
      const bx = sx(best.params[px.name]), by = sy(best.params[py.name]);
      root.append(svg("path", { d: `M${bx - 7},${by}H${bx + 7}M${bx},${by - 7}V${by + 7}`, stroke: "#dc2626", "stroke-width": 2.5 }));
    }
    const axis = svg("g", { class: "axis" });
    for (const [p, horizontal] of [[px, true], [py, false]]) {
      for (const v of niceTicks(p.low, p.high, 5)) {
        if (v < p.low || v > p.high) continue;
        const t = horizontal ? svg("text", { x: sx(v), y: H - B + 14, "text-anchor": "middle" }) : svg("text", { x: L - 6, y: sy(v) + 4, "text-anchor": "end" });
        t.textContent = fmt(v, 3);
        axis.append(t);
      }
    }
    const xl = svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }); xl.textContent = px.name;
    const yl = svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` }); yl.textContent = py.name;
    axis.append(xl, yl);
    for (let k = 0; k <= 10; k++) axis.append(svg("rect", { x: W - R + 14, y: (H - B - (k + 1) * (H - T - B) / 11).toFixed(1), width: 12, height: ((H - T - B) / 11 + 0.5).toFixed(1), fill: ramp(k / 10) }));
    const top = svg("text", { x: W - R + 30, y: T + 10 }); top.textContent = fmt(hi, 3);
    const bottom = svg("text", { x: W - R + 30, y: H - B }); bottom.textContent = fmt(lo, 3);
    axis.append(top, bottom);
    root.append(axis);
    const overlay = svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent", class: "overlay" });
    overlay.addEventListener("mousemove", event => {
      const box = root.getBoundingClientRect();
      const u = ((event.clientX - box.left) / box.width * W - L) / (W - L - R);
      const w = (H - B - (event.clientY - box.top) / box.height * H) / (H - T - B);
      const i = Math.min(n - 1, Math.max(0, Math.round(u * (n - 1)))), j = Math.min(n - 1, Math.max(0, Math.round(w * (n - 1))));
      const q = prediction.predictions[j * n + i];
      const tip = tooltip();
      tip.textContent = `${px.name} = ${fmt(xs[i])}, ${py.name} = ${fmt(ys[j])}\nmean: ${fmt(q.mean)}\nstd: ${fmt(q.std)}`;
      tip.hidden = false;
      tip.style.left = (event.clientX + 14) + "px";
      tip.style.top = (event.clientY + 10) + "px";
    });
    overlay.addEventListener("mouseleave", () => { tooltip().hidden = true; });
    root.append(overlay);
    card.append(root);
    card.append(el("p", { class: "note", text: key === "mean" ? "Where the model believes the objective is high now; white dots: active observations; red cross: the recommendation." : "Where the model is unsure now: forgotten or never-sampled regions." }));
    grid.append(card);
  }
}

/// One CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
function csvField(value) {
  const text = value === null || value === undefined ? "" : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/// Every observation (`kind` observation), then the runs that ended without a value
/// (`failed`, `abandoned`: the newest 20,000, as the timeline keeps them), as CSV.
async function exportObservationsCsv(session) {
  const names = session.parameters.map(p => p.name);
  const header = ["kind", "seq", "t", ...names, "value", "regret", "active", "removed_t", "removed_reason", "reason", "metadata"];
  const json = metadata => metadata ? JSON.stringify(metadata) : null;
  const rows = [];
  let after = 0;
  for (;;) {
    const page = await api(`/v1/sessions/${session.id}/observations?include_pruned=true&limit=10000&after=${after}`);
    for (const o of page.observations) {
      rows.push(["observation", o.seq, o.t, ...names.map(n => o.params[n]), o.value, o.regret, o.active, o.removed_t, o.removed_reason, null, json(o.metadata)]);
    }
    if (page.next_after === undefined || page.next_after === null) break;
    after = page.next_after;
  }
  const timeline = await api(`/v1/sessions/${session.id}/timeline?points=20000`);
  for (const r of timeline.ended_runs) {
    rows.push([r.kind, null, r.t, ...names.map(n => r.params[n]), null, null, false, null, null, r.reason, json(r.metadata)]);
  }
  const lines = [header, ...rows].map(row => row.map(csvField).join(","));
  const url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }));
  const a = el("a", { href: url, download: session.name + "-observations.csv" });
  document.body.append(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
}

// ---------------------------------------------------------------------------------------
// Signing in: the key is kept in this browser only and sent as a bearer token; the
// server shows only its tenant's sessions (all of them to an admin key).

function loginView(main, message) {
  document.getElementById("crumb").textContent = "sign in";
  const input = el("input", { type: "password", id: "api-key", autocomplete: "off", placeholder: "tvbo_…", "aria-label": "API key", size: "60" });
  const form = el("form", { class: "login" },
    el("label", { for: "api-key", text: "API key" }), input, el("button", { type: "submit", text: "Sign in" }));
  form.addEventListener("submit", event => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    localStorage.setItem(KEY_STORAGE, key);
    location.reload();
  });
  main.replaceChildren(el("h1", { text: "Sign in" }),
    el("p", { class: "muted", text: "This server needs an API key (make one with: tvbo keys create --name NAME). It stays in this browser." }),
    ...(message ? [el("p", { class: "error", text: message })] : []), form);
  input.focus();
}

function signOutButton() {
  const button = el("button", { id: "sign-out", class: "link", text: "sign out" });
  button.addEventListener("click", () => { localStorage.removeItem(KEY_STORAGE); location.reload(); });
  return button;
}

window.addEventListener("DOMContentLoaded", () => {
  const main = document.getElementById("main");
  if (authRequired() && !storedKey()) {
    loginView(main);
    return;
  }
  if (storedKey()) document.querySelector("header").append(signOutButton());
  const view = document.body.dataset.view;
  const run = view === "session" ? sessionView(main, document.body.dataset.session) : sessionsView(main);
  run.catch(e => {
    if (e.status === 401) {
      localStorage.removeItem(KEY_STORAGE);
      loginView(main, "The key was refused: " + e.message);
      return;
    }
    console.error(e);
    main.replaceChildren(el("h1", { text: "Something went wrong" }), el("p", { class: "muted", text: e.message }));
  });
});
