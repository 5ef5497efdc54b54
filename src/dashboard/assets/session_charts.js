// tvbo dashboard: the charts of one session, as specs placed on the page's board (drawn
// again in place at each update), and the model's views at the current time.
"use strict";

const BOUND_WORDS = {
  spatial_lengthscale_lower: "l_S at its lower bound", spatial_lengthscale_upper: "l_S at its upper bound (flat in space)",
  temporal_lengthscale_lower: "l_T at its lower bound", temporal_lengthscale_upper: "l_T at its upper bound (no drift seen)",
  signal_variance_lower: "signal variance at its lower bound", signal_variance_upper: "signal variance at its upper bound",
  noise_variance_lower: "noise variance at its lower bound", noise_variance_upper: "noise variance at its upper bound",
  categorical_lengthscale_lower: "l_C at its lower bound", categorical_lengthscale_upper: "l_C at its upper bound",
  level_variance_lower: "no drifting level", level_variance_upper: "level variance at its upper bound",
  level_lengthscale_lower: "l_L at its lower bound", level_lengthscale_upper: "l_L at its upper bound (a constant level)",
};

/// A parameter's value as a chart coordinate (a categorical one at its choice's index),
/// and the chart options that draw its axis (log scale, categories, box).
function parameterAxis(p) {
  const choices = p.type === "categorical" ? p.choices : null;
  return {
    value: v => choices ? choices.indexOf(v) : v,
    categories: choices,
    log: p.scale === "log",
    extra: choices ? [] : [p.low, p.high],
    describe: choices ? "" : `Box [${fmt(p.low)}, ${fmt(p.high)}]${p.scale === "log" ? ", log scale" : ""}.`,
  };
}

/// The failed (red) and abandoned (grey) runs as point series at [t, y(run)]; none
/// when the session has none.
function endedSeries(timeline, y) {
  return [["failed", "#dc2626"], ["abandoned", "#9aa3ad"]]
    .map(([kind, color]) => ({ name: kind, mode: "points", color, points: timeline.ended_runs.filter(r => r.kind === kind).map(r => [r.t, y(r), { label: kind + (r.reason ? ": " + r.reason : ""), color }]) }))
    .filter(series => series.points.length);
}

/// The average regret since the start at each point of a timeline: over every observation
/// drawn, or, when the timeline is downsampled, from the server's exact sums of each
/// group of consecutive observations (the rolling line's points), never from the drawn
/// points alone, which keep each group's extremes.
function cumulativeRegret(timeline) {
  let running = 0, counted = 0;
  if (timeline.observations.length < timeline.observation_count) {
    return timeline.tracking.rolling.map(r => { running += r.regret * r.observations; counted += r.observations; return [r.t, running / counted]; });
  }
  return timeline.observations.filter(o => o.regret !== null).map(o => { running += o.regret; counted += 1; return [o.t, running / counted]; });
}

