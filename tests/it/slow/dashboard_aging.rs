//! An open session page never misleads about now, in real headless Chromium with keys
//! required: its tracking status and "last step" age on the page's own clock (the
//! server's answer aged by the time since it arrived), so that a client that stopped
//! shows as "no recent data" without a reload; and when the server stops answering, the
//! badge says "offline" and a banner says since when, instead of the last known green.
//!
//! The page's clock is moved forward ten minutes (its `performance.now`) rather than
//! waited for. Needs Chromium (tests/it/common/browser.rs: without it the test skips,
//! except under CI).

use crate::common;

use std::time::Duration;

use common::TestServer;
use common::browser::Browser;
use serde_json::json;
use tvbo::api::RouterSettings;

/// The status badge's text and class, the tooltip, and the "last step" fact.
const READ: &str = "(() => { const s = document.getElementById('tracking-status'); \
     return [s.textContent, s.className, s.title, document.getElementById('last-step').textContent, \
     document.getElementById('offline-banner').hidden]; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_page_ages_on_its_own_clock_and_says_when_it_is_offline() {
    let Some(mut browser) = Browser::launch("dashboard_aging") else {
        return;
    };
    // The default settings: keys required.
    let server = TestServer::start_configured(RouterSettings::default(), Default::default())
        .await
        .with_key("ops")
        .await;
    let id = server
        .create(json!({"name": "aging", "parameters": [{"name": "x", "low": 0, "high": 1}]}))
        .await;
    // Wall-clock observations with reported regrets, back to back: the usual gap is
    // short, so the status goes stale after a minute without a step.
    let observations: Vec<_> = (0..6)
        .map(|i| json!({"params": {"x": i as f64 / 6.0}, "value": 1.0, "regret": 0.1}))
        .collect();
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"observations": observations}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    assert_eq!(
        timeline["tracking"]["stale_after"],
        json!(60.0),
        "{timeline}"
    );
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        browser.eval(&format!("localStorage.setItem(KEY_STORAGE, '{key}')"));
        browser.open(
            &server.url(&format!("/sessions/{id}")),
            "document.body.dataset.rendered !== undefined",
        );
        let fresh = browser.eval(READ);
        assert_eq!(fresh[0], "tracking", "{fresh}");
        assert_eq!(fresh[3], "just now", "{fresh}");
        assert_eq!(fresh[4], true, "{fresh}");
        // Ten minutes later on the page's clock, with no step and no reload.
        browser.eval(
            "(() => { const real = performance.now.bind(performance); \
             performance.now = () => real() + 600000; })()",
        );
        assert!(
            browser.wait_for(
                "document.getElementById('tracking-status').textContent === 'no recent data'",
                Duration::from_secs(3)
            ),
            "the status did not age: {}",
            browser.eval(READ)
        );
        browser.keep_screenshot("dashboard-stale.png", 500);
        let aged = browser.eval(READ);
        assert_eq!(aged[3], "10 min ago", "{aged}");
        assert!(
            aged[2].as_str().unwrap().starts_with("no step for 10 min"),
            "{aged}"
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
    });
    // The server goes away: within a few seconds the page says so.
    server.stop().await;
    tokio::task::block_in_place(|| {
        assert!(
            browser.wait_for(
                "document.getElementById('tracking-status').textContent === 'offline' \
                 && !document.getElementById('offline-banner').hidden",
                Duration::from_secs(10)
            ),
            "no offline state with the server down: {}",
            browser.eval(READ)
        );
        let offline = browser.eval(READ);
        assert!(
            offline[1].as_str().unwrap().contains("offline"),
            "{offline}"
        );
        assert!(
            offline[2]
                .as_str()
                .unwrap()
                .contains("last known: no recent data"),
            "{offline}"
        );
        browser.keep_screenshot("dashboard-offline.png", 500);
        let banner = browser.eval("document.getElementById('offline-banner').textContent");
        assert!(
            banner
                .as_str()
                .unwrap()
                .starts_with("Offline: the server has not answered since"),
            "{banner}"
        );
    });
}
