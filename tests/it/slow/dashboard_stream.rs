//! The session page's live updates from the server's event stream (`GET /v1/events`,
//! docs/dashboard.md), in headless Chromium with keys required: an R-GP-UCB session that
//! resets its model every 4 observations, so that observing raises `model-reset` events.
//! On load the page draws the session's events as marks on its time charts (hover names
//! them); the stream then brings the session's changes and its new events, and the page
//! makes no request at all while nothing happens (no poll). With the stream's requests
//! failing in the browser's network stack, the page says "polling", polls, still draws
//! the changes and the new events, and goes back to the stream once it works again. The
//! session list follows the stream as well (`changes=true`): idle, it makes no request;
//! observed, the session's row is updated.
//!
//! With `TVBO_SCREENSHOTS=dir` it saves the page with its event marks there
//! (`dashboard-events.png`).

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};

/// Observations `from..to` (seq = k + 1) at t = 10 k: every 4th is a `model-reset` event.
async fn observe(server: &TestServer, id: &str, from: u32, to: u32) {
    for k in from..to {
        let t = f64::from(k) * 10.0;
        let x = (f64::from(k) * 0.618).fract();
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"params": {"x": x}, "value": -(x - 0.4).powi(2) + 0.01 * t, "t": t}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
}

/// How many events the API lists for the session, and its version.
async fn events_and_version(server: &TestServer, id: &str) -> (usize, i64) {
    let (_, events) = server.get(&format!("/v1/sessions/{id}/events")).await;
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    (
        events["events"].as_array().unwrap().len(),
        session["version"].as_i64().unwrap(),
    )
}

/// The requests under `/v1/` the page made since `browser.requests` was cleared, as paths
/// with their queries.
fn api_requests(browser: &Browser) -> Vec<String> {
    browser
        .requests
        .iter()
        .filter_map(|r| r["url"].as_str())
        .filter_map(|url| url.find("/v1/").map(|at| url[at..].to_string()))
        .collect()
}

/// The page's errors, less the failures of the stream's requests this test blocks.
fn errors(browser: &Browser) -> Vec<&String> {
    browser
        .errors
        .iter()
        .filter(|e| !e.contains("ERR_BLOCKED_BY_CLIENT"))
        .collect()
}

/// The page is drawn at `version`, with `events` events and observation `seq` listed.
fn drawn(version: i64, events: usize, seq: u32) -> String {
    format!(
        "document.body.dataset.rendered === '{version}' && document.body.dataset.events === '{events}' \
         && !!document.querySelector('#observations tr[data-seq=\"{seq}\"]')"
    )
}