function sessionCharts(board, session, timeline) {
  const alg = algorithmName(session);
  const tracking = timeline.tracking;
  const regrets = timeline.observations.filter(o => o.regret !== null);
  const provenance = regretProvenance(timeline.reported_regrets, timeline.estimated_regrets);
  const downsampled = timeline.observations.length < timeline.observation_count
    ? `${timeline.observations.length} of ${timeline.observation_count} observations drawn` : "";
  const strip = timeline.forgotten;
  // 1. Regret.
  board.chart({
    id: "regret", title: "Dynamic regret" + (provenance ? ` (${provenance})` : ""), time: true, wide: true, yLabel: "regret", strip,
    series: [
      { name: "reported", mode: "points", color: "#2563eb", points: regrets.filter(o => !o.estimated).map(o => [o.t, o.regret, { label: "reported" }]) },
      { name: "estimated", mode: "points", color: "#ea580c", points: regrets.filter(o => o.estimated).map(o => [o.t, o.regret, { label: "estimated" }]) },
      { name: `rolling (last ${tracking.window})`, color: "#16a34a", width: 2.2, points: tracking.rolling.map(r => [r.t, r.regret, { label: `mean of ${r.observations}` }]) },
      { name: "cumulative", color: "var(--fg)", width: 1.4, dash: "5 3", points: cumulativeRegret(timeline) },
    ].filter(s => (s.name !== "reported" || timeline.reported_regrets) && (s.name !== "estimated" || timeline.estimated_regrets)),
    caption: downsampled,
    note: "Regret r = f*(t) − f(x_t) at each observation: as the client reported it (blue), else estimated (orange) from the posterior optimum the model recorded at the last suggest. The green line is the rolling mean over every observation (the server's), the dashed one the average since the start. The strip under the axis counts observations forgotten per slice of time (red reset, purple budget, orange relevance). Past 2,000 observations, 2,000 are drawn: each group's extremes and evenly spaced ones between them (the corner says so); the lines stay exact, from the server's sums over every observation.",
  });
  // 2. Values and the posterior optimum's value.
  const optimumSteps = timeline.steps.filter(s => s.snapshot && s.snapshot.optimum);
  board.chart({
    id: "values", title: "Observed values and the posterior optimum", time: true, yLabel: "value",
    series: [
      { name: "observed (active)", mode: "points", points: timeline.observations.filter(o => o.active).map(o => [o.t, o.value]) },
      { name: "observed (forgotten)", mode: "points", color: "#9aa3ad", points: timeline.observations.filter(o => !o.active).map(o => [o.t, o.value, { label: o.removed_reason }]) },
      { name: "posterior optimum", mode: "line", color: "#16a34a", points: optimumSteps.map(s => [s.snapshot.optimum.t, s.snapshot.optimum.mean]) },
    ],
    note: "The green line is the posterior mean at its maximiser, recorded when each suggestion was made (none during the warm-up, before a model chose a suggestion): where the model believed the best value was.",
  });
  // 3. Parameters and the moving optimum.
  for (const p of session.parameters) {
    const axis = parameterAxis(p);
    board.chart({
      id: "param-" + p.name, title: `Parameter ${p.name}: suggestions and the moving optimum`, time: true, yLabel: p.name,
      logY: axis.log, yCategories: axis.categories,
      series: [
        { name: "observed at", mode: "points", points: timeline.observations.map(o => [o.t, axis.value(o.params[p.name]), { label: String(o.params[p.name]) }]) },
        { name: "moving optimum", mode: "step", color: "#16a34a", width: 2, points: optimumSteps.map(s => [s.snapshot.optimum.t, axis.value(s.snapshot.optimum.params[p.name])]) },
        ...endedSeries(timeline, r => axis.value(r.params[p.name])),
      ],
      extraY: axis.extra,
      note: `${axis.describe} ${p.context ? "A context parameter: given at every suggest." : "The step line is the posterior argmax as it was at each suggest."}`.trim(),
    });
  }
  // 4. Dataset size.
  const snap = timeline.steps.filter(s => s.snapshot);
  const datasetSeries = [{ name: "active dataset", mode: "step", points: snap.map(s => [s.t, s.snapshot.dataset_size]) }];
  const nStar = snap.filter(s => s.snapshot.max_dataset_size !== undefined).map(s => [s.t, s.snapshot.max_dataset_size]);
  // An n* far above the dataset (a young session, or client time: R(n) flat) would
  // squash the dataset into the axis: it is then drawn off the scale and said in words.
  const largest = Math.max(1, ...datasetSeries[0].points.map(p => p[1]));
  const nStarAbove = nStar.length && Math.max(...nStar.map(p => p[1])) > 3 * largest;
  if (nStar.length) datasetSeries.push({ name: "n* (BOLT)", mode: "step", color: "#ca8a04", width: 1.4, points: nStar, unscaled: nStarAbove });
  board.chart({ id: "dataset", title: "Active dataset size", time: true, yLabel: "observations", yMin: 0, series: datasetSeries, strip,
    caption: nStarAbove ? `n* = ${nStar[nStar.length - 1][1]}, above the chart` : "",
    note: alg === "bolt" ? "BOLT keeps at most n* observations: the size whose response time maximises its regret bound (far above the dataset, its line leaves the chart)." : "What the model still remembers; drops are forgetting." });
  if (alg === "w-dbo") {
    board.chart({ id: "budget", title: "W-DBO removal budget", time: true, yLabel: "budget", series: [{ name: "budget", mode: "step", points: snap.filter(s => s.snapshot.budget !== undefined).map(s => [s.t, s.snapshot.budget]) }],
      note: "Grows with time (Δt/l_T · ln(1+α)); spent by each removal (its relevance)." });
  }
  // 5. Response time R(n): BOLT's, which it chooses n* from.
  if (alg === "bolt") responseTimeChart(board, session, timeline);
  // 6. Hyperparameters.
  hyperparameterCharts(board, session, snap);
  // 7. Priors.
  const priorSteps = snap.filter(s => s.snapshot.prior_probabilities || s.snapshot.priors_active);
  if (priorSteps.length && session.algorithm.priors) {
    const names = session.algorithm.priors.map((p, i) => p.name || `prior-${i}`);
    const series = names.map((name, p) => ({
      name, mode: "step",
      points: priorSteps.map(s => [s.t, s.snapshot.prior_probabilities ? s.snapshot.prior_probabilities[p] : (s.snapshot.priors_active[p] ? 1 : 0)]),
    }));
    const eliminates = priorSteps.some(s => s.snapshot.priors_active);
    board.chart({ id: "priors", title: eliminates ? "Priors still active (1) or eliminated (0)" : "Prior probabilities", time: true, yLabel: eliminates ? "active" : "P(prior)", yMin: 0, series,
      note: eliminates ? "PE-GP: a prior leaves the active set when its prediction errors exceed their confidence." : "HP/MAP-GP-TS: the hyperposterior over the priors." });
  }
}

