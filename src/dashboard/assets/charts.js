// tvbo dashboard: hand-made SVG charts (docs/dashboard.md says why). A chart is a card
// drawn again in place when its data changes or its width does: the card keeps its size,
// the page its scroll position, the time window its zoom and the pointer its read-out.
// Every chart has a table view of its numbers, reachable by keyboard.
"use strict";

const COLORS = ["#2563eb", "#ea580c", "#16a34a", "#7c3aed", "#0d9488", "#db2777", "#ca8a04", "#475569"];
const FORGET_COLORS = { reset: "#dc2626", budget: "#7c3aed", relevance: "#ea580c", expired: "#9aa3ad" };
/// Bins of the forgetting strip, whatever the session's size.
const FORGET_BINS = 40;

const tooltip = () => document.getElementById("tooltip");
function showTip(event, text) {
  const tip = tooltip();
  tip.textContent = text;
  tip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 4);
  tip.style.left = Math.max(x, 4) + "px";
  tip.style.top = (event.clientY + 10) + "px";
}
function hideTip() { tooltip().hidden = true; }

/// The shared time window of every time chart: null for "everything".
const timeWindow = { range: null, charts: new Set() };
function setTimeWindow(range) {
  timeWindow.range = range;
  for (const c of timeWindow.charts) c.draw();
}

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) { hi = lo + 1; lo = lo - 1; }
  const step0 = (hi - lo) / Math.max(count, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0) || step0;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return ticks;
}

/// An axis over [lo, hi] onto pixels [a, b]: linear, logarithmic (`log`) or of
/// categories (`categories`: index i at the middle of its band).
function axisScale(kind, lo, hi, a, b, categories) {
  if (categories) {
    const n = categories.length;
    return { at: v => a + (v + 0.5) / n * (b - a), inv: p => (p - a) / (b - a) * n - 0.5, ticks: () => categories.map((_, i) => i), label: i => categories[i] ?? "" };
  }
  if (kind === "log" && lo > 0 && hi > lo) {
    const l0 = Math.log10(lo), l1 = Math.log10(hi);
    return {
      at: v => a + (Math.log10(Math.max(v, 1e-300)) - l0) / (l1 - l0) * (b - a),
      inv: p => Math.pow(10, l0 + (p - a) / (b - a) * (l1 - l0)),
      ticks: count => logTicks(lo, hi, count),
      label: v => fmt(v, 3),
    };
  }
  if (!(hi > lo)) hi = lo + 1;
  return { at: v => a + (v - lo) / (hi - lo) * (b - a), inv: p => lo + (p - a) / (b - a) * (hi - lo), ticks: count => niceTicks(lo, hi, count), label: v => fmt(v, 3) };
}

/// Ticks of a log axis: powers of ten, with 2 and 5 between them when there are few.
function logTicks(lo, hi, count) {
  const ticks = [];
  const decades = Math.log10(hi / lo);
  const mantissas = decades < 1.5 ? [1, 2, 5] : [1];
  const stride = Math.max(1, Math.ceil(decades / Math.max(count, 1)));
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    if (mantissas.length === 1 && e % stride !== 0) continue;
    for (const m of mantissas) {
      const v = m * Math.pow(10, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push(v);
    }
  }
  if (ticks.length < 2) return niceTicks(lo, hi, count).filter(v => v > 0);
  return ticks;
}

/// A card's "table" button and the box it opens: `card.fillTable()` fills the box when
/// it opens (and the card again on each update while it is open).
function tableToggle(card) {
  const button = el("button", { class: "link table-toggle", type: "button", "aria-expanded": "false", text: "table" });
  button.addEventListener("click", () => card.toggleTable());
  return [button, el("div", { class: "chart-table", hidden: true })];
}

function toggleTable(card) {
  const show = card.tableBox.hidden;
  card.tableBox.hidden = !show;
  card.tableButton.setAttribute("aria-expanded", String(show));
  card.tableButton.textContent = show ? "chart only" : "table";
  if (show) card.fillTable();
}

