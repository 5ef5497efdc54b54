// tvbo dashboard: one session's page. It is built once and updated in place when the
// session's version moves (the server's event stream says so, else a poll: stream.js),
// so the page keeps its height, scroll position, zoom and read-out across updates.
"use strict";

/// How often an open page ages its status and "last step" on its own clock.
const AGE_EVERY_MS = 1000;

async function sessionView(main, id) {
  let session;
  try {
    session = await api("/v1/sessions/" + id);
  } catch (e) {
    if (e.status === 401) return;
    notFoundView(main, e.message);
    if (storedKey()) main.lastChild.append(" · or sign in with another key: ", signInAgainButton());
    return;
  }
  document.title = session.name + " · tvbo";
  document.getElementById("crumb").textContent = "/ " + session.name;
  const page = new SessionPage(main, session);
  let version = -1;
  // Reads the session and, when its version moved, draws the page again.
  const refresh = async () => {
    const current = await api("/v1/sessions/" + id);
    if (current.version === version) return false;
    version = current.version;
    await page.render(current);
    return true;
  };
  // The session's events (markers on the time charts) load beside the first draw; a
  // server without them draws none.
  await Promise.all([refresh(), loadSessionEvents(id).catch(e => { if (e.status === 401) throw e; })]);
  document.body.dataset.events = String(sessionEvents.bySeq.size);
  // Live from here: the event stream, else a poll (stream.js).
  watchSession(id, refresh, () => version);
}

/// The session's configuration as it was created (it does not change): the parameters
/// with their boxes, scales and choices, then the algorithm, model, time and event
/// settings as `name = value` words, the seed and the creation time.
function configurationCard(session) {
  const box = p => p.type === "categorical" ? p.choices.join(", ") : `${fmt(p.low)} to ${fmt(p.high)}`;
  const parameters = session.parameters.map(p => [p.name, p.type, box(p), p.type === "categorical" ? "" : p.scale, p.context ? "context (held as given)" : "tuned"]);
  const algorithm = Object.assign({}, session.algorithm);
  if (Array.isArray(algorithm.priors)) algorithm.priors = `${algorithm.priors.length} priors`;
  const facts = [["algorithm", dataWords(algorithm)], ["model", dataWords(session.model)], ["time", dataWords(session.time)],
    ["events", dataWords(session.events)], ["seed", String(session.seed)], ["created", new Date(session.created_at).toLocaleString()]];
  return el("details", { class: "card wide configuration", id: "configuration" },
    el("summary", {}, el("h2", { text: "Configuration" })),
    ...tableNodes(["parameter", "type", "box or choices", "scale", "role"], parameters, ""),
    el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })])));
}

function signInAgainButton() {
  const button = el("button", { type: "button", class: "link", text: "sign in again" });
  button.addEventListener("click", () => { localStorage.removeItem(KEY_STORAGE); location.reload(); });
  return button;
}

class SessionPage {
  constructor(main, session) {
    this.id = session.id;
    this.title = el("h1", { text: session.name });
    this.status = el("span", { class: "status", id: "tracking-status" });
    this.summary = el("div", { class: "summary" });
    // Said while the server does not answer: what the page shows is as of then.
    this.offline = el("div", { class: "offline-banner", id: "offline-banner", hidden: true });
    this.lastStep = el("span", { id: "last-step" });
    this.recommendation = el("span", { class: "recommendation" });
    const exportJson = el("button", { type: "button", id: "export-json", text: "Export JSON" });
    exportJson.addEventListener("click", () => this.exportJson(exportJson));
    const exportCsv = el("button", { type: "button", id: "export-csv", text: "Export CSV" });
    exportCsv.addEventListener("click", () => exportObservationsCsv(this.session, exportCsv));
    // The kinds of event drawn on the time charts (events.js), filled as they arrive.
    this.eventLegend = el("span", { class: "event-legend", id: "event-legend", hidden: true });
    sessionEvents.legend = this.eventLegend;
    this.toolbar = el("div", { class: "toolbar" }, this.recommendation, exportJson, exportCsv,
      el("span", { class: "muted hint", text: "Drag across a time chart to zoom; double-click to reset." }), this.eventLegend);
    this.empty = el("div", { class: "card empty-session", hidden: true });
    this.gridNode = el("div", { class: "grid" });
    this.board = new Board(this.gridNode);
    this.observations = new ObservationTable(session);
    this.ended = el("div", { class: "card wide", hidden: true });
    // Closed until opened; its table is filled at each draw.
    this.history = el("details", { class: "card wide configuration", id: "recommendation-history", hidden: true });
    main.replaceChildren(el("div", { class: "title-row" }, this.title, this.status), this.offline, this.summary, this.toolbar, this.empty, this.gridNode, this.observations.card, this.ended,
      this.history, configurationCard(session));
    const ager = setInterval(() => this.age(), AGE_EVERY_MS);
    pageStoppers.push(() => clearInterval(ager));
  }