function responseTimeChart(board, session, timeline) {
  const rt = timeline.response_time;
  const series = [{ name: "measured", mode: "points", points: rt.samples.map(s => [s.n, s.seconds]) }];
  if (rt.coefficients) {
    const hi = Math.max(...rt.samples.map(s => s.n), session.max_dataset_size || 0, 1);
    const c = rt.coefficients;
    series.push({ name: "fitted cubic", color: "#16a34a", points: Array.from({ length: 60 }, (_, i) => { const n = i / 59 * hi; return [n, c[0] + c[1] * n + c[2] * n * n + c[3] * n * n * n]; }) });
  }
  const clientTime = session.time.source === "client";
  board.chart({ id: "response-time", title: "Response time R(n)", xLabel: "dataset size n", yLabel: "seconds", xMin: 0, series,
    marks: session.max_dataset_size !== null ? [{ x: session.max_dataset_size, label: "n* = " + session.max_dataset_size, color: "#dc2626" }] : [],
    note: "Seconds between consecutive suggests against the dataset size: BOLT fits the cubic and picks n* from it." + (clientTime ? " In a client-time session these are the client's time steps, so R(n) is flat and n* sits at its maximum." : ""),
    empty: "no samples yet (two suggests make one)" });
}

function hyperparameterCharts(board, session, snap) {
  const hyper = snap.filter(s => s.snapshot.hyperparameters);
  // Bounds the newest fits reached, said in words (a flat line at a bound is not a
  // stable estimate).
  const recentFits = snap.slice(-20).filter(s => s.snapshot.fit && s.snapshot.fit.at_bound);
  const bounds = [...new Set(recentFits.flatMap(s => s.snapshot.fit.at_bound))];
  const boundNote = bounds.length ? `at a bound: ${bounds.map(b => BOUND_WORDS[b] || b).join("; ")}` : "";
  const h = s => s.snapshot.hyperparameters;
  if (hyper.length || !session.algorithm.priors) {
    board.chart({ id: "hyperparameters", title: "Hyperparameters", time: true, logY: true, yLabel: "value (log)",
      series: [
        { name: "l_S (space)", points: hyper.map(s => [s.t, h(s).spatial_lengthscale]) },
        { name: "signal var", points: hyper.map(s => [s.t, h(s).signal_variance]) },
        { name: "noise var", points: hyper.map(s => [s.t, h(s).noise_variance]) },
      ].concat(hyper.some(s => h(s).level_variance) ? [{ name: "level var", points: hyper.filter(s => h(s).level_variance).map(s => [s.t, h(s).level_variance]) }] : []),
      caption: boundNote,
      note: "Fitted at each step on standardised values; none during the warm-up. The corner says when the newest fits ended at an end of their box.", empty: "not fitted yet (warm-up or random search)" });
  }
  importanceChart(board, session, hyper.filter(s => h(s).lengthscales));
  if (hyper.some(s => h(s).temporal_lengthscale !== null)) {
    const temporal = [{ name: "l_T (seconds)", points: hyper.map(s => [s.t, h(s).temporal_lengthscale]) }];
    if (hyper.some(s => h(s).epsilon !== null)) temporal.push({ name: "ε", color: "#ea580c", points: hyper.map(s => [s.t, h(s).epsilon]) });
    if (hyper.some(s => h(s).level_lengthscale)) temporal.push({ name: "l_L, the level (seconds)", points: hyper.filter(s => h(s).level_lengthscale).map(s => [s.t, h(s).level_lengthscale]) });
    board.chart({ id: "temporal", title: "Temporal lengthscale", time: true, logY: true, yLabel: "value (log)", series: temporal,
      caption: bounds.some(b => b.startsWith("temporal")) ? boundNote : "",
      note: "How fast the model believes the objective drifts: a short l_T forgets quickly. Under a drifting level, l_L is how fast the level moves while the shape keeps l_T." });
  }
}