/// The event marks of the values chart: each one's kinds.
const MARKS: &str = "[...document.querySelectorAll('[data-chart=\"values\"] .event-mark')].map(m => m.dataset.kinds)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_page_follows_the_event_stream_and_polls_without_it() {
    let Some(mut browser) = Browser::launch("dashboard_stream") else {
        return;
    };
    let server = TestServer::keys_required("team-a").await;
    let key = server.key().unwrap().to_string();
    let id = server
        .create(json!({
            "name": "resets",
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "r-gp-ucb", "reset_every": 4},
            "model": {"warmup": 2},
            "time": {"source": "client"},
            "seed": 7
        }))
        .await;
    observe(&server, &id, 0, 6).await;
    let (events, version) = events_and_version(&server, &id).await;
    assert_eq!(events, 1, "one reset in 6 observations");
    let page = server.url(&format!("/sessions/{id}"));

    // Signed in, the page draws the event it finds and opens the stream.
    tokio::task::block_in_place(|| {
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        browser.eval(&format!("localStorage.setItem('tvbo.apiKey', '{key}')"));
        browser.open(&page, &drawn(version, 1, 6));
        assert!(
            browser.wait_for(
                "document.getElementById('live').dataset.mode === 'stream'",
                Duration::from_secs(10)
            ),
            "the stream did not open: {:?} {:?}",
            browser.eval("document.getElementById('live').title"),
            api_requests(&browser)
        );
        assert_eq!(
            browser.eval("document.getElementById('live').textContent"),
            json!("live")
        );
        assert_eq!(browser.eval(MARKS), json!(["model-reset"]));
        assert_eq!(
            browser.eval(
                "document.getElementById('event-legend').textContent.includes('model reset 1')"
            ),
            json!(true)
        );
        // Hovering the mark names the event.
        let point = browser.eval(
            "(() => { window.scrollTo(0, 0); const r = document.querySelector('[data-chart=\"values\"] .event-mark line').getBoundingClientRect(); \
             return [r.left + r.width / 2, r.top + r.height / 2]; })()",
        );
        browser.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": point[0], "y": point[1]}),
            true,
        );
        let tip = browser.eval("document.getElementById('tooltip').textContent");
        assert!(
            tip.as_str().unwrap().contains("model reset: 1 so far"),
            "{tip}"
        );
        browser.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": 5, "y": 5}),
            true,
        );
        assert!(errors(&browser).is_empty(), "{:?}", browser.errors);
        // Nothing happens for 3 s: the page asks nothing (no poll).
        browser.requests.clear();
        std::thread::sleep(Duration::from_secs(3));
        browser.eval("1");
        assert_eq!(api_requests(&browser), Vec::<String>::new(), "while idle");
    });

    // Two observations: two changes and a second reset, brought by the stream.
    let made = Instant::now();
    observe(&server, &id, 6, 8).await;
    let (events, version) = events_and_version(&server, &id).await;
    assert_eq!(events, 2);
    tokio::task::block_in_place(|| {
        assert!(
            browser.wait_for(&drawn(version, 2, 8), Duration::from_secs(5)),
            "the stream's update was not drawn: {:?}",
            api_requests(&browser)
        );
        eprintln!("streamed update drawn in {:?}", made.elapsed());
        assert_eq!(browser.eval(MARKS), json!(["model-reset", "model-reset"]));
        // The redraw read the session (once per version at most), nothing polled.
        let requests = api_requests(&browser);
        let session_reads = requests
            .iter()
            .filter(|r| **r == format!("/v1/sessions/{id}"))
            .count();
        assert!((1..=2).contains(&session_reads), "{requests:?}");
        assert!(
            !requests.iter().any(|r| r.starts_with("/v1/events")),
            "the stream stayed open: {requests:?}"
        );
        assert_eq!(
            browser.eval("document.getElementById('live').dataset.mode"),
            json!("stream")
        );
        assert!(errors(&browser).is_empty(), "{:?}", browser.errors);
        if let Ok(dir) = std::env::var("TVBO_SCREENSHOTS") {
            browser.screenshot_from(&format!("{dir}/dashboard-events.png"), ".toolbar", 900);
        }
    });

    // The stream's requests fail in the browser: the page polls instead, and says so.
    tokio::task::block_in_place(|| {
        block_stream(&mut browser, true);
        browser.open(&page, &drawn(version, 2, 8));
        assert!(
            browser.wait_for(
                "document.getElementById('live').dataset.mode === 'poll' \
                 && document.getElementById('live').textContent === 'polling'",
                Duration::from_secs(5)
            ),
            "not polling: {}",
            browser.eval("document.getElementById('live').textContent")
        );
        assert_eq!(browser.eval(MARKS), json!(["model-reset", "model-reset"]));
        assert!(errors(&browser).is_empty(), "{:?}", browser.errors);
        browser.requests.clear();
    });
    observe(&server, &id, 8, 12).await;
    let (events, version) = events_and_version(&server, &id).await;
    assert_eq!(events, 3);
    tokio::task::block_in_place(|| {
        assert!(
            browser.wait_for(&drawn(version, 3, 12), Duration::from_secs(5)),
            "the poll's update was not drawn: {:?}",
            api_requests(&browser)
        );
        assert_eq!(
            browser.eval(MARKS),
            json!(["model-reset", "model-reset", "model-reset"])
        );
        // Each mark named beside it, no two names overlapping.
        let labels = browser.eval(
            "[...document.querySelectorAll('[data-chart=\"values\"] .event-label')]              .map(t => t.getBoundingClientRect()).sort((a, b) => a.left - b.left)              .map((r, i, all) => [Math.round(r.width), i === 0 || all[i - 1].right <= r.left])",
        );
        let labels = labels.as_array().unwrap();
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert!(labels.iter().all(|l| l[1] == json!(true)), "{labels:?}");
        // While nothing happens, it polls (where the stream made no request at all).
        browser.requests.clear();
        std::thread::sleep(Duration::from_secs(3));
        browser.eval("1");
        let requests = api_requests(&browser);
        let session_reads = requests
            .iter()
            .filter(|r| **r == format!("/v1/sessions/{id}"))
            .count();
        assert!(
            session_reads >= 2,
            "polled {session_reads} times: {requests:?}"
        );
        assert!(errors(&browser).is_empty(), "{:?}", browser.errors);
        // The stream works again: the page goes back to it (its back-off is at most 30 s).
        block_stream(&mut browser, false);
        assert!(
            browser.wait_for(
                "document.getElementById('live').dataset.mode === 'stream'",
                Duration::from_secs(40)
            ),
            "not back on the stream: {}",
            browser.eval("document.getElementById('live').title")
        );
        browser.requests.clear();
        std::thread::sleep(Duration::from_secs(2));
        browser.eval("1");
        assert_eq!(
            api_requests(&browser),
            Vec::<String>::new(),
            "back on the stream"
        );
    });
    // The session list lives on the stream too (changes=true): no request while nothing
    // happens, and a session's row follows its observations.
    let row = format!("document.querySelector('tr[data-session=\"{id}\"] td.num')?.textContent");
    tokio::task::block_in_place(|| {
        browser.open(&server.url("/"), &format!("{row} === '12'"));
        assert!(
            browser.wait_for(
                "document.getElementById('live').dataset.mode === 'stream'",
                Duration::from_secs(10)
            ),
            "the list's stream did not open: {:?}",
            browser.eval("document.getElementById('live').title")
        );
        // Once open, the list is read again (what changed before): then nothing.
        std::thread::sleep(Duration::from_secs(2));
        browser.eval("1");
        browser.requests.clear();
        std::thread::sleep(Duration::from_secs(6));
        browser.eval("1");
        assert_eq!(
            api_requests(&browser),
            Vec::<String>::new(),
            "the list polled"
        );
    });
    observe(&server, &id, 12, 14).await;
    tokio::task::block_in_place(|| {
        assert!(
            browser.wait_for(&format!("{row} === '14'"), Duration::from_secs(5)),
            "the list's row was not updated: {:?}",
            api_requests(&browser)
        );
        let requests = api_requests(&browser);
        assert!(
            requests.iter().all(|r| r.starts_with("/v1/sessions?")),
            "{requests:?}"
        );
        assert!(errors(&browser).is_empty(), "{:?}", browser.errors);
    });
    // The page's stream would hold the server's graceful stop open.
    drop(browser);
    server.stop().await;
}

/// Makes the page's requests for `/v1/events` fail in the browser's network stack (as a
/// proxy that refuses them would), or lets them through again.
fn block_stream(browser: &mut Browser, block: bool) {
    let urls: Vec<Value> = if block {
        vec![json!("*/v1/events*")]
    } else {
        vec![]
    };
    browser.call("Network.setBlockedURLs", json!({"urls": urls}), true);
}