  /// The status and the last step's age as of now on the page's clock: the server's
  /// answer aged by the time since it arrived (its `as_of` against `last_step_at`, so the
  /// browser's clock need not agree with the server's), `no recent data` once that age
  /// passes `stale_after`; and, while the server does not answer, `offline`.
  age() {
    const tracking = this.tracking;
    if (!tracking) return;
    const elapsed = (performance.now() - this.trackingReceived) / 1000;
    const idle = tracking.last_step_at
      ? (Date.parse(tracking.as_of) - Date.parse(tracking.last_step_at)) / 1000 + elapsed : null;
    let status = tracking.status, reason = tracking.reason;
    if (idle !== null && idle > tracking.stale_after && status !== "no-recent-data") {
      status = "no-recent-data";
      reason = "no step for " + agoText(idle).replace(" ago", "");
    }
    this.lastStep.textContent = idle === null ? "–" : agoText(idle);
    const offline = document.body.dataset.live === "offline";
    if (offline) {
      const since = new Date(Number(document.body.dataset.liveSince || Date.now()));
      this.status.className = "status offline";
      this.status.textContent = "offline";
      this.status.title = `The server has not answered since ${since.toLocaleTimeString()}; last known: ${STATUS_WORDS[status] || status} (${reason}).`;
      this.offline.textContent = `Offline: the server has not answered since ${since.toLocaleTimeString()}. What this page shows is as of then; it updates again when the server answers.`;
    } else {
      this.status.className = "status " + status;
      this.status.textContent = STATUS_WORDS[status] || status;
      this.status.title = reason;
    }
    this.offline.hidden = !offline;
  }

  async render(session) {
    this.session = session;
    const id = session.id;
    const [timeline, best] = await Promise.all([
      api(`/v1/sessions/${id}/timeline`),
      // Without active observations (and no prior) there is nothing to recommend: 409.
      session.dataset_size > 0 || session.algorithm.priors ? api(`/v1/sessions/${id}/best`).catch(() => null) : null,
    ]);
    this.renderSummary(session, timeline);
    this.renderRecommendation(best);
    const fresh = timeline.observation_count === 0 && timeline.step_count === 0;
    this.empty.hidden = !fresh;
    this.gridNode.hidden = fresh;
    this.observations.card.hidden = fresh;
    if (fresh) {
      this.renderEmpty(session);
    } else {
      this.board.start();
      sessionCharts(this.board, session, timeline);
      await modelViews(this.board, session, timeline, best);
      this.board.done();
    }
    this.observations.refresh(session, timeline.observation_count);
    this.renderEnded(session, timeline);
    this.renderHistory(session, timeline);
    document.body.dataset.rendered = String(session.version);
    // Milliseconds from the page's navigation to this draw (benches/dashboard.rs).
    document.body.dataset.renderedMs = String(performance.now());
  }

