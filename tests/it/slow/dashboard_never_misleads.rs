//! A session page never misleads, in real headless Chromium with keys required:
//!
//! - its tracking status and "last step" age on the page's own clock (the server's
//!   answer aged by the time since it arrived), so that a client that stopped shows as
//!   "no recent data" without a reload; and when the server stops answering, the badge
//!   says "offline" and a banner says since when, instead of the last known green. The
//!   page's clock is moved forward ten minutes (its `performance.now`) rather than
//!   waited for;
//! - every chart's table names its columns and series, and writes values in their own
//!   units: a regret, a setting, n* or a lengthscale is never written as a duration;
//! - the session's configuration is on its page, as it was created;
//! - a long session draws most of its points, and its totals are the server's exact ones.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under
//! CI).

use crate::common;

use std::time::Duration;

use common::TestServer;
use common::browser::Browser;
use serde_json::json;

/// The status badge's text and class, the tooltip, and the "last step" fact.
const READ: &str = "(() => { const s = document.getElementById('tracking-status'); \
     return [s.textContent, s.className, s.title, document.getElementById('last-step').textContent, \
     document.getElementById('offline-banner').hidden]; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_page_ages_on_its_own_clock_and_says_when_it_is_offline() {
    let Some(mut browser) = Browser::launch("dashboard_never_misleads") else {
        return;
    };
    // The default settings: keys required.
    let server = TestServer::keys_required("ops").await;
    let id = server
        .create(json!({"name": "aging", "parameters": [{"name": "x", "low": 0, "high": 1}]}))
        .await;
    // Wall-clock observations with reported regrets, back to back: the usual gap is
    // short, so the status goes stale after a minute without a step.
    let observations: Vec<_> = (0..6)
        .map(|i| json!({"params": {"x": i as f64 / 6.0}, "value": 1.0, "regret": 0.1}))
        .collect();
    server.observe_batch(&id, observations).await;
    let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    assert_eq!(
        timeline["tracking"]["stale_after"],
        json!(60.0),
        "{timeline}"
    );
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        browser.keep_screenshot("dashboard-sign-in.png", 300);
        assert!(
            !browser
                .eval("document.body.innerText")
                .as_str()
                .unwrap()
                .contains("null"),
            "{}",
            browser.eval("document.body.innerText")
        );
        browser.eval(&format!("localStorage.setItem(KEY_STORAGE, '{key}')"));
        // An address that names no session: a page that says so, not a JSON problem.
        browser.open(
            &server.url("/sessions/not-a-uuid"),
            "document.querySelector('h1')?.textContent === 'Session not found'",
        );
        browser.open(
            &server.url(&format!("/sessions/{id}")),
            "document.body.dataset.rendered !== undefined",
        );
        // The configuration, as created: the parameter's box and the model's settings.
        let configuration = browser.eval(
            "(() => { const c = document.getElementById('configuration'); c.open = true; \
             return c.innerText; })()",
        );
        let configuration = configuration.as_str().unwrap();
        for expected in [
            "0 to 1",
            "tuned",
            "warping = none",
            "lengthscales = shared",
            "seed",
        ] {
            assert!(
                configuration.contains(expected),
                "{expected} in {configuration}"
            );
        }
        if let Ok(dir) = std::env::var("TVBO_SCREENSHOTS") {
            let path = format!("{dir}/dashboard-configuration.png");
            browser.screenshot_from(&path, "#configuration", 320);
        }
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

/// Every chart table of the page, opened: [chart id, header cells, rows of cells].
const TABLES: &str = "(() => { for (const b of document.querySelectorAll('.table-toggle')) \
     if (b.getAttribute('aria-expanded') === 'false') b.click(); \
     return [...document.querySelectorAll('[data-chart]')].map(c => [c.dataset.chart, \
       [...c.querySelectorAll('.chart-table th')].map(h => h.textContent), \
       [...c.querySelectorAll('.chart-table tbody tr')].map(r => [...r.cells].map(d => d.textContent))]); })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chart_tables_name_their_columns_and_keep_values_in_their_units() {
    let Some(mut browser) = Browser::launch("dashboard_never_misleads") else {
        return;
    };
    let server = TestServer::keys_required("ops").await;
    // A BOLT session in client time whose setting runs into the thousands (as a buffer
    // size in KiB does) and whose values, regrets and n* are plain numbers.
    let id = server
        .create(json!({
            "name": "tables",
            "parameters": [{"name": "buffer_kb", "low": 64, "high": 16384, "scale": "log"}],
            "model": {"warmup": 5},
            "time": {"source": "client"},
            "seed": 4
        }))
        .await;
    for round in 0..24 {
        let t = round as f64 * 30.0;
        let (status, s) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{s}");
        let s = &s["suggestions"][0];
        let kb = s["params"]["buffer_kb"].as_f64().unwrap();
        let value = -(kb.ln() - 2000f64.ln()).powi(2);
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": s["id"], "value": value, "regret": -value, "t": t + 10.0}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.sign_in(&server.url("/"), &key);
        browser.open(
            &server.url(&format!("/sessions/{id}")),
            "document.body.dataset.rendered !== undefined",
        );
        let tables = browser.eval(TABLES);
        let tables = tables.as_array().unwrap();
        let duration = reads_as_duration();
        let mut rows_read = 0;
        for table in tables {
            let (chart, headers, rows) = (&table[0], &table[1], table[2].as_array().unwrap());
            let headers: Vec<&str> = headers
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap())
                .collect();
            assert!(
                headers.iter().all(|h| !h.trim().is_empty()),
                "{chart}: headers {headers:?}"
            );
            for row in rows {
                let cells: Vec<&str> = row
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect();
                assert!(
                    !cells[0].trim().is_empty(),
                    "{chart}: a series without a name: {cells:?}"
                );
                // The value column (the third) of a data row: a number, or a category.
                if cells.len() == 4 && !cells[0].starts_with("forgotten") {
                    assert!(
                        !duration(cells[2]),
                        "{chart}: value {:?} written as a duration: {cells:?}",
                        cells[2]
                    );
                    rows_read += 1;
                }
            }
        }
        assert!(rows_read > 50, "{rows_read} rows read: {tables:?}");
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
    });
    server.stop().await;
}