/// What matters, under `model.lengthscales: per_parameter`: each continuous parameter's
/// share of the inverse lengthscales of each fit, 1/l_d over Σ 1/l_j (a setting whose
/// lengthscale is long changes the objective little across its range), over the day;
/// none for a session with one lengthscale.
function importanceChart(board, session, fitted) {
  if (!fitted.length) return;
  const names = Object.keys(fitted[fitted.length - 1].snapshot.hyperparameters.lengthscales);
  const order = session.parameters.map(p => p.name).filter(n => names.includes(n));
  const share = (ls, name) => (1 / ls[name]) / Object.values(ls).reduce((sum, l) => sum + 1 / l, 0);
  const newest = fitted[fitted.length - 1].snapshot.hyperparameters.lengthscales;
  const ranked = [...order].sort((a, b) => share(newest, b) - share(newest, a));
  board.chart({ id: "importance", title: "What matters: each setting's share of the model's sensitivity", time: true, yLabel: "share", yMin: 0,
    series: order.map(name => ({ name, points: fitted.map(s => { const ls = s.snapshot.hyperparameters.lengthscales; return [s.t, share(ls, name), { label: `l = ${fmt(ls[name])}` }]; }) })),
    caption: "now: " + ranked.map(name => `${name} ${Math.round(100 * share(newest, name))} %`).join(", "),
    note: "From the per-parameter lengthscales of each fit: a setting's share is 1/l over the sum of 1/l of all continuous settings. A short lengthscale means the objective changes quickly along that setting; a setting whose share stays small barely matters, and the search spends little on it." });
}

/// The model at the current time: per parameter, the observed values against it (newest
/// strongest) and the posterior through the recommendation; over two numeric parameters
/// (at d > 2 a pair the reader picks, the others held at the recommendation) the
/// posterior as heat maps; at d > 2 every observation in parallel coordinates.
async function modelViews(board, session, timeline, best) {
  const params = session.parameters;
  const later = afterTheData(session, timeline, best);
  const sampled = timeline.observations.length < timeline.observation_count
    ? ` Drawn: ${timeline.observations.length} of the ${timeline.observation_count} observations (each group's extremes and evenly spaced ones).` : "";
  const active = timeline.observations.filter(o => o.active);
  const withModel = !session.arms && best && active.length;
  const pair = withModel ? heatMapPair(session, timeline) : null;
  const grid = pair ? heatMapGrid(pair, best) : null;
  const { slices, gridPredictions } = withModel ? await modelPredictions(session, best, grid) : {};
  const recentFrom = timeline.observations.length - Math.max(10, Math.floor(timeline.observations.length / 10));
  for (const p of params) {
    const axis = parameterAxis(p);
    const series = [
      { name: "observed (newest strongest)", mode: "points", color: "#475569", points: timeline.observations.map((o, k) => [axis.value(o.params[p.name]), o.value,
        { label: "at " + fmtTime(o.t), color: k >= recentFrom ? "#2563eb" : "#94a3b8", radius: k >= recentFrom ? 3 : 2, opacity: k >= recentFrom ? 0.95 : 0.45 }]) },
    ];
    if (slices && slices[p.name]) {
      const rows = slices[p.name];
      // Over choices, points: a line between categories would read as an order.
      const mode = axis.categories ? "points" : "line";
      series.push({ name: "posterior mean now", mode, radius: 4.5, opacity: 0.95, color: "#16a34a", width: 2, points: rows.map(r => [axis.value(r.v), r.mean]) },
        { name: "mean + 2σ", legend: "± 2σ", mode, radius: 2.5, color: "#86efac", dash: "4 3", points: rows.map(r => [axis.value(r.v), r.mean + 2 * r.std]) },
        { name: "mean − 2σ", legend: null, mode, radius: 2.5, color: "#86efac", dash: "4 3", points: rows.map(r => [axis.value(r.v), r.mean - 2 * r.std]) });
    }
    board.chart({
      id: "slice-" + p.name, title: `Value against ${p.name}`,
      xLabel: p.name, yLabel: "value", logX: axis.log, xCategories: axis.categories, extraX: axis.extra, series,
      marks: best && !axis.categories ? [{ x: best.params[p.name], label: "recommendation", color: "#dc2626" }] : [],
      caption: slices ? `posterior at t = ${fmtTime(best.t)}` + (later ? ` (${later.short})` : "") : "",
      note: `Every observation (blue: the newest tenth); once there is a model, the posterior now along ${p.name}, the other parameters held at the recommendation (red).` + sampled + (later ? " " + later.long : ""),
    });
  }
  if (grid && gridPredictions) heatMaps(board, session, timeline, best, later, grid, gridPredictions);
  if (params.length > 2 && timeline.observations.length) {
    const drawn = timeline.observations.slice(-1000);
    const spec = { id: "parallel", title: "Every observation across the parameters", wide: true, height: 280,
      note: "Parallel coordinates: one line per observation through its setting and value; yellow is better, the newest drawn strongest. Drag along an axis to keep only the lines through a range of it (on several axes, through all of them); double-click the axis to let it go; hover reads out the nearest line." +
        (drawn.length < timeline.observation_count ? ` Drawn: ${drawn.length} of the ${timeline.observation_count} observations, the newest${sampled ? " of those the page holds" : ""}.` : ""),
      table: () => ({ headers: ["seq", "session time", ...params.map(p => p.name), "value"],
        rows: drawn.map(o => [String(o.seq), fmtTime(o.t), ...params.map(p => p.type === "categorical" ? o.params[p.name] : fmt(o.params[p.name])), fmt(o.value)]) }) };
    const draw = parallelDrawer(session, drawn);
    board.place("parallel", container => new SvgCard(container, spec, draw)).redrawWith(spec, draw);
  }
}