  renderSummary(session, timeline) {
    this.title.textContent = session.name;
    const tracking = timeline.tracking;
    this.tracking = tracking;
    this.trackingReceived = performance.now();
    const facts = [
      ["algorithm", algorithmName(session)],
      ["goal", session.goal],
      ["observations", String(session.observation_count)],
      ["active dataset", session.dataset_size + (session.max_dataset_size !== null ? " of n* " + session.max_dataset_size : "")],
      ["pending", String(session.pending_count)],
    ];
    const ended = kind => timeline.ended_runs.filter(r => r.kind === kind).length;
    if (timeline.ended_run_count > 0) facts.push(["runs ended without a value", `${ended("failed")} failed · ${ended("abandoned")} abandoned` + (timeline.ended_runs.length < timeline.ended_run_count ? ` (newest ${timeline.ended_runs.length} of ${timeline.ended_run_count})` : "")]);
    facts.push([`regret, last ${tracking.window}`, fmt(tracking.recent_regret)]);
    facts.push(["regret, all time", fmt(timeline.average_regret)]);
    facts.push(["time", session.time.source === "client" ? "client time" : "wall clock"]);
    this.lastStep.title = tracking.last_step_at ? new Date(tracking.last_step_at).toLocaleString() : "";
    facts.push(["last step", this.lastStep]);
    this.summary.replaceChildren(...facts.map(([label, value]) => el("div", {}, el("b", {}, value), el("span", { class: "muted", text: label }))));
    this.age();
  }

  renderRecommendation(best) {
    if (best) {
      // In the session's order of parameters, as the client declared them.
      const params = this.session.parameters.filter(p => p.name in best.params).map(p => `${p.name} = ${fmt(best.params[p.name])}`).join(", ");
      const detail = `  (posterior mean ${fmt(best.mean)} ± ${fmt(best.std)} at ${fmtTime(best.t)})`;
      this.recommendation.title = "Run now: " + (best.arm ? best.arm + ": " : "") + params + detail;
      this.recommendation.replaceChildren(el("b", { text: "Run now: " }), (best.arm ? best.arm + ": " : "") + params,
        el("span", { class: "muted", text: detail }));
    } else {
      this.recommendation.replaceChildren(el("span", { class: "muted", text: "No recommendation yet: the session has no active observations." }));
    }
  }

  /// A session without a step: its id and a first client loop, instead of empty charts.
  renderEmpty(session) {
    const origin = location.origin + base();
    const first = session.parameters.map(p => p.name).join(", ");
    const snippet = [
      "import tvbo",
      "",
      `client = tvbo.Client("${origin}", api_key="tvbo_…")  # or $TVBO_API_KEY`,
      `session = client.session("${session.id}")`,
      "for _ in range(100):",
      "    (suggestion,) = session.suggest()",
      `    value = measure(suggestion.params)  # {${first}}: your system`,
      "    session.observe(suggestion, value)",
    ].join("\n");
    const curl = `curl -X POST ${origin}/v1/sessions/${session.id}/suggestions -H "authorization: Bearer $TVBO_API_KEY" -H "content-type: application/json" -d '{}'`;
    this.empty.replaceChildren(el("h2", { text: "No observations yet" }),
      el("p", {}, "Session id ", el("code", { text: session.id }), ". Point a client at it; this page fills in as it observes."),
      el("pre", { text: snippet }), el("p", { class: "muted", text: "Or from a shell:" }), el("pre", { text: curl }));
  }

  /// The setting the model recommended at each suggest (the posterior optimum recorded
  /// in the step's snapshot), newest first: when, each parameter, and the posterior mean
  /// there; a row only where the setting changed from the one before.
  renderHistory(session, timeline) {
    const recorded = timeline.steps.filter(s => s.snapshot && s.snapshot.optimum).map(s => s.snapshot.optimum);
    this.history.hidden = !recorded.length;
    if (!recorded.length) return;
    const names = session.parameters.map(p => p.name);
    const key = o => names.map(n => fmt(o.params[n])).join("|");
    const changes = recorded.filter((o, i) => i === 0 || key(o) !== key(recorded[i - 1]));
    const rows = changes.slice(-100).reverse().map(o => [fmtTime(o.t), ...names.map(n => fmt(o.params[n])), fmt(o.mean)]);
    const sampled = timeline.steps.length < timeline.step_count ? ` The timeline holds ${timeline.steps.length} of the ${timeline.step_count} steps: these are the changes among them.` : "";
    this.history.replaceChildren(el("summary", {}, el("h2", { text: `Recommendation history (${changes.length} change${changes.length === 1 ? "" : "s"})` })),
      el("p", { class: "note", text: "The posterior optimum the model recorded at each suggest, newest first, a row where the setting changed (the newest 100)." + sampled }),
      ...tableNodes(["session time", ...names, "posterior mean"], rows, ""));
  }