/// A table of `headers` and `rows` (element rows, or arrays of cell texts), the first
/// 2000 rows, and a note saying how to see the rest when there are more.
function tableNodes(headers, rows, rest) {
  const shown = rows.slice(0, 2000).map(r => Array.isArray(r) ? el("tr", {}, ...r.map(c => el("td", { text: c }))) : r);
  const table = el("table", {}, el("thead", {}, el("tr", {}, ...headers.map(h => el("th", { text: h })))), el("tbody", {}, ...shown));
  return [el("div", { class: "scroll" }, table),
    rows.length > shown.length ? el("p", { class: "note", text: `The first ${shown.length} of ${rows.length} rows; ${rest}.` }) : ""];
}

/// A chart card on `container`. spec: {id, title, xLabel, yLabel, time (x is session
/// time: linked zoom, and the session's events drawn: events.js), series: [{name, points: [[x, y, extra?]], mode:
/// "line"|"points"|"step", color, dash, width, radius, unscaled}], strip (forgetting events under
/// the time axis), note, caption (drawn in the plot's corner), logX, logY, xCategories,
/// yCategories, xMin, yMin, extraX, extraY, wide, empty}. `update(spec)` draws it again
/// in place.
/// The width in pixels of `text` in the charts' 11 px labels (measured in the page's
/// font), for laying out legends and tick labels before the chart is drawn.
function textWidth(text) {
  const context = textWidth.context || (textWidth.context = document.createElement("canvas").getContext("2d"));
  context.font = `11px ${getComputedStyle(document.body).fontFamily}`;
  return context.measureText(text).width;
}

class Chart {
  constructor(container, spec) {
    this.card = el("div", { class: "card chart" + (spec.wide ? " wide" : "") });
    this.card.dataset.chart = spec.id || spec.title;
    this.heading = el("h2", { text: spec.title });
    [this.tableButton, this.tableBox] = tableToggle(this);
    this.holder = el("div", { class: "plot" });
    this.noteNode = el("p", { class: "note" });
    this.card.append(el("div", { class: "card-head" }, this.heading, this.tableButton), this.holder, this.tableBox, this.noteNode);
    container.append(this.card);
    this.hover = null;
    this.width = 0;
    new ResizeObserver(() => {
      const width = Math.round(this.holder.clientWidth);
      if (width && width !== this.width) this.draw();
    }).observe(this.holder);
    this.update(spec);
  }

  update(spec) {
    this.spec = spec;
    this.heading.textContent = spec.title;
    this.noteNode.textContent = spec.note || "";
    this.noteNode.hidden = !spec.note;
    if (spec.time) timeWindow.charts.add(this); else timeWindow.charts.delete(this);
    this.draw();
    if (!this.tableBox.hidden) this.fillTable();
  }

  remove() { timeWindow.charts.delete(this); this.card.remove(); }

  toggleTable() { toggleTable(this); }

  /// The numbers of every series (in the time window), as a table.
  fillTable() {
    const spec = this.spec;
    const [x0, x1] = spec.time && timeWindow.range ? timeWindow.range : [-Infinity, Infinity];
    // Session time on the x axis of a time chart; values (regret, n*, a setting, a
    // lengthscale) in their own units, never as a duration.
    const xText = v => spec.xCategories ? (spec.xCategories[v] ?? v) : spec.time ? fmtTime(v) : fmt(v);
    const yText = v => spec.yCategories ? (spec.yCategories[v] ?? v) : fmt(v);
    const rows = [];
    for (const s of spec.series) {
      for (const p of s.points) {
        if (!(p[0] >= x0 && p[0] <= x1) || !Number.isFinite(p[1])) continue;
        rows.push(el("tr", {}, el("td", { text: s.name }), el("td", { text: xText(p[0]) }),
          el("td", { text: yText(p[1]) }), el("td", { text: p[2] && p[2].label || "" })));
      }
    }
    for (const f of spec.strip || []) {
      if (f.t_end < x0 || f.t > x1) continue;
      rows.push(el("tr", {}, el("td", { text: "forgotten (" + f.reason + ")" }), el("td", { text: fmtTime(f.t) + (f.t_end > f.t ? " – " + fmtTime(f.t_end) : "") }), el("td", { text: String(f.count) }), el("td")));
    }
    if (spec.time) rows.push(...eventTableRows(x0, x1));
    this.tableBox.replaceChildren(...tableNodes(["series", spec.xLabel || (spec.time ? "session time" : "x"), spec.yLabel || "y", "note"], rows,
      "zoom the time window for the rest"));
  }