/// The model views' posterior in one predict at the recommendation's time: the mean and
/// standard deviation along each parameter through the recommendation (`slices`, by
/// parameter name; left out when `withSlices` is false) and, given a heat map's `grid`,
/// at its points (`gridPredictions`). Nulls when the server gives no prediction.
async function modelPredictions(session, best, grid, withSlices = true) {
  const points = [], owners = [];
  for (const p of session.parameters) {
    if (p.context || !withSlices) continue;
    const values = p.type === "categorical" ? p.choices : parameterGrid(p, 40);
    for (const v of values) { points.push(Object.assign({}, best.params, { [p.name]: v })); owners.push([p.name, v]); }
  }
  const sliceCount = points.length;
  if (grid) points.push(...grid.points);
  if (!points.length) return { slices: null, gridPredictions: null };
  const prediction = await api(`/v1/sessions/${session.id}/predict`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ points, t: best.t }) }).catch(e => { if (e.status === 401) throw e; return null; });
  if (!prediction) return { slices: null, gridPredictions: null };
  const slices = {};
  prediction.predictions.slice(0, sliceCount).forEach((q, k) => { const [name, v] = owners[k]; (slices[name] = slices[name] || []).push({ v, mean: q.mean, std: q.std }); });
  return { slices: sliceCount ? slices : null, gridPredictions: grid ? prediction.predictions.slice(sliceCount) : null };
}

/// Evenly spaced values of a parameter over its box (log-spaced on a log scale), its
/// bounds exactly (the arithmetic would leave them an ulp outside the box).
function parameterGrid(p, n) {
  return Array.from({ length: n }, (_, i) => {
    const u = i / (n - 1);
    const v = p.scale === "log" ? Math.exp(Math.log(p.low) + u * (Math.log(p.high) - Math.log(p.low))) : p.low + u * (p.high - p.low);
    const inside = Math.min(Math.max(v, p.low), p.high);
    return p.type === "int" ? Math.round(inside) : inside;
  });
}

/// When "now" (the recommendation's time) lies well after the newest observation, as in
/// an idle wall-clock session, and the model's kernel has time in it: words for the
/// views drawn at it; null otherwise.
function afterTheData(session, timeline, best) {
  if (!best || !timeline.observations.length || !session.model.temporal_kernel) return null;
  const newest = Math.max(...timeline.observations.map(o => o.t));
  const gap = best.t - newest;
  if (!(gap > 60)) return null;
  return { short: `${fmtTime(gap)} after the newest observation`,
    long: `Now is ${fmtTime(gap)} after the newest observation: the model has carried its belief forward by the drift it learned, so its uncertainty is wider than at the data, and the mean has moved back toward the prior.` };
}

/// The pair of parameters each session's heat maps are drawn over, as the reader picked
/// it on the page (by session id).
const heatMapPairs = new Map();