  renderEnded(session, timeline) {
    this.ended.hidden = !timeline.ended_runs.length;
    if (!timeline.ended_runs.length) return;
    const head = el("tr", {}, ...["time", ...session.parameters.map(p => p.name), "ended", "reason"].map(h => el("th", { text: h })));
    const rows = timeline.ended_runs.slice(-20).reverse().map(r => el("tr", { class: r.kind },
      el("td", { text: fmtTime(r.t) }), ...session.parameters.map(p => el("td", { text: fmt(r.params[p.name]) })),
      el("td", { text: r.kind + (r.suggestion_id ? "" : " (own setting)") }), el("td", { text: r.reason ?? "–" })));
    this.ended.replaceChildren(el("h2", { text: "Failed and abandoned runs" }),
      el("div", { class: "scroll" }, el("table", { id: "ended-runs" }, el("thead", {}, head), el("tbody", {}, ...rows))),
      el("p", { class: "note", text: "Recorded and kept from the model: a failed run's suggestion and an abandoned one are no longer pending." }));
  }

  /// The timeline (at most 20,000 points of each series) as a JSON file, fetched with the
  /// key.
  async exportJson(button) {
    button.disabled = true;
    try {
      const response = await apiResponse(`/v1/sessions/${this.id}/timeline?points=20000`);
      download(await response.blob(), `${this.session.name}-timeline.json`);
    } catch (e) {
      if (e.status !== 401) notice("Export failed: " + e.message);
    } finally { button.disabled = false; }
  }
}

/// Every observation (`kind` observation), then the runs that ended without a value
/// (`failed`, `abandoned`: the newest 20,000, as the timeline keeps them), as CSV.
async function exportObservationsCsv(session, button) {
  button.disabled = true;
  try {
    const names = session.parameters.map(p => p.name);
    // `recorded_at`: when the server recorded the row (wall clock); `measured_at`: the
    // measurement's wall-clock time where the client gave it; `regret` the client's,
    // `estimated_regret` the model's where the client reported none.
    const header = ["kind", "seq", "t", "recorded_at", "measured_at", ...names, "value", "regret", "estimated_regret", "active", "removed_t", "removed_at", "removed_reason", "reason", "metadata"];
    const json = metadata => metadata ? JSON.stringify(metadata) : null;
    const rows = [];
    let after = 0;
    for (;;) {
      const page = await api(`/v1/sessions/${session.id}/observations?include_pruned=true&limit=10000&after=${after}`);
      for (const o of page.observations) {
        rows.push(["observation", o.seq, o.t, o.recorded_at, o.measured_at, ...names.map(n => o.params[n]), o.value, o.regret, o.estimated_regret, o.active, o.removed_t, o.removed_at, o.removed_reason, null, json(o.metadata)]);
      }
      if (page.next_after === undefined || page.next_after === null) break;
      after = page.next_after;
    }
    const timeline = await api(`/v1/sessions/${session.id}/timeline?points=20000`);
    for (const r of timeline.ended_runs) {
      rows.push([r.kind, null, r.t, r.created_at, null, ...names.map(n => r.params[n]), null, null, null, false, null, null, null, r.reason, json(r.metadata)]);
    }
    const lines = [header, ...rows].map(row => row.map(csvField).join(","));
    download(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }), session.name + "-observations.csv");
  } catch (e) {
    if (e.status !== 401) notice("Export failed: " + e.message);
  } finally { button.disabled = false; }
}