  draw() {
    const spec = this.spec;
    this.width = Math.round(this.holder.clientWidth) || (spec.wide ? 1300 : 640);
    const W = this.width;
    const narrow = W < 480;
    const stripH = spec.strip ? 26 : 0;
    const L = narrow ? 48 : 62, R = 12;
    // The legend, laid out first: its rows push the plot down.
    const legendItems = [];
    let lx = L, row = 0;
    spec.series.forEach((s, i) => {
      // A series may share another's legend entry (`legend: null`) or show a shorter one.
      const name = s.legend === undefined ? s.name : s.legend;
      if (!name) return;
      const width = 14 + textWidth(name) + 14;
      if (lx + width > W - R && lx > L) { lx = L; row += 1; }
      legendItems.push({ s, name, x: lx, y: 6 + 12 * row, color: s.color || COLORS[i % COLORS.length] });
      lx += width;
    });
    const T = 22 + 12 * row, B = 34 + stripH, H = (narrow ? 210 : 250) + stripH + 12 * row;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": spec.title });
    const finite = p => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!spec.logY || p[1] > 0) && (!spec.logX || p[0] > 0);
    // A series marked `unscaled` is drawn but does not set the axes' ranges.
    const all = spec.series.filter(s => !s.unscaled).flatMap(s => s.points.filter(finite));
    let xs = all.map(p => p[0]).concat(spec.extraX || []);
    let [x0, x1] = xs.length ? [Math.min(...xs), Math.max(...xs)] : [0, 1];
    if (spec.time && timeWindow.range) [x0, x1] = timeWindow.range;
    if (spec.xMin !== undefined) x0 = Math.min(x0, spec.xMin);
    if (!(x1 > x0)) x1 = x0 + (spec.logX ? x0 : 1);
    const visible = all.filter(p => p[0] >= x0 && p[0] <= x1);
    let ys = visible.map(p => p[1]).concat(spec.extraY || []);
    if (spec.logY) ys = ys.filter(y => y > 0);
    let [y0, y1] = ys.length ? [Math.min(...ys), Math.max(...ys)] : [spec.logY ? 0.1 : 0, 1];
    if (spec.yMin !== undefined) y0 = Math.min(y0, spec.yMin);
    if (!spec.yCategories) {
      if (y1 - y0 <= 1e-9 * Math.max(Math.abs(y0), Math.abs(y1), 1e-300)) {
        const c = y0;
        if (spec.logY) { y0 = c / 2; y1 = c * 2; } else { y1 = c + 0.5 * (Math.abs(c) || 1); y0 = c - 0.5 * (Math.abs(c) || 1); }
      }
      if (!spec.logY) { const pad = (y1 - y0) * 0.06; y0 -= pad; y1 += pad; } else { y0 /= 1.15; y1 *= 1.15; }
    }
    const X = axisScale(spec.logX ? "log" : "linear", x0, x1, L, W - R, spec.xCategories);
    const Y = axisScale(spec.logY ? "log" : "linear", y0, y1, H - B, T, spec.yCategories);
    const plotBottom = H - B;
    // Axes and grid.
    const axis = svg("g", { class: "axis" });
    const grid = svg("g", { class: "grid" });
    root.append(grid, axis);
    for (const t of X.ticks(Math.max(2, Math.floor((W - L - R) / 90)))) {
      const x = X.at(t);
      if (x < L - 1 || x > W - R + 1) continue;
      grid.append(svg("line", { x1: x, x2: x, y1: T, y2: plotBottom }));
      const words = spec.xCategories ? X.label(t) : spec.time ? fmtTime(t) : X.label(t);
      // A label at an edge of the chart ends (or starts) at its tick instead of leaving it.
      const half = textWidth(words) / 2;
      const anchor = x + half > W - 1 ? "end" : x - half < 1 ? "start" : "middle";
      const label = svg("text", { x, y: plotBottom + 14, "text-anchor": anchor });
      label.textContent = words;
      axis.append(label);
    }
    for (const t of Y.ticks(5)) {
      const y = Y.at(t);
      if (y < T - 1 || y > plotBottom + 1) continue;
      grid.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y }));
      const label = svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" });
      label.textContent = Y.label(t);
      axis.append(label);
    }
    axis.append(svg("line", { x1: L, x2: W - R, y1: plotBottom, y2: plotBottom }));
    axis.append(svg("line", { x1: L, x2: L, y1: T, y2: plotBottom }));
    const xl = svg("text", { x: (L + W - R) / 2, y: plotBottom + 28, "text-anchor": "middle" });
    xl.textContent = spec.xLabel || (spec.time ? "session time" : "");
    const yl = svg("text", { x: 12, y: (T + plotBottom) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + plotBottom) / 2})` });
    yl.textContent = spec.yLabel || "";
    axis.append(xl, yl);
    if (!visible.length) {
      const empty = svg("text", { x: (L + W - R) / 2, y: (T + plotBottom) / 2, "text-anchor": "middle", class: "empty" });
      empty.textContent = spec.empty || "no data yet";
      root.append(empty);
    }
    // Clip to the plot area.
    const clipId = "clip-" + (spec.id || "c").replace(/[^a-z0-9-]/gi, "") + "-" + Math.random().toString(36).slice(2, 8);
    const clip = svg("clipPath", { id: clipId });
    clip.append(svg("rect", { x: L, y: T - 2, width: W - L - R, height: plotBottom - T + 4 }));
    const defs = svg("defs");
    defs.append(clip);
    root.append(defs);
    const plot = svg("g", { "clip-path": `url(#${clipId})` });
    root.append(plot);
    for (const m of spec.marks || []) {
      if (m.x < x0 || m.x > x1) continue;
      // Solid: a dashed line with a ▼ is an event (events.js).
      const line = svg("line", { class: "mark", x1: X.at(m.x), x2: X.at(m.x), y1: T, y2: plotBottom, stroke: m.color || "#9aa3ad", "stroke-width": 1.5, "stroke-opacity": 0.8 });
      const title = svg("title"); title.textContent = m.label; line.append(title);
      plot.append(line);
    }
    // The session's events (events.js), under the data.
    const eventsAt = spec.time ? drawEventMarks(plot, X, x0, x1, T, plotBottom, W - R) : null;
    spec.series.forEach((s, i) => {
      const color = s.color || COLORS[i % COLORS.length];
      const pts = s.points.filter(finite);
      if (s.mode === "points") {
        const g = svg("g", { fill: color, "fill-opacity": s.opacity || 0.75 });
        for (const p of pts) {
          if (p[0] < x0 || p[0] > x1) continue;
          const extra = p[2] || {};
          g.append(svg("circle", { cx: X.at(p[0]).toFixed(1), cy: Y.at(p[1]).toFixed(1), r: extra.radius || s.radius || 2.2, fill: extra.color || color, "fill-opacity": extra.opacity || s.opacity || 0.75 }));
        }
        plot.append(g);
      } else if (pts.length) {
        let d = "";
        pts.forEach((p, j) => {
          const px = X.at(p[0]).toFixed(1), py = Y.at(p[1]).toFixed(1);
          if (j === 0) d += `M${px},${py}`;
          else if (s.mode === "step") d += `H${px}V${py}`;
          else d += `L${px},${py}`;
        });
        if (s.mode === "step" && pts.length) d += `H${(W - R).toFixed(1)}`;
        plot.append(svg("path", { d, fill: "none", stroke: color, "stroke-width": s.width || 1.6, "stroke-dasharray": s.dash || "" }));
      }
    });
    // A caption in the plot's corner: words that change with the data, kept out of the
    // note so that the card keeps its height.
    if (spec.caption) {
      const caption = svg("text", { x: W - R - 4, y: T + 12, "text-anchor": "end", class: "caption" });
      caption.textContent = spec.caption;
      root.append(caption);
    }
    const binsAt = spec.strip ? this.drawStrip(root, spec.strip, X, x0, x1, L, W - R, plotBottom + 36, stripH - 6) : null;
    // Legend, wrapped to the width.
    const legend = svg("g", { class: "legend" });
    for (const { s, name, x, y, color } of legendItems) {
      legend.append(svg(s.mode === "points" ? "circle" : "rect", s.mode === "points" ? { cx: x + 5, cy: y + 5, r: 4, fill: color } : { x, y: y + 3, width: 10, height: 4, fill: color }));
      const text = svg("text", { x: x + 14, y: y + 9 }); text.textContent = name;
      legend.append(text);
    }
    root.append(legend);
    // Hover read-out and drag-to-zoom.
    const cursor = svg("line", { class: "cursor", y1: T, y2: plotBottom, visibility: "hidden" });
    const brush = svg("rect", { class: "brush", y: T, height: plotBottom - T, width: 0, visibility: "hidden" });
    const overlay = svg("rect", { x: L, y: T, width: W - L - R, height: H - B - T + stripH, fill: "transparent", class: "overlay" });
    root.append(cursor, brush, overlay);
    const toX = event => { const box = root.getBoundingClientRect(); return (event.clientX - box.left) / box.width * W; };
    let dragFrom = null;
    const read = event => {
      const px = toX(event);
      const x = X.inv(px);
      cursor.setAttribute("x1", px); cursor.setAttribute("x2", px); cursor.setAttribute("visibility", "visible");
      const lines = [spec.time ? fmtTime(x) : spec.xCategories ? String(spec.xCategories[Math.round(x)] ?? "") : (spec.xLabel || "x") + " " + fmt(x)];
      for (const s of spec.series) {
        let best = null;
        for (const p of s.points) {
          if (!finite(p)) continue;
          if (best === null || Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
        }
        if (best) lines.push(`${s.name}: ${spec.yCategories ? spec.yCategories[best[1]] : fmt(best[1])}` + (best[2] && best[2].label ? ` (${best[2].label})` : ""));
      }
      if (binsAt) lines.push(...binsAt(x));
      if (eventsAt) lines.push(...eventsAt(px));
      showTip(event, lines.join("\n"));
      if (dragFrom !== null) {
        brush.setAttribute("x", Math.min(dragFrom, px)); brush.setAttribute("width", Math.abs(px - dragFrom));
        brush.setAttribute("visibility", "visible");
      }
    };
    overlay.addEventListener("mousemove", event => { this.hover = { clientX: event.clientX, clientY: event.clientY }; read(event); });
    overlay.addEventListener("mouseleave", () => { this.hover = null; hideTip(); cursor.setAttribute("visibility", "hidden"); dragFrom = null; brush.setAttribute("visibility", "hidden"); });
    if (spec.time) {
      overlay.addEventListener("mousedown", event => { dragFrom = toX(event); });
      overlay.addEventListener("mouseup", event => {
        if (dragFrom === null) return;
        const a = Math.min(dragFrom, toX(event)), b = Math.max(dragFrom, toX(event));
        dragFrom = null;
        brush.setAttribute("visibility", "hidden");
        if (b - a < 4) return;
        setTimeWindow([X.inv(a), X.inv(b)]);
      });
      overlay.addEventListener("dblclick", () => setTimeWindow(null));
    }
    this.holder.replaceChildren(root);
    // A redraw under the pointer reads the new data out where the pointer is.
    if (this.hover) read(this.hover);
  }

  /// Forgetting as a rate: observations forgotten per bin of the time window, one
  /// histogram path per reason, stacked, under the time axis; returns the read-out of
  /// the bin at session time x.
  drawStrip(root, events, X, x0, x1, left, right, top, height) {
    const width = (x1 - x0) / FORGET_BINS;
    const reasons = [...new Set(events.map(e => e.reason))].sort();
    const counts = reasons.map(() => new Array(FORGET_BINS).fill(0));
    for (const e of events) {
      if (e.t_end < x0 || e.t > x1) continue;
      const r = reasons.indexOf(e.reason);
      // A span's count is spread over the bins it covers.
      const a = Math.max(0, Math.min(FORGET_BINS - 1, Math.floor((Math.max(e.t, x0) - x0) / width)));
      const b = Math.max(a, Math.min(FORGET_BINS - 1, Math.floor((Math.min(e.t_end, x1) - x0) / width)));
      for (let k = a; k <= b; k++) counts[r][k] += e.count / (b - a + 1);
    }
    const totals = counts[0] ? counts[0].map((_, k) => counts.reduce((s, c) => s + c[k], 0)) : [];
    const peak = Math.max(1, ...totals);
    const g = svg("g", { class: "strip" });
    const label = svg("text", { x: left - 6, y: top + height - 2, "text-anchor": "end" });
    label.textContent = "forgot";
    g.append(label);
    g.append(svg("line", { x1: left, x2: right, y1: top + height, y2: top + height, class: "strip-base" }));
    const stacked = new Array(FORGET_BINS).fill(0);
    reasons.forEach((reason, r) => {
      let d = "";
      for (let k = 0; k < FORGET_BINS; k++) {
        if (!counts[r][k]) continue;
        const h = counts[r][k] / peak * height, y = top + height - stacked[k] - h;
        const xa = X.at(x0 + k * width), xb = X.at(x0 + (k + 1) * width);
        d += `M${xa.toFixed(1)},${y.toFixed(1)}h${Math.max(xb - xa - 1, 0.8).toFixed(1)}v${h.toFixed(1)}h${(-Math.max(xb - xa - 1, 0.8)).toFixed(1)}z`;
        stacked[k] += h;
      }
      if (d) g.append(svg("path", { class: "forget-mark", d, fill: FORGET_COLORS[reason] || "#9aa3ad" }));
    });
    root.append(g);
    return x => {
      const k = Math.floor((x - x0) / width);
      if (k < 0 || k >= FORGET_BINS || !totals[k]) return [];
      return ["forgotten " + fmtTime(x0 + k * width) + "–" + fmtTime(x0 + (k + 1) * width) + ": " + reasons.map((reason, r) => counts[r][k] ? `${Math.round(counts[r][k])} ${reason}` : "").filter(Boolean).join(", ")];
    };
  }
}

