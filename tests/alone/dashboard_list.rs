//! The dashboard's list of 500 sessions in Chromium, with keys required and the default
//! limits: every row loads with its summary and sparkline, at most 3 API requests per
//! page of 50 rows, counted from the server's own metrics (`tvbo_http_requests_total`
//! of the `/v1` routes). Here because the metrics' recorder is process-global.

use crate::common;

use std::time::Duration;

use common::TestServer;
use common::browser::Browser;
use serde_json::json;

use crate::metrics::{scrape, v1_requests};

const SESSIONS: usize = 500;
const PAGE: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_of_500_sessions_loads_every_row_in_a_few_requests_per_page() {
    let _alone = crate::ALONE.lock().await;
    let Some(mut browser) = Browser::launch("dashboard_list") else {
        return;
    };
    let server = TestServer::keys_required("team").await;
    let key = server.key().expect("a key");
    for i in 0..SESSIONS {
        let id = server
            .create(json!({
                "name": format!("session-{i:03}"),
                "parameters": [{"name": "x", "low": 0, "high": 1}],
                "time": {"source": "client"}
            }))
            .await;
        if i % 100 == 0 {
            // A few with regrets, for their sparklines.
            let observations: Vec<_> = (0..6)
                .map(|k| json!({"params": {"x": k as f64 / 6.0}, "value": k as f64, "regret": 6.0 - k as f64, "t": k as f64}))
                .collect();
            let (status, answer) = server
                .post(
                    &format!("/v1/sessions/{id}/observations"),
                    &json!({"observations": observations}),
                )
                .await;
            assert_eq!(status, 201, "{answer}");
        }
    }
    let before = scrape(&server.client, &server.url("/metrics")).await;
    let pages = SESSIONS.div_ceil(PAGE);
    tokio::task::block_in_place(|| {
        browser.open(&server.url("/"), "document.querySelector('#api-key')");
        browser.eval(&format!("localStorage.setItem('tvbo.apiKey', '{key}')"));
        let rows = "document.querySelectorAll('#sessions tbody tr[data-session]').length";
        browser.open(&server.url("/"), &format!("{rows} === {PAGE}"));
        for page in 2..=pages {
            browser.eval("document.querySelector('main > button').click()");
            assert!(
                browser.wait_for(
                    &format!("{rows} === {}", page * PAGE),
                    Duration::from_secs(10)
                ),
                "page {page} did not load: {} rows",
                browser.eval(rows)
            );
        }
        assert_eq!(
            browser.eval("document.querySelector('main > button').hidden"),
            json!(true)
        );
        // Every row drawn whole: its regret cell and sparkline, none "error" nor
        // "rate limited".
        let text = browser.eval("document.getElementById('sessions').innerText");
        let text = text.as_str().unwrap();
        assert!(!text.contains("error") && !text.contains("rate"), "{text}");
        assert_eq!(
            browser.eval("document.querySelectorAll('#sessions svg.sparkline').length"),
            json!(SESSIONS)
        );
        assert_eq!(
            browser.eval("document.querySelectorAll('#sessions svg.sparkline path').length"),
            json!(SESSIONS / 100)
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
    });
    let after = scrape(&server.client, &server.url("/metrics")).await;
    let requests = v1_requests(&after) - v1_requests(&before);
    // At least one per page (the metrics do count), at most three.
    assert!(
        (pages as f64..=(3 * pages) as f64).contains(&requests),
        "{requests} API requests for {pages} pages of rows"
    );
    server.stop().await;
}
