// tvbo dashboard: a session's events (docs/events.md) as marks on every time chart. The
// page keeps them in one store, read on load from GET /v1/sessions/{id}/events and added
// to live from the event stream (stream.js); each time chart draws the ones in its time
// window: a dashed vertical line and a coloured ▼ at the plot's top, events closer than
// a few pixels sharing one mark (a frequent kind: a rug of ticks along the top), named in
// the hover read-out and the chart's table.
"use strict";

/// Each kind's colour and words; a kind this page does not know is drawn grey.
const EVENT_KINDS = {
  "optimum-moved": ["#db2777", "optimum moved"],
  "model-reset": ["#dc2626", "model reset"],
  "dataset-full": ["#7c3aed", "dataset full"],
  "prior-eliminated": ["#0d9488", "prior eliminated"],
  "tracking-lost": ["#ea580c", "tracking lost"],
  "tracking-regained": ["#16a34a", "tracking regained"],
  "drift-rate-changed": ["#ca8a04", "drift rate changed"],
  "session-idle": ["#9aa3ad", "session idle"],
};
const eventColor = kind => (EVENT_KINDS[kind] || ["#64748b"])[0];
const eventWord = kind => (EVENT_KINDS[kind] || [null, String(kind).replaceAll("-", " ")])[1];
/// Events closer than this (pixels) share a mark.
const EVENT_MERGE_PX = 5;
/// Past this many events of a kind in view, that kind is drawn as a rug of ticks.
const EVENT_RUG_MIN = 30;

/// The page's events, by their session seq (each once, however it arrived).
const sessionEvents = { bySeq: new Map(), sorted: [], legend: null, onChange: null };

/// Adds events (history pages, the stream's, a catch-up) and draws every time chart
/// again when one is new.
function addSessionEvents(events) {
  let added = 0;
  for (const e of events) {
    if (!e || typeof e.seq !== "number" || !Number.isFinite(e.t) || sessionEvents.bySeq.has(e.seq)) continue;
    sessionEvents.bySeq.set(e.seq, e);
    added++;
  }
  if (!added) return 0;
  sessionEvents.sorted = [...sessionEvents.bySeq.values()].sort((a, b) => a.t - b.t || a.seq - b.seq);
  for (const c of timeWindow.charts) c.draw();
  drawEventLegend();
  document.body.dataset.events = String(sessionEvents.bySeq.size);
  return added;
}

/// The newest seq held (0 for none), and the largest global stream id seen in them.
const lastEventSeq = () => Math.max(0, ...sessionEvents.bySeq.keys());
const lastEventId = () => Math.max(0, ...[...sessionEvents.bySeq.values()].map(e => Number(e.id) || 0));

/// Reads the session's events after the newest held, every page, into the store.
async function loadSessionEvents(id) {
  let after = lastEventSeq();
  for (;;) {
    const page = await api(`/v1/sessions/${id}/events?after=${after}&limit=10000`);
    addSessionEvents(page.events || []);
    if (page.next_after === undefined || page.next_after === null || page.next_after <= after) break;
    after = page.next_after;
  }
}

/// One line of words about an event (the read-out and the table): its kind, and what
/// its data says (for optimum-moved, the new setting).
function describeEvent(e) {
  const d = e.data || {};
  const params = p => Object.entries(p || {}).map(([k, v]) => `${k} = ${fmt(v)}`).join(", ");
  let detail = "";
  if (e.kind === "optimum-moved" && d.to) detail = `to ${params(d.to.params)} (mean ${fmt(d.to.mean)})` + (d.from ? `, from ${params(d.from.params)}` : "");
  else if (e.kind === "model-reset" && d.resets !== undefined) detail = `${d.resets} so far`;
  else if (e.kind === "dataset-full" && d.active !== undefined) detail = `${d.active} active, cap ${d.cap}`;
  else if (e.kind === "prior-eliminated" && d.name !== undefined) detail = `${d.name}, ${d.remaining} left`;
  else if (Object.keys(d).length) detail = dataWords(d);
  return eventWord(e.kind) + (detail ? ": " + detail : "");
}

/// The legend above the charts: each kind held, its colour and count.
function drawEventLegend() {
  const node = sessionEvents.legend;
  if (!node) return;
  const counts = new Map();
  for (const e of sessionEvents.sorted) counts.set(e.kind, (counts.get(e.kind) || 0) + 1);
  node.hidden = !counts.size;
  node.replaceChildren(el("span", { class: "muted", text: "Events:" }),
    ...[...counts].map(([kind, n]) => {
      const swatch = el("span", { class: "event-swatch", text: "▼" });
      swatch.style.color = eventColor(kind);
      return el("span", { class: "event-kind", "data-kind": kind }, swatch, `${eventWord(kind)} ${n}`);
    }),
    el("span", { class: "muted", text: "(on the time charts; hover for each)" }));
}

