//! What a live session page costs the server: in real headless Chromium with keys
//! required, a page stays open while a client runs suggest → observe rounds on a
//! two-parameter session (so that the page draws its posterior slices and heat maps),
//! and the page's requests under `/v1/` (the event stream aside) are counted per
//! observation, with the bytes of their answers. The figures are printed (docs/dashboard.md,
//! "What a live page costs", quotes them) and bounded: one predict serves every model
//! view of a draw, the large answers come gzip-compressed, and a fast client's
//! observations are drawn together, not one by one.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under
//! CI).

use crate::common;

use std::time::Duration;

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};

/// The page's completed requests under `/v1/` since the last clear, less the event
/// stream: their paths, the bytes of their bodies as sent and as decoded.
const REQUESTS: &str = "performance.getEntriesByType('resource') \
     .filter(e => e.name.includes('/v1/') && !e.name.includes('/v1/events')) \
     .map(e => [new URL(e.name).pathname.replace(/^.*\\/v1\\//, '').replace(/[0-9a-f-]{36}/, '{id}'), e.encodedBodySize, e.decodedBodySize])";

/// `rounds` suggest → measure → observe rounds, each measurement taking `measuring`,
/// values of a smooth bowl.
async fn client(server: &TestServer, id: &str, rounds: u32, measuring: Duration) {
    for _ in 0..rounds {
        let (status, suggested) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({}))
            .await;
        assert_eq!(status, 201, "{suggested}");
        let suggestion = &suggested["suggestions"][0];
        let (x, y) = (
            suggestion["params"]["x"].as_f64().unwrap(),
            suggestion["params"]["y"].as_f64().unwrap(),
        );
        let value = -(x - 0.3).powi(2) - (y - 0.6).powi(2);
        tokio::time::sleep(measuring).await;
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": suggestion["id"], "value": value}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
}

/// Requests and kilobytes per observation while a client runs `rounds` rounds, each
/// measurement taking `measuring`, with the session's page open in `browser`.
async fn cost(
    server: &TestServer,
    browser: &mut Browser,
    id: &str,
    rounds: u32,
    measuring: Duration,
) -> (f64, f64, Vec<Value>) {
    tokio::task::block_in_place(|| {
        browser.eval(
            "performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings()",
        )
    });
    client(server, id, rounds, measuring).await;
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    let version = session["version"].as_i64().unwrap();
    tokio::task::block_in_place(|| {
        assert!(
            browser.wait_for(
                &format!("document.body.dataset.rendered === '{version}'"),
                Duration::from_secs(30)
            ),
            "the page did not draw version {version}: {}",
            browser.eval("document.body.dataset.rendered")
        );
        // The last draw's requests complete before it marks itself drawn.
        let requests = browser.eval(REQUESTS);
        let requests = requests.as_array().unwrap().clone();
        let bytes: f64 = requests.iter().map(|r| r[1].as_f64().unwrap()).sum();
        let per = f64::from(rounds);
        (requests.len() as f64 / per, bytes / 1024.0 / per, requests)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_page_costs_a_few_requests_per_observation() {
    let Some(mut browser) = Browser::launch("dashboard_live_requests") else {
        return;
    };
    // The default settings: keys required.
    let server = TestServer::keys_required("ops").await;
    let id = server
        .create(json!({"name": "live", "parameters": [
            {"name": "x", "low": 0, "high": 1}, {"name": "y", "low": 0, "high": 1}]}))
        .await;
    // A first model, so that every draw below has its slices and heat maps.
    client(&server, &id, 12, Duration::ZERO).await;
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.sign_in(&server.url("/"), &key);
        browser.open(
            &server.url(&format!("/sessions/{id}")),
            "document.querySelector('[data-chart=\"posterior-mean\"]') && document.body.dataset.live === 'stream'",
        );
    });
    // A client whose measurements take 2 s, and one whose take 50 ms.
    let (slow, slow_kib, slow_requests) =
        cost(&server, &mut browser, &id, 6, Duration::from_secs(2)).await;
    let (fast, fast_kib, fast_requests) =
        cost(&server, &mut browser, &id, 40, Duration::from_millis(50)).await;
    println!(
        "a live page, per observation: {slow:.1} requests ({slow_kib:.1} KiB) when each \
         measurement takes 2 s; {fast:.2} requests ({fast_kib:.1} KiB) when each takes 50 ms"
    );
    let predicts = |requests: &[Value]| {
        requests
            .iter()
            .filter(|r| r[0].as_str().unwrap().ends_with("/predict"))
            .count()
    };
    // Per observation of a slow client: one draw of the data (the session, its timeline,
    // the recommendation, one predict for every model view, the observations' newest
    // page), and the stream's first version after the clear may add one.
    assert!(
        slow <= 6.0,
        "{slow} requests per observation: {slow_requests:?}"
    );
    assert!(predicts(&slow_requests) <= 7, "{slow_requests:?}");
    // The large answers come compressed (the browser accepts gzip).
    assert!(
        slow_kib < 40.0,
        "{slow_kib} KiB per observation: {slow_requests:?}"
    );
    let predict = slow_requests
        .iter()
        .find(|r| r[0].as_str().unwrap().ends_with("/predict"))
        .unwrap();
    assert!(
        predict[1].as_f64().unwrap() * 2.0 < predict[2].as_f64().unwrap(),
        "{predict:?}"
    );
    // A fast client: the page draws as fast as it can, not once per observation.
    assert!(
        fast <= 1.5,
        "{fast} requests per observation: {fast_requests:?}"
    );
    assert!(browser.errors.is_empty(), "{:?}", browser.errors);
}
