// tvbo dashboard: the observation table of a session, paged, sorted and filtered by the
// server (`GET /v1/sessions/{id}/observations`), 50 rows at a time.
"use strict";

const TABLE_ROWS = 50;
/// Sortable columns: heading → the server's sort key.
const OBSERVATION_SORTS = { seq: "seq", time: "t", value: "value", regret: "regret" };

class ObservationTable {
  constructor(session) {
    this.session = session;
    this.sort = "seq";
    this.order = "desc";
    this.state = "all";
    this.offset = 0;
    this.total = 0;
    this.card = el("div", { class: "card wide", id: "observation-table" });
    const filter = el("select", { "aria-label": "which observations" },
      ...[["all", "all observations"], ["active", "active only"], ["forgotten", "forgotten only"]].map(([v, t]) => el("option", { value: v, text: t })));
    filter.addEventListener("change", () => { this.state = filter.value; this.offset = 0; this.load(); });
    this.prev = el("button", { type: "button", text: "← newer" });
    this.next = el("button", { type: "button", text: "older →" });
    this.prev.addEventListener("click", () => { this.offset = Math.max(0, this.offset - TABLE_ROWS); this.load(); });
    this.next.addEventListener("click", () => { this.offset += TABLE_ROWS; this.load(); });
    this.range = el("span", { class: "muted", "aria-live": "polite" });
    this.head = el("thead");
    this.body = el("tbody");
    this.card.append(el("div", { class: "card-head" }, el("h2", { text: "Observations" })),
      el("div", { class: "toolbar" }, filter, this.prev, this.next, this.range),
      el("div", { class: "scroll rows" }, el("table", { id: "observations" }, this.head, this.body)),
      el("p", { class: "note", text: "Every observation, active or forgotten (with why and when), and its metadata; click a heading to sort." }));
    this.count = -1;
  }

  /// Loads the shown page again when the session has new observations (the first page
  /// only moves when it shows the newest).
  refresh(session, count) {
    this.session = session;
    if (count === this.count) return;
    this.count = count;
    this.load();
  }

  drawHead() {
    const params = this.session.parameters.map(p => p.name);
    const headings = ["seq", "time", ...params, "value", "regret", "state", "metadata"];
    this.head.replaceChildren(el("tr", {}, ...headings.map(h => {
      const key = params.includes(h) ? null : OBSERVATION_SORTS[h];
      if (!key) return el("th", { text: h });
      const active = this.sort === key;
      const button = el("button", { type: "button", class: "link sort", text: h + (active ? (this.order === "asc" ? " ▲" : " ▼") : "") });
      button.addEventListener("click", () => {
        this.order = active && this.order === "desc" ? "asc" : "desc";
        this.sort = key;
        this.offset = 0;
        this.load();
      });
      return el("th", { "aria-sort": active ? (this.order === "asc" ? "ascending" : "descending") : "none" }, button);
    })));
  }

  async load() {
    this.drawHead();
    const q = new URLSearchParams({ limit: String(TABLE_ROWS), sort: this.sort, order: this.order, state: this.state, offset: String(this.offset) });
    let page;
    try {
      page = await api(`/v1/sessions/${this.session.id}/observations?${q}`);
    } catch (e) {
      if (e.status !== 401) this.range.textContent = "error: " + e.message;
      return;
    }
    const params = this.session.parameters;
    const rows = page.observations.map(o => el("tr", { class: o.active ? "" : "forgotten", "data-seq": String(o.seq) },
      el("td", { text: String(o.seq) }), el("td", { text: fmtTime(o.t) }),
      ...params.map(p => el("td", { text: fmt(o.params[p.name]) })),
      el("td", { text: fmt(o.value) }), el("td", { text: regretText(o) }),
      el("td", { text: o.active ? "active" : `forgotten (${o.removed_reason || "?"}${o.removed_t !== null && o.removed_t !== undefined ? " at " + fmtTime(o.removed_t) : ""})` }),
      el("td", { class: "metadata", text: o.metadata ? JSON.stringify(o.metadata) : "" })));
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: String(params.length + 6), class: "muted", text: "No observations." })));
    this.body.replaceChildren(...rows);
    this.total = page.total ?? page.observations.length;
    const first = page.observations.length ? this.offset + 1 : 0;
    this.range.textContent = first ? `rows ${first}–${this.offset + page.observations.length} of ${this.total}` : "no rows";
    this.prev.disabled = this.offset === 0;
    this.next.disabled = this.offset + page.observations.length >= this.total;
  }
}

/// An observation's regret as reported, else as estimated (marked), else a dash.
function regretText(o) {
  if (o.regret !== null && o.regret !== undefined) return fmt(o.regret);
  if (o.estimated_regret !== null && o.estimated_regret !== undefined) return fmt(o.estimated_regret) + " (est.)";
  return "–";
}
