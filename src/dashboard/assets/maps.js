// tvbo dashboard: the posterior over two parameters as heat maps, and every observation
// across all parameters as parallel coordinates. Both are cards drawn again in place.
"use strict";

/// Where a parameter's value sits in its box, in [0, 1] (log-scaled on a log scale; a
/// categorical value at its choice's band middle).
function unitOf(p, v) {
  if (p.type === "categorical") return (p.choices.indexOf(v) + 0.5) / p.choices.length;
  if (p.scale === "log") return Math.log(v / p.low) / Math.log(p.high / p.low);
  return (v - p.low) / (p.high - p.low);
}

/// Ticks of a parameter's axis as [unit position, label].
function parameterTicks(p, count) {
  if (p.type === "categorical") return p.choices.map((c, i) => [(i + 0.5) / p.choices.length, c]);
  const scale = axisScale(p.scale === "log" ? "log" : "linear", p.low, p.high, 0, 1);
  return scale.ticks(count).filter(v => v >= p.low && v <= p.high).map(v => [unitOf(p, v), fmt(v, 3)]);
}

/// A card drawing `draw(root, width)` into an SVG as wide as the card, again on resize
/// and on `update` (`redrawWith` when the data may be the card's own). spec: {id,
/// title, note, height, table}: `table()` gives the numbers drawn as {headers, rows}.
class SvgCard {
  constructor(container, spec, draw) {
    this.card = el("div", { class: "card chart" + (spec.wide ? " wide" : "") });
    this.card.dataset.chart = spec.id;
    this.heading = el("h2", { text: spec.title });
    this.holder = el("div", { class: "plot" });
    this.noteNode = el("p", { class: "note" });
    [this.tableButton, this.tableBox] = tableToggle(this);
    this.card.append(el("div", { class: "card-head" }, this.heading, this.tableButton), this.holder, this.tableBox, this.noteNode);
    container.append(this.card);
    this.width = 0;
    new ResizeObserver(() => {
      const width = Math.round(this.holder.clientWidth);
      if (width && width !== this.width) this.redraw();
    }).observe(this.holder);
    this.update(spec, draw);
  }
  /// Draws again with new data, unless this card was just made from it.
  redrawWith(spec, draw) {
    if (this.drawInto !== draw) this.update(spec, draw);
  }
  update(spec, draw) {
    this.spec = spec; this.drawInto = draw;
    this.heading.textContent = spec.title;
    this.noteNode.textContent = spec.note || "";
    this.tableButton.hidden = !spec.table;
    this.redraw();
    if (!this.tableBox.hidden) this.fillTable();
  }
  toggleTable() { toggleTable(this); }
  fillTable() {
    const { headers, rows } = this.spec.table();
    this.tableBox.replaceChildren(...tableNodes(headers, rows, "the export has every observation"));
  }
  redraw() {
    this.width = Math.round(this.holder.clientWidth) || 640;
    const H = this.spec.height || 300;
    const root = svg("svg", { viewBox: `0 0 ${this.width} ${H}`, width: this.width, height: H, role: "img", "aria-label": this.spec.title });
    this.drawInto(root, this.width, H);
    this.holder.replaceChildren(root);
  }
  remove() { this.card.remove(); }
}