/// Draws the events in [x0, x1] under `plot` (the series' group: unclipped, so that a
/// mark at the window's edge shows whole), X mapping session time to pixels, between
/// `top` and `bottom`, `right` the plot's right edge; returns the read-out lines of the
/// events near pixel px. A kind with more than EVENT_RUG_MIN events in view is drawn as
/// a rug of short ticks along the plot's top instead, so that a session that resets
/// every few steps keeps its data readable and its rarer events stand out.
function drawEventMarks(plot, X, x0, x1, top, bottom, right) {
  const visible = sessionEvents.sorted.filter(e => e.t >= x0 && e.t <= x1);
  if (!visible.length) return () => [];
  const perKind = new Map();
  for (const e of visible) perKind.set(e.kind, (perKind.get(e.kind) || 0) + 1);
  const clusters = [], ticks = [];
  for (const e of visible) {
    const px = X.at(e.t);
    if (perKind.get(e.kind) > EVENT_RUG_MIN) { ticks.push({ px, e }); continue; }
    const last = clusters[clusters.length - 1];
    if (last && px - last.px0 < EVENT_MERGE_PX) { last.events.push(e); last.px1 = px; } else clusters.push({ px0: px, px1: px, events: [e] });
  }
  const g = svg("g", { class: "events" });
  // The rug: one tick per pixel column and kind.
  const drawn = new Set();
  for (const { px, e } of ticks) {
    const column = Math.round(px) + " " + e.kind;
    if (drawn.has(column)) continue;
    drawn.add(column);
    g.append(svg("line", { class: "event-tick", "data-kind": e.kind, x1: Math.round(px), x2: Math.round(px), y1: top, y2: top + 7, stroke: eventColor(e.kind), "stroke-width": 1.5 }));
  }
  // Labels go beside their marks, left to right, wherever one fits clear of the last
  // (so a cluster of events does not silence the labels of the others).
  let labelEnd = -Infinity;
  for (const c of clusters) {
    const x = ((c.px0 + c.px1) / 2).toFixed(1);
    const kinds = [...new Set(c.events.map(e => e.kind))];
    // The line in the first kind's colour; one triangle per kind, side by side, so that
    // merged kinds keep their colours (grey is a kind this page does not know).
    const color = eventColor(kinds[0]);
    const mark = svg("g", { class: "event-mark", "data-kinds": kinds.join(" "), "data-count": c.events.length });
    mark.append(svg("line", { x1: x, x2: x, y1: top, y2: bottom, stroke: color, "stroke-width": 1.2, "stroke-opacity": 0.55, "stroke-dasharray": "3 3" }));
    const size = c.events.length > 1 ? 5 : 4;
    const first = +x - (kinds.length - 1) * size;
    kinds.forEach((kind, k) => {
      const at = (first + 2 * size * k).toFixed(1);
      mark.append(svg("path", { d: `M${at},${top + 2 * size}l${-size},${-2 * size}h${2 * size}z`, fill: eventColor(kind) }));
    });
    const words = kinds.map(eventWord).join(", ") + (c.events.length > 1 ? ` ×${c.events.length}` : "");
    const width = textWidth(words);
    // Beside the mark, on its left near the right edge.
    const left = +x + 7 + width > right;
    const start = left ? +x - 7 - width - (kinds.length - 1) * size : +x + 7 + (kinds.length - 1) * size;
    if (start > labelEnd + 8) {
      const label = svg("text", { x: left ? start + width : start, y: top + 9, class: "event-label", fill: color, "text-anchor": left ? "end" : "start" });
      label.textContent = words;
      mark.append(label);
      labelEnd = start + width;
    }
    g.append(mark);
  }
  plot.before(g);
  return px => {
    const near = clusters.filter(c => px >= c.px0 - 6 && px <= c.px1 + 6).flatMap(c => c.events)
      .concat(ticks.filter(t => Math.abs(t.px - px) <= 3).map(t => t.e));
    const lines = near.slice(0, 4).map(e => `▼ ${fmtTime(e.t)} ${describeEvent(e)}`);
    if (near.length > 4) lines.push(`▼ and ${near.length - 4} more events here`);
    return lines;
  };
}

/// The events in [x0, x1] as rows of a chart's table.
function eventTableRows(x0, x1) {
  return sessionEvents.sorted.filter(e => e.t >= x0 && e.t <= x1)
    .map(e => el("tr", { class: "event-row" }, el("td", { text: "event" }), el("td", { text: fmtTime(e.t) }), el("td", { text: describeEvent(e) }), el("td")));
}