/// The cards of a page, kept across live updates: `place(id, make)` returns the card
/// made the first time and the same card after, in the order of the calls; `done()`
/// removes the cards this update did not place.
class Board {
  constructor(container) { this.container = container; this.cards = new Map(); this.placed = []; }
  start() { this.placed = []; }
  place(id, make) {
    let entry = this.cards.get(id);
    if (!entry) {
      entry = make(this.container);
      this.cards.set(id, entry);
      const node = entry.card || entry;
      // After the card placed before it, so the order is the calls' order.
      const before = this.placed.length ? this.cards.get(this.placed[this.placed.length - 1]) : null;
      const prev = before ? (before.card || before) : null;
      if (prev) prev.after(node); else this.container.prepend(node);
    }
    this.placed.push(id);
    return entry;
  }
  chart(spec) {
    const chart = this.place(spec.id, container => new Chart(container, spec));
    if (chart.spec !== spec) chart.update(spec);
    return chart;
  }
  done() {
    for (const [id, entry] of this.cards) {
      if (this.placed.includes(id)) continue;
      if (entry.remove) entry.remove(); else (entry.card || entry).remove();
      this.cards.delete(id);
    }
  }
}

/// A viridis-like colour for u in [0, 1] (dark low, yellow high).
function ramp(u) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.min(Math.max(u, 0), 1) * (stops.length - 1);
  const i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}