/// The two numeric parameters (context ones included, categorical ones not) the heat maps
/// show: the reader's pick; else, under per-parameter lengthscales, the two the newest
/// fit found most sensitive (shortest lengthscales); else the first two. Null with fewer
/// than two.
function heatMapPair(session, timeline) {
  const numeric = session.parameters.filter(p => p.type !== "categorical");
  if (numeric.length < 2) return null;
  const picked = heatMapPairs.get(session.id);
  if (picked) return picked.map(name => numeric.find(p => p.name === name));
  const fitted = timeline.steps.filter(s => s.snapshot && s.snapshot.hyperparameters && s.snapshot.hyperparameters.lengthscales);
  if (fitted.length) {
    const ls = fitted[fitted.length - 1].snapshot.hyperparameters.lengthscales;
    const ranked = numeric.filter(p => p.name in ls).sort((a, b) => ls[a.name] - ls[b.name]);
    if (ranked.length >= 2) return [ranked[0], ranked[1]].sort((a, b) => numeric.indexOf(a) - numeric.indexOf(b));
  }
  return numeric.slice(0, 2);
}

/// The heat maps' grid over the pair: n × n points, rows in y, every other parameter at
/// the recommendation.
function heatMapGrid([px, py], best) {
  const n = 24;
  const xs = parameterGrid(px, n), ys = parameterGrid(py, n);
  return { n, px, py, xs, ys, points: ys.flatMap(y => xs.map(x => Object.assign({}, best.params, { [px.name]: x, [py.name]: y }))) };
}

/// The posterior mean and standard deviation now as heat maps over the grid's
/// `predictions` (of [`modelPredictions`]); past two parameters, the mean's card has the
/// selects that pick the pair (drawn again from one predict when they change).
function heatMaps(board, session, timeline, best, later, grid, predictions) {
  const { n, px, py, xs, ys } = grid;
  const minimise = session.goal === "minimize";
  const others = session.parameters.length > 2;
  const over = others ? ` over ${px.name} and ${py.name}` : "";
  const held = others ? " The other parameters are held at the recommendation; the dots are every active observation, whatever its other settings." : "";
  for (const [key, label] of [["mean", "Posterior mean"], ["std", "Posterior standard deviation"]]) {
    const spec = { id: "posterior-" + key, title: `${label}${over} now`,
      table: () => ({ headers: [px.name, py.name, key === "mean" ? "posterior mean" : "posterior std"],
        rows: predictions.map((q, k) => [fmt(xs[k % n]), fmt(ys[Math.floor(k / n)]), fmt(q[key])]) }),
      note: (key === "mean"
        ? `Where the model believes the objective is ${minimise ? "low (the goal: dark)" : "high (the goal: yellow)"} now; white dots: active observations; red cross: the recommendation.`
        : "Where the model is unsure now (yellow): forgotten or never-sampled regions.") + held };
    if (later) spec.note += " " + later.long;
    const draw = heatMapDrawer(session, px, py, xs, ys, predictions, key, timeline, best);
    const card = board.place(spec.id, container => new SvgCard(container, spec, draw));
    card.redrawWith(spec, draw);
    if (key === "mean" && others) pairSelects(card, board, session, timeline, best, later, grid);
  }
}

/// The two selects in the mean map's heading that pick the pair of parameters; on a
/// change, one predict over the new pair and both maps drawn again.
function pairSelects(card, board, session, timeline, best, later, grid) {
  const numeric = session.parameters.filter(p => p.type !== "categorical");
  const select = (label, chosen) => el("select", { "aria-label": label, class: "pair-select" },
    ...numeric.map(p => { const option = el("option", { value: p.name, text: p.name }); option.selected = p.name === chosen.name; return option; }));
  const x = select("horizontal parameter", grid.px), y = select("vertical parameter", grid.py);
  const change = async () => {
    if (x.value === y.value) return;
    heatMapPairs.set(session.id, [x.value, y.value]);
    const next = heatMapGrid(heatMapPair(session, timeline), best);
    const { gridPredictions } = await modelPredictions(session, best, next, false);
    if (gridPredictions) heatMaps(board, session, timeline, best, later, next, gridPredictions);
  };
  x.addEventListener("change", change);
  y.addEventListener("change", change);
  const head = card.card.querySelector(".card-head");
  head.querySelector(".pair")?.remove();
  head.insertBefore(el("span", { class: "pair" }, x, " × ", y), card.tableButton);
}