/// The posterior `key` ("mean" or "std") over the grid `xs` × `ys` of parameters px, py
/// (`predictions` row-major in y), with the active observations and the
/// recommendation. A minimised session's mean map shows the objective itself: low is
/// good there, and the colour bar says so.
function heatMapDrawer(session, px, py, xs, ys, predictions, key, timeline, best) {
  return (root, W, H) => {
    const n = xs.length;
    const L = 62, R = 78, T = 10, B = 34;
    const values = predictions.map(q => q[key]);
    const lo = Math.min(...values), hi = Math.max(...values);
    const cw = (W - L - R) / n, ch = (H - T - B) / n;
    const cells = svg("g");
    values.forEach((v, k) => {
      const i = k % n, j = Math.floor(k / n);
      cells.append(svg("rect", { x: (L + i * cw).toFixed(1), y: (H - B - (j + 1) * ch).toFixed(1), width: (cw + 0.5).toFixed(1), height: (ch + 0.5).toFixed(1), fill: ramp(hi > lo ? (v - lo) / (hi - lo) : 0.5) }));
    });
    root.append(cells);
    const sx = v => L + unitOf(px, v) * (W - L - R);
    const sy = v => H - B - unitOf(py, v) * (H - T - B);
    const dots = svg("g", { fill: "#fff", stroke: "#111827", "stroke-width": 0.8 });
    for (const o of timeline.observations.filter(o => o.active)) dots.append(svg("circle", { cx: sx(o.params[px.name]).toFixed(1), cy: sy(o.params[py.name]).toFixed(1), r: 2.5 }));
    root.append(dots);
    if (best) {
      const bx = sx(best.params[px.name]), by = sy(best.params[py.name]);
      root.append(svg("path", { d: `M${bx - 7},${by}H${bx + 7}M${bx},${by - 7}V${by + 7}`, stroke: "#dc2626", "stroke-width": 2.5 }));
    }
    const axis = svg("g", { class: "axis" });
    for (const [u, label] of parameterTicks(px, Math.max(2, Math.floor((W - L - R) / 80)))) {
      const t = svg("text", { x: L + u * (W - L - R), y: H - B + 14, "text-anchor": "middle" }); t.textContent = label; axis.append(t);
    }
    for (const [u, label] of parameterTicks(py, 5)) {
      const t = svg("text", { x: L - 6, y: H - B - u * (H - T - B) + 4, "text-anchor": "end" }); t.textContent = label; axis.append(t);
    }
    const xl = svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }); xl.textContent = px.name + (px.scale === "log" ? " (log)" : "");
    const yl = svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` }); yl.textContent = py.name + (py.scale === "log" ? " (log)" : "");
    axis.append(xl, yl);
    for (let k = 0; k <= 10; k++) axis.append(svg("rect", { x: W - R + 14, y: (H - B - (k + 1) * (H - T - B) / 11).toFixed(1), width: 12, height: ((H - T - B) / 11 + 0.5).toFixed(1), fill: ramp(k / 10) }));
    const good = key === "mean" ? (session.goal === "minimize" ? " (worst)" : " (best)") : "";
    const bad = key === "mean" ? (session.goal === "minimize" ? " (best)" : " (worst)") : "";
    const top = svg("text", { x: W - R + 30, y: T + 10 }); top.textContent = fmt(hi, 3);
    const topWord = svg("text", { x: W - R + 30, y: T + 22 }); topWord.textContent = good.trim();
    const bottom = svg("text", { x: W - R + 30, y: H - B - 12 }); bottom.textContent = fmt(lo, 3);
    const bottomWord = svg("text", { x: W - R + 30, y: H - B }); bottomWord.textContent = bad.trim();
    axis.append(top, topWord, bottom, bottomWord);
    root.append(axis);
    const overlay = svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent", class: "overlay" });
    overlay.addEventListener("mousemove", event => {
      const box = root.getBoundingClientRect();
      const u = ((event.clientX - box.left) / box.width * W - L) / (W - L - R);
      const w = (H - B - (event.clientY - box.top) / box.height * H) / (H - T - B);
      const i = Math.min(n - 1, Math.max(0, Math.floor(u * n))), j = Math.min(n - 1, Math.max(0, Math.floor(w * n)));
      const q = predictions[j * n + i];
      showTip(event, `${px.name} = ${fmt(xs[i])}, ${py.name} = ${fmt(ys[j])}\nmean: ${fmt(q.mean)}\nstd: ${fmt(q.std)}`);
    });
    overlay.addEventListener("mouseleave", hideTip);
    root.append(overlay);
  };
}

/// The ranges kept on each session's parallel coordinates (brushing), by session id: axis
/// index → [low, high] in the axis's unit position, across redraws of the card.
const parallelBrushes = new Map();

/// Parallel coordinates: one vertical axis per parameter and one for the value, each
/// observation a line across them, coloured by its value (yellow = better), the newest
/// drawn strongest. Drag along an axis to keep only the lines through a range of it
/// (several axes: through all their ranges); double-click the axis to let it go. Hover
/// reads out the line nearest the pointer at the nearest axis.
function parallelDrawer(session, observations) {
  return (root, W, H) => {
    const params = session.parameters;
    const axes = params.length + 1;
    const L = 40, R = 40, T = 24, B = 30;
    const gap = (W - L - R) / (axes - 1);
    const values = observations.map(o => o.value);
    const lo = Math.min(...values), hi = Math.max(...values);
    const better = v => hi > lo ? (session.goal === "minimize" ? (hi - v) : (v - lo)) / (hi - lo) : 0.5;
    const y = u => H - B - Math.min(Math.max(u, 0), 1) * (H - T - B);
    const unitAt = py => Math.min(Math.max((H - B - py) / (H - T - B), 0), 1);
    const axisX = i => L + i * gap;
    // Each observation's position on every axis, the value's last.
    const units = observations.map(o => [...params.map(p => unitOf(p, o.params[p.name])), hi > lo ? (o.value - lo) / (hi - lo) : 0.5]);
    const recentFrom = observations.length - Math.max(10, observations.length / 10);
    const lines = svg("g", { fill: "none" });
    const nodes = observations.map((o, k) => {
      const points = units[k].map((u, i) => `${axisX(i).toFixed(1)},${y(u).toFixed(1)}`);
      const recent = k >= recentFrom;
      const line = svg("polyline", { points: points.join(" "), stroke: ramp(better(o.value)), "stroke-width": recent ? 1.6 : 0.8 });
      lines.append(line);
      return line;
    });
    root.append(lines);
    const axis = svg("g", { class: "axis" });
    [...params, { name: "value", low: lo, high: hi }].forEach((p, i) => {
      const x = axisX(i);
      axis.append(svg("line", { x1: x, x2: x, y1: T, y2: H - B, class: "pc-axis" }));
      const name = svg("text", { x, y: T - 8, "text-anchor": "middle" }); name.textContent = p.name;
      axis.append(name);
      const ticks = i < params.length ? parameterTicks(p, 4) : [[0, fmt(lo, 3)], [1, fmt(hi, 3)]];
      for (const [u, label] of ticks) {
        const t = svg("text", { x: x + 4, y: y(u) + 4, class: "pc-tick" }); t.textContent = label; axis.append(t);
      }
    });
    root.append(axis);
    // Brushing: the kept ranges drawn as bands on their axes, the other lines faded.
    if (!parallelBrushes.has(session.id)) parallelBrushes.set(session.id, new Map());
    const brushes = parallelBrushes.get(session.id);
    const bands = svg("g", { class: "pc-brushes" });
    const caption = svg("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "caption" });
    root.append(bands, caption);
    const kept = k => [...brushes].every(([i, [a, b]]) => units[k][i] >= a && units[k][i] <= b);
    const restyle = () => {
      let inside = 0;
      nodes.forEach((line, k) => {
        const keep = kept(k);
        inside += keep ? 1 : 0;
        line.setAttribute("stroke-opacity", !keep ? 0.04 : k >= recentFrom ? 0.95 : 0.25);
      });
      bands.replaceChildren(...[...brushes].map(([i, [a, b]]) => svg("rect", { class: "pc-brush", x: axisX(i) - 7, width: 14, y: y(b), height: Math.max(y(a) - y(b), 1) })));
      caption.textContent = brushes.size ? `${inside} of ${nodes.length} lines kept (double-click an axis to let its range go)` : "drag along an axis to keep a range";
      root.dataset.kept = String(inside);
    };
    restyle();
    const local = event => { const r = root.getBoundingClientRect(); return [event.clientX - r.left, event.clientY - r.top]; };
    const nearestAxis = px => Math.min(Math.max(Math.round((px - L) / gap), 0), axes - 1);
    let drag = null;
    root.addEventListener("mousedown", event => {
      const [px, py] = local(event);
      const i = nearestAxis(px);
      if (Math.abs(px - axisX(i)) > 12) return;
      event.preventDefault();
      drag = { i, from: unitAt(py) };
    });
    root.addEventListener("mousemove", event => {
      const [px, py] = local(event);
      if (drag) {
        const to = unitAt(py);
        brushes.set(drag.i, [Math.min(drag.from, to), Math.max(drag.from, to)]);
        restyle();
        return;
      }
      // The read-out: the kept line nearest the pointer at the nearest axis.
      const i = nearestAxis(px), u = unitAt(py);
      let best = -1;
      units.forEach((us, k) => { if (kept(k) && (best < 0 || Math.abs(us[i] - u) < Math.abs(units[best][i] - u))) best = k; });
      if (best < 0) { hideTip(); return; }
      const o = observations[best];
      showTip(event, `seq ${o.seq} at ${fmtTime(o.t)}: ` + params.map(p => `${p.name} = ${fmt(o.params[p.name])}`).join(", ") + `, value ${fmt(o.value)}`);
    });
    root.addEventListener("mouseup", () => {
      if (!drag) return;
      const range = brushes.get(drag.i);
      // A click, not a drag: no range.
      if (range && y(range[0]) - y(range[1]) < 3) brushes.delete(drag.i);
      drag = null;
      restyle();
    });
    root.addEventListener("mouseleave", () => { hideTip(); if (drag) { drag = null; restyle(); } });
    root.addEventListener("dblclick", event => {
      const i = nearestAxis(local(event)[0]);
      if (brushes.delete(i)) restyle();
    });
  };
}
