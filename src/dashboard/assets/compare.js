// tvbo dashboard: sessions side by side, `/compare?sessions=A,B,…` (picked on the list):
// their regret over each one's own time and the setting each recommended, overlaid, one
// colour per session, and a table of where each stands now.
"use strict";

/// The most sessions one comparison draws (their colours stay apart).
const COMPARE_MAX = 8;
const COMPARE_COLORS = ["#2563eb", "#ea580c", "#16a34a", "#7c3aed", "#dc2626", "#0d9488", "#ca8a04", "#db2777"];
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/// The session ids of the address's `sessions=` (comma-separated), each once, in order.
function comparedIds() {
  const listed = (new URLSearchParams(location.search).get("sessions") || "").split(",").map(s => s.trim().toLowerCase()).filter(Boolean);
  return [...new Set(listed)];
}

/// Labels that tell sessions apart: the name, and where two share it, the id's first
/// eight characters after it.
function distinctNames(sessions) {
  const count = new Map();
  for (const s of sessions) count.set(s.name, (count.get(s.name) || 0) + 1);
  return sessions.map(s => count.get(s.name) > 1 ? `${s.name} (${s.id.slice(0, 8)})` : s.name);
}

async function compareView(main) {
  document.getElementById("crumb").textContent = "/ compare";
  document.title = "Compare · tvbo";
  const asked = comparedIds();
  const notes = asked.filter(id => !UUID_PATTERN.test(id)).map(id => `${id}: not a session id.`);
  const valid = asked.filter(id => UUID_PATTERN.test(id));
  const ids = valid.slice(0, COMPARE_MAX);
  if (valid.length > ids.length) notes.push(`At most ${COMPARE_MAX} sessions are compared: the first ${COMPARE_MAX} listed.`);
  if (!ids.length) {
    main.replaceChildren(el("h1", { text: "Compare sessions" }), ...notes.map(text => el("p", { class: "muted", text })),
      el("p", { class: "muted", text: "Pick two or more sessions on the list (the boxes at the start of each row), then Compare; or give their ids here as ?sessions=ID,ID." }),
      el("p", {}, el("a", { href: base() + "/", text: "All sessions" })));
    return;
  }
  // Each session with its timeline and recommendation; one that does not answer is named.
  const loaded = await Promise.all(ids.map(async id => {
    try {
      const session = await api("/v1/sessions/" + id);
      const [timeline, best] = await Promise.all([api(`/v1/sessions/${id}/timeline`),
        session.dataset_size > 0 || session.algorithm.priors ? api(`/v1/sessions/${id}/best`).catch(() => null) : null]);
      return { session, timeline, best };
    } catch (e) {
      if (e.status === 401) throw e;
      notes.push(`${id}: ${e.message}.`);
      return null;
    }
  }));
  const rows = loaded.filter(Boolean);
  const labels = distinctNames(rows.map(r => r.session));
  rows.forEach((r, k) => { r.label = labels[k]; r.color = COMPARE_COLORS[k]; });
  const asOf = new Date();
  main.replaceChildren(el("h1", { text: `Comparing ${rows.length} session${rows.length === 1 ? "" : "s"}` }),
    el("p", { class: "muted", id: "compare-notes", text: [`As of ${asOf.toLocaleTimeString()}: reload for newer data.`,
      ...(rows.length < asked.length ? [`Drawn: ${rows.length} of the ${asked.length} sessions asked for.`] : []), ...notes].join(" ") }),
    compareTable(rows));
  const grid = el("div", { class: "grid" });
  main.append(grid);
  const board = new Board(grid);
  board.start();
  compareCharts(board, rows);
  board.done();
  document.body.dataset.rendered = "compare";
}

/// Where each session stands now: its colour and name (a link to its page), algorithm,
/// observations, status, regrets and its recommendation.
function compareTable(rows) {
  const head = ["session", "algorithm", "observations", "status", "regret, recent", "regret, all time", "run now"];
  const body = rows.map(({ session, timeline, best, label, color }) => {
    const recommendation = best ? session.parameters.filter(p => p.name in best.params).map(p => `${p.name} = ${fmt(best.params[p.name])}`).join(", ") : "–";
    return el("tr", { "data-session": session.id },
      el("td", { class: "name" }, swatch(color), el("a", { href: base() + "/sessions/" + session.id, text: label })),
      el("td", { text: algorithmName(session) }), el("td", { class: "num", text: String(session.observation_count) }),
      el("td", { text: (STATUS_WORDS[timeline.tracking.status] || timeline.tracking.status) }),
      el("td", { class: "num", text: fmt(timeline.tracking.recent_regret) }), el("td", { class: "num", text: fmt(timeline.average_regret) }),
      el("td", { text: recommendation }));
  });
  return el("div", { class: "card wide" }, el("div", { class: "scroll" },
    el("table", { id: "compare-table" }, el("thead", {}, el("tr", {}, ...head.map(h => el("th", { text: h })))), el("tbody", {}, ...body))));
}

/// A square of the session's colour (set through the style object: the pages' policy
/// forbids inline style attributes).
function swatch(color) {
  const node = el("span", { class: "swatch", "aria-hidden": "true" });
  node.style.background = color;
  return node;
}

/// The overlaid charts: rolling and cumulative regret, then, for each parameter, the
/// setting each session's model recommended over its time.
function compareCharts(board, rows) {
  const units = new Set(rows.map(r => r.session.goal)).size > 1 ? " Goals differ: each regret is in its own session's units." : "";
  board.chart({ id: "compare-rolling", title: "Rolling regret", time: true, wide: true, yLabel: "regret", xLabel: "session time",
    series: rows.map(r => ({ name: r.label, color: r.color, width: 2, points: r.timeline.tracking.rolling.map(p => [p.t, p.regret, { label: `mean of ${p.observations}` }]) })),
    note: "Each session's rolling mean regret (the server's, over every observation), against its own time since it started: compare sessions of one objective, whose regrets share units." + units,
    empty: "no regret yet" });
  board.chart({ id: "compare-cumulative", title: "Average regret since the start", time: true, yLabel: "regret", xLabel: "session time",
    series: rows.map(r => ({ name: r.label, color: r.color, width: 1.6, points: cumulativeRegret(r.timeline) })),
    note: "The mean of every regret up to each time: the lower line kept its system closer to its best setting so far.",
    empty: "no regret yet" });
  const first = new Map();
  for (const r of rows) for (const p of r.session.parameters) if (!first.has(p.name)) first.set(p.name, p);
  for (const [name, p] of first) {
    const axis = parameterAxis(p);
    // The sessions with this parameter and a recorded optimum (random search records none).
    const series = rows.map(r => ({ name: r.label, mode: "step", color: r.color, width: 1.8,
      points: r.timeline.steps.filter(s => s.snapshot && s.snapshot.optimum && name in s.snapshot.optimum.params)
        .map(s => [s.snapshot.optimum.t, axis.value(s.snapshot.optimum.params[name])]).filter(q => q[1] !== -1) }))
      .filter(s => s.points.length);
    if (!series.length) continue;
    const without = rows.length - series.length;
    board.chart({ id: "compare-param-" + name, title: `Recommended ${name}`, time: true, yLabel: name, xLabel: "session time",
      logY: axis.log, yCategories: axis.categories, extraY: axis.extra, series,
      note: `The posterior argmax of each session's model as it was at each suggest (none during a warm-up). ${axis.describe}`.trim() +
        (without ? ` ${without} of the sessions recorded none for ${name} (random search, a warm-up, or no such parameter).` : ""),
      empty: "no recommendation recorded yet" });
  }
}