/// Whether a cell reads as a duration ("10 s", "49.7 min", "2 h", "1.5 d").
fn reads_as_duration() -> impl Fn(&str) -> bool {
    |cell: &str| {
        let mut words = cell.split(' ');
        matches!(
            (
                words.next().map(|n| n.parse::<f64>().is_ok()),
                words.next(),
                words.next()
            ),
            (Some(true), Some("s" | "min" | "h" | "d"), None)
        )
    }
}

/// A session of 3,200 observations draws at least 1,500 of them on its regret chart
/// (the default budget is 2,000), says it is sampled, and its cumulative line ends at the
/// server's exact average, not at the average of the points drawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_draws_most_of_its_points_and_exact_totals() {
    let Some(mut browser) = Browser::launch("dashboard_never_misleads") else {
        return;
    };
    let server = TestServer::keys_required("ops").await;
    let id = server
        .create(json!({
            "name": "long",
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            // It resets every 15 observations: within the server's cap on active ones.
            "algorithm": {"name": "r-gp-ucb"},
            "time": {"source": "client"}
        }))
        .await;
    // Regrets around 1 with a spike every 97th: the drawn points keep every group's
    // extremes, so their average is well above the true one.
    for batch in 0..4 {
        let observations: Vec<_> = (0..800)
            .map(|k| {
                let i = batch * 800 + k;
                let regret = 1.0 + 0.5 * (i as f64 * 0.7).sin() + if i % 97 == 0 { 40.0 } else { 0.0 };
                json!({"params": {"x": (i as f64 * 0.618).fract()}, "value": -regret, "regret": regret, "t": i as f64})
            })
            .collect();
        server.observe_batch(&id, observations).await;
    }
    let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    let exact = timeline["average_regret"].as_f64().unwrap();
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.sign_in(&server.url("/"), &key);
        browser.open(
            &server.url(&format!("/sessions/{id}")),
            "document.body.dataset.rendered !== undefined",
        );
        let chart = "document.querySelector('[data-chart=\"regret\"]')";
        let drawn = browser.eval(&format!("{chart}.querySelectorAll('circle').length"));
        assert!(
            drawn.as_u64().unwrap() >= 1500,
            "{drawn} points drawn of 3200"
        );
        let caption = browser.eval(&format!("{chart}.querySelector('.caption')?.textContent"));
        assert!(
            caption
                .as_str()
                .unwrap()
                .contains("of 3200 observations drawn"),
            "{caption}"
        );
        // The cumulative line's last value, from the chart's table.
        let last = browser.eval(&format!(
            "(() => {{ {chart}.querySelector('.table-toggle').click(); \
             const rows = [...{chart}.querySelectorAll('.chart-table tbody tr')] \
             .filter(r => r.cells[0].textContent === 'cumulative'); \
             return rows[rows.length - 1].cells[2].textContent; }})()"
        ));
        let last: f64 = last.as_str().unwrap().parse().unwrap();
        let drawn_mean = browser.eval(
            "(() => { const v = [...document.querySelectorAll('[data-chart=\"regret\"] .chart-table tbody tr')] \
             .filter(r => r.cells[0].textContent === 'reported').map(r => Number(r.cells[2].textContent)); \
             return v.reduce((a, b) => a + b, 0) / v.length; })()",
        );
        assert!(
            (last - exact).abs() < 1e-3 * exact,
            "cumulative {last}, exact {exact}"
        );
        assert!(
            drawn_mean.as_f64().unwrap() > exact * 1.05,
            "the drawn points' mean {drawn_mean} would have misled against {exact}"
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
    });
    server.stop().await;
}
