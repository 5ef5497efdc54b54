// tvbo dashboard, shared by both pages: the API with the signed-in key (and the server's
// rate limit honoured), DOM helpers, number and time formats, downloads, signing in.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

/// The path prefix a reverse proxy serves tvbo under (TVBO_BASE_PATH), "" at the root.
const base = () => document.body.dataset.base || "";

/// The API key the person signed in with (kept in this browser's local storage), if any.
const KEY_STORAGE = "tvbo.apiKey";
const storedKey = () => { try { return localStorage.getItem(KEY_STORAGE); } catch (_) { return null; } };
/// Whether the server wants a key on /v1 (TVBO_AUTH).
const authRequired = () => document.body.dataset.auth === "on";

/// How often a refused (429) request is tried again, waiting what Retry-After says.
const RATE_LIMIT_TRIES = 4;

/// Says in the header what the page is waiting for ("" clears it).
function notice(text) {
  const node = document.getElementById("notice");
  if (!node) return;
  node.textContent = text;
  node.hidden = !text;
}

/// The response of a request under /v1 with the signed-in key. A 429 is tried again
/// after its Retry-After (the header says so meanwhile); a refused key (401) shows the
/// sign-in form; any other failure throws an Error with the problem's detail and status.
async function apiResponse(path, options) {
  const headers = Object.assign({}, (options || {}).headers);
  const key = storedKey();
  if (key) headers.authorization = "Bearer " + key;
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(base() + path, Object.assign({}, options, { headers }));
    if (response.status === 429 && attempt < RATE_LIMIT_TRIES) {
      const wait = Math.min(Math.max(Number(response.headers.get("retry-after")) || 1, 1), 60);
      notice(`Rate limited by the server: trying again in ${wait} s…`);
      await new Promise(resolve => setTimeout(resolve, wait * 1000));
      continue;
    }
    if (attempt > 1) notice("");
    if (response.ok) return response;
    let detail = response.status + " " + response.statusText;
    try { const problem = await response.json(); detail = problem.detail || problem.title || detail; } catch (_) { /* not JSON */ }
    const error = new Error(detail);
    error.status = response.status;
    if (response.status === 401) keyRefused(detail);
    throw error;
  }
}

/// The JSON of a request under /v1 ([`apiResponse`]).
async function api(path, options) {
  return (await apiResponse(path, options)).json();
}

/// The key was refused (revoked, or wrong): forget it and ask for another, whatever the
/// page was showing.
function keyRefused(detail) {
  if (document.body.dataset.signIn === "shown") return;
  try { localStorage.removeItem(KEY_STORAGE); } catch (_) { /* private mode */ }
  for (const stop of pageStoppers) stop();
  loginView(document.getElementById("main"), "The key was refused: " + detail);
}
/// What stops a page's live updates (when the sign-in form replaces it).
const pageStoppers = [];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/// An SVG element; a colour given as a CSS variable (`var(--fg)`) is set as a style, so
/// that it follows the light or dark theme.
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (typeof v === "string" && v.startsWith("var(")) node.style.setProperty(k, v); else node.setAttribute(k, v);
  }
  return node;
}

function fmt(x, digits = 4) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3)) return x.toExponential(2);
  return Number(x.toPrecision(digits)).toString();
}

/// A span of seconds in the largest unit that keeps it readable.
function fmtTime(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.abs(seconds);
  if (s < 120) return fmt(seconds, 3) + " s";
  if (s < 7200) return fmt(seconds / 60, 3) + " min";
  if (s < 172800) return fmt(seconds / 3600, 3) + " h";
  return fmt(seconds / 86400, 3) + " d";
}

/// An age in seconds as words: "just now", "5 min ago".
function agoText(seconds) {
  return seconds < 10 ? "just now" : fmtTime(Math.round(seconds)).replace(/\.\d+ /, " ") + " ago";
}

/// How long ago a wall-clock timestamp was ("just now", "5 min ago"), with the date on
/// hover.
function fmtAgo(timestamp) {
  if (!timestamp) return el("span", { text: "–" });
  const at = new Date(timestamp);
  return el("span", { text: agoText((Date.now() - at.getTime()) / 1000), title: at.toLocaleString() });
}

/// An object as words: `name = value` pairs (numbers as the page writes them, nested
/// objects by dotted name, lists in brackets): an event's data, a session's settings.
function dataWords(data) {
  const value = v => typeof v === "number" ? fmt(v) : v !== null && typeof v === "object" ? JSON.stringify(v) : String(v);
  const pairs = (prefix, object) => Object.entries(object).flatMap(([k, v]) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? pairs(prefix + k + ".", v)
      : [`${prefix}${k} = ${Array.isArray(v) ? "[" + v.map(value).join(", ") + "]" : value(v)}`]);
  return pairs("", data).join(", ");
}

/// A tracking status (the timeline's `tracking.status`, a listed summary's `tracking`) in
/// words.
const STATUS_WORDS = { "tracking": "tracking", "lagging": "lagging", "no-recent-data": "no recent data" };

function algorithmName(session) { return session.algorithm && session.algorithm.name; }

/// Where a timeline's regrets come from: "reported" by the client, "estimated" by the
/// model, or both.
function regretProvenance(reported, estimated) {
  if (!reported && !estimated) return "";
  if (!estimated) return "reported";
  return reported ? "reported and estimated" : "estimated";
}

/// Saves `blob` as a file called `name` (the browser's download).
function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/// One CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
function csvField(value) {
  const text = value === null || value === undefined ? "" : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

// ---------------------------------------------------------------------------------------
// Signing in: the key is kept in this browser only and sent as a bearer token; the
// server shows only its tenant's sessions (all of them to an admin key).

function loginView(main, message) {
  document.body.dataset.signIn = "shown";
  document.getElementById("crumb").textContent = "sign in";
  const out = document.getElementById("sign-out");
  if (out) out.remove();
  // No live indicator (its dot is the class's) once the page stopped updating.
  const live = document.getElementById("live");
  live.textContent = "";
  live.className = "live";
  live.title = "";
  delete live.dataset.mode;
  const input = el("input", { type: "password", id: "api-key", autocomplete: "off", placeholder: "tvbo_…", "aria-label": "API key" });
  const form = el("form", { class: "login" },
    el("label", { for: "api-key", text: "API key" }), input, el("button", { type: "submit", text: "Sign in" }));
  form.addEventListener("submit", event => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    localStorage.setItem(KEY_STORAGE, key);
    location.reload();
  });
  // replaceChildren writes a null as the text "null": only the nodes there are.
  main.replaceChildren(...[el("h1", { text: "Sign in" }),
    el("p", { class: "muted", text: "This server needs an API key (make one with: tvbo keys create --name NAME). It stays in this browser." }),
    message ? el("p", { class: "error", text: message }) : null, form].filter(Boolean));
  input.focus();
}

/// A page that says there is no such session, with the way back to the list.
function notFoundView(main, message) {
  main.replaceChildren(el("h1", { text: "Session not found" }), el("p", { class: "muted", text: message }),
    el("p", {}, el("a", { href: base() + "/", text: "All sessions" })));
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
  const run = view === "session" ? sessionView(main, document.body.dataset.session)
    : view === "compare" ? compareView(main)
    : view === "not-found" ? Promise.resolve(notFoundView(main, "This address names no session: a session's address ends in its id, a UUID."))
    : sessionsView(main);
  run.catch(e => {
    if (e.status === 401) return; // the sign-in form is shown
    console.error(e);
    main.replaceChildren(el("h1", { text: "Something went wrong" }), el("p", { class: "muted", text: e.message }));
  });
});
