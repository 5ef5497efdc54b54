// tvbo dashboard: the sessions list. One request per page of rows (the list answers
// each row's summary and sparkline), sorted and filtered by the server, kept live.
"use strict";

/// The list's columns: heading, and the server's sort key where it sorts.
const LIST_COLUMNS = [
  ["compare", null], ["name", "name"], ["tenant", null], ["algorithm", null], ["status", null], ["now", null], ["observations", "observations"],
  ["dataset / n*", null], ["avg regret", "regret"], ["last activity", "last_activity"], ["regret", null],
];
const PAGE_ROWS = 50;
const LIST_POLL_MS = 5000;
/// How often the open list reads its first page again while nothing changes, so that a
/// session gone quiet ages to "no recent data" (its status is the server's, as of then).
const LIST_AGE_MS = 60000;

async function sessionsView(main) {
  document.getElementById("crumb").textContent = "sessions";
  const name = el("input", { type: "search", placeholder: "filter by name", "aria-label": "filter by name" });
  const algorithm = el("select", { "aria-label": "filter by algorithm" }, el("option", { value: "", text: "all algorithms" }));
  // The names are the server's (GET /v1/algorithms), each with what it does as its title;
  // if they cannot be read, the filter offers "all" alone and the list still loads.
  api("/v1/algorithms").then(list => algorithm.append(...list.algorithms.map(a => el("option", { value: a.name, text: a.name, title: a.summary }))), () => {});
  // The status now is the page's to filter: it is computed for the rows loaded.
  const statusFilter = el("select", { "aria-label": "filter by status now", id: "tracking-filter" }, el("option", { value: "", text: "any status now" }),
    ...Object.entries(STATUS_WORDS).map(([value, text]) => el("option", { value, text })));
  const count = el("span", { class: "muted", "aria-live": "polite" });
  const table = el("table", { id: "sessions" });
  const more = el("button", { type: "button", text: "More sessions", hidden: true });
  // Sessions picked (their boxes) for the comparison page.
  const compare = el("button", { type: "button", id: "compare", text: "Compare", disabled: true, title: "Pick two or more sessions (the boxes at the start of their rows)" });
  compare.addEventListener("click", () => { location.href = base() + "/compare?sessions=" + [...state.picked].join(","); });
  main.replaceChildren(el("h1", { text: "Sessions" }), el("div", { class: "filters" }, name, algorithm, statusFilter, compare, count), el("div", { class: "scroll" }, table), more);
  const state = { sort: "created", order: null, cursor: null, rows: new Map(), tenants: false, loading: null, picked: new Set() };
  const pick = (id, on) => {
    if (on) state.picked.add(id); else state.picked.delete(id);
    compare.disabled = state.picked.size < 2;
    compare.textContent = state.picked.size ? `Compare ${state.picked.size}` : "Compare";
  };
  // After rows change: the sparklines drawn again on one scale, 0 to the largest regret
  // of any row shown, so that their heights compare; two rows of one name told apart;
  // the rows of another status now than the filter's hidden, and the count said.
  const rowsChanged = () => {
    const top = Math.max(0, ...[...state.rows.values()].flatMap(row => row.spark));
    for (const row of state.rows.values()) {
      row.node.querySelector("td.spark").replaceChildren(sparkline(row.spark, top));
      row.node.hidden = !!statusFilter.value && row.tracking !== statusFilter.value;
    }
    markDuplicates();
    const shown = [...state.rows.values()].filter(row => !row.node.hidden).length;
    count.textContent = (statusFilter.value ? `${shown} of the ${state.rows.size} loaded ${STATUS_WORDS[statusFilter.value]}` : `${state.rows.size} shown`) +
      (state.cursor ? ", more below" : "");
  };
  // Two rows of one name: each says its id's start, so that they can be told apart.
  const markDuplicates = () => {
    const count = new Map();
    for (const row of state.rows.values()) count.set(row.name, (count.get(row.name) || 0) + 1);
    for (const [id, row] of state.rows) {
      const cell = row.node.querySelector("td.name");
      cell.querySelector(".short-id")?.remove();
      if (count.get(row.name) > 1) cell.append(el("span", { class: "muted short-id", text: " · " + id.slice(0, 8), title: id }));
    }
  };
  const head = el("tr");
  table.append(el("thead", {}, head));
  const body = el("tbody");
  table.append(body);
  const drawHead = () => {
    head.replaceChildren(...LIST_COLUMNS.filter(([h]) => h !== "tenant" || state.tenants).map(([heading, key]) => {
      if (!key) return el("th", { text: heading });
      const active = state.sort === key;
      const arrow = active ? (state.order === "asc" ? " ▲" : " ▼") : "";
      const button = el("button", { type: "button", class: "link sort", text: heading + arrow, "aria-label": `sort by ${heading}` });
      button.addEventListener("click", () => {
        state.order = active ? (state.order === "asc" ? "desc" : "asc") : (key === "name" ? "asc" : "desc");
        state.sort = key;
        reload();
      });
      return el("th", { "aria-sort": active ? (state.order === "asc" ? "ascending" : "descending") : "none" }, button);
    }));
  };
  const query = cursor => {
    const q = new URLSearchParams({ limit: String(PAGE_ROWS) });
    if (name.value.trim()) q.set("name", name.value.trim());
    if (algorithm.value) q.set("algorithm", algorithm.value);
    if (state.sort !== "created") q.set("sort", state.sort);
    if (state.order) q.set("order", state.order);
    if (cursor) q.set("cursor", cursor);
    return "/v1/sessions?" + q;
  };
  const load = async () => {
    const page = await api(query(state.cursor));
    state.cursor = page.next_cursor;
    more.hidden = !state.cursor;
    if (page.sessions.some(s => s.tenant !== undefined) && !state.tenants) { state.tenants = true; drawHead(); }
    for (const u of page.unreadable || []) {
      body.append(el("tr", { "data-session": u.id, class: "unreadable" },
        el("td", { colspan: "11", class: "muted", text: `session ${u.id}: its stored row does not read back (run tvbo check; it can still be deleted)` })));
    }
    for (const s of page.sessions) upsertRow(s, false);
    if (!state.rows.size && !(page.unreadable || []).length) {
      const filtered = name.value.trim() || algorithm.value;
      body.append(el("tr", { class: "empty-row" }, el("td", { colspan: "11", class: "muted", text: filtered ? "No session matches the filter." : "No sessions yet. Create one with POST /v1/sessions (see /docs)." })));
    }
    rowsChanged();
  };
  const rowCells = s => {
    const sum = s.summary || {};
    const provenance = regretProvenance(sum.reported_regrets, sum.estimated_regrets);
    const avg = el("td", {}, fmt(sum.average_regret ?? null), provenance ? el("span", { class: "tag" + (provenance === "reported" ? "" : " est"), text: provenance }) : null);
    const box = el("input", { type: "checkbox", "aria-label": "compare " + s.name });
    box.checked = state.picked.has(s.id);
    box.addEventListener("change", () => pick(s.id, box.checked));
    const cells = [el("td", { class: "pick" }, box), el("td", { class: "name" }, el("a", { href: base() + "/sessions/" + s.id, text: s.name }))];
    if (state.tenants) cells.push(el("td", { text: s.tenant ?? "" }));
    const now = sum.tracking ? el("span", { class: "status " + sum.tracking, title: sum.tracking_reason || "", text: STATUS_WORDS[sum.tracking] || sum.tracking }) : "–";
    cells.push(el("td", { text: algorithmName(s) }), el("td", { text: s.status }), el("td", { class: "now" }, now), el("td", { class: "num", text: String(s.observation_count) }),
      el("td", { class: "num", text: s.dataset_size + (s.max_dataset_size !== null ? " / " + s.max_dataset_size : "") }), avg,
      el("td", {}, sum.last_activity_at ? fmtAgo(sum.last_activity_at) : fmtAgo(s.created_at)),
      el("td", { class: "spark" }));
    return cells;
  };
  const upsertRow = (s, fresh) => {
    const known = state.rows.get(s.id);
    if (known) {
      // A row is drawn again when its session changed, or its status now did (it ages).
      const tracking = (s.summary || {}).tracking;
      if (known.version !== s.version || known.tracking !== tracking) {
        known.node.replaceChildren(...rowCells(s));
        Object.assign(known, { version: s.version, name: s.name, spark: (s.summary || {}).sparkline || [], tracking });
      }
      return;
    }
    const node = el("tr", { "data-session": s.id }, ...rowCells(s));
    if (fresh) body.prepend(node); else body.append(node);
    state.rows.set(s.id, { node, version: s.version, name: s.name, spark: (s.summary || {}).sparkline || [], tracking: (s.summary || {}).tracking });
  };
  const reload = () => {
    state.cursor = null;
    state.rows.clear();
    body.replaceChildren();
    drawHead();
    state.loading = load().catch(showError);
  };
  const showError = e => { if (e.status !== 401) count.textContent = "error: " + e.message; };
  let typing = null;
  name.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(reload, 300); });
  algorithm.addEventListener("change", reload);
  statusFilter.addEventListener("change", rowsChanged);
  more.addEventListener("click", () => { more.disabled = true; load().catch(showError).finally(() => { more.disabled = false; }); });
  drawHead();
  await load();
  // Live: the first page again, its rows updated in place; new sessions appear on top
  // when the list is newest first. The event stream (changes=true, stream.js) says when
  // a session changed, and the page is read again then (at most once a second); while
  // the stream is down, every 5 s.
  const live = document.getElementById("live");
  const show = (mode, text, title) => {
    live.dataset.mode = mode;
    live.className = "live" + (mode === "offline" ? "" : " on " + mode);
    live.textContent = text;
    live.title = title;
  };
  const refreshPage = async () => {
    const page = await api(query(null));
    const newestFirst = state.sort === "created" && state.order !== "asc";
    const fresh = page.sessions.filter(s => !state.rows.has(s.id));
    for (const s of page.sessions) if (state.rows.has(s.id)) upsertRow(s, false);
    if (newestFirst) {
      body.querySelector(".empty-row")?.remove();
      for (const s of fresh.reverse()) upsertRow(s, true);
    }
    rowsChanged();
  };
  let stopped = false, streaming = false, pollTimer = null, pending = null, hiddenChange = false;
  const poll = async () => {
    pollTimer = null;
    if (stopped || streaming) return;
    if (!document.hidden) {
      try {
        await refreshPage();
        show("poll", "polling", "Reading the list every 5 s: the event stream is down.");
      } catch (e) { show("offline", "offline: " + e.message, "The server did not answer."); }
    }
    if (!stopped && !streaming) pollTimer = setTimeout(poll, LIST_POLL_MS);
  };
  const changed = () => {
    if (document.hidden) { hiddenChange = true; return; }
    if (pending) return;
    pending = setTimeout(() => { pending = null; refreshPage().catch(showError); }, 1000);
  };
  const stream = new EventStream("changes=true", null, {
    open: () => {
      streaming = true;
      clearTimeout(pollTimer); pollTimer = null;
      show("stream", "live", "Sessions update as they change (GET /v1/events?changes=true).");
      changed(); // what changed while the stream was down
    },
    message: message => { if (message.event === "version") changed(); },
    fail: (reason, wait) => {
      streaming = false;
      show("poll", "polling", `The event stream is not working (${reason}): reading the list every 5 s; the stream is tried again in ${Math.round(wait / 1000)} s.`);
      if (!pollTimer && !stopped) pollTimer = setTimeout(poll, 0);
    },
  });
  show("poll", "connecting…", "Opening the server's event stream.");
  pollTimer = setTimeout(poll, LIST_POLL_MS);
  stream.connect();
  const ager = setInterval(() => { if (streaming) changed(); }, LIST_AGE_MS);
  pageStoppers.push(() => { stopped = true; stream.stop(); clearTimeout(pollTimer); clearTimeout(pending); clearInterval(ager); });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && hiddenChange && !stopped) { hiddenChange = false; changed(); }
  });
}

/// A session's regret over its history, on the list's shared scale: 0 at the bottom,
/// `top` (the largest regret of the rows shown) at the top.
function sparkline(values, top) {
  const W = 120, H = 24;
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "sparkline", role: "img", "aria-label": values.length ? `regret from ${fmt(values[0])} to ${fmt(values[values.length - 1])}, on a scale of 0 to ${fmt(top)} shared by the rows` : "no regret yet" });
  if (values.length < 2) return root;
  const d = values.map((v, i) => `${i ? "L" : "M"}${(i / (values.length - 1) * W).toFixed(1)},${(H - 2 - (top > 0 ? Math.max(v, 0) / top : 0.5) * (H - 4)).toFixed(1)}`).join("");
  root.append(svg("path", { d, fill: "none", stroke: "var(--blue)", "stroke-width": 1.2 }));
  return root;
}
