//! Sessions side by side, in real headless Chromium with keys required: three sessions
//! (two of one name) picked with the list's boxes, compared on `/compare?sessions=…`:
//! a table of where each stands, their rolling and cumulative regret and the setting
//! each recommended overlaid in one colour per session, the two of one name told apart
//! (on the list too), and an address naming no session said so. And on a session's own
//! page, the history of its recommendation as a table.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under
//! CI).

use crate::common;

use std::time::Duration;

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};

/// A client-time session named `name` run for `rounds` suggest → observe rounds, one a
/// minute, on a bowl whose best x is 0.3; the client reports each regret.
async fn run(server: &TestServer, name: &str, algorithm: &str, rounds: u32) -> String {
    let id = server
        .create(
            json!({"name": name, "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": algorithm}, "model": {"warmup": 4},
            "time": {"source": "client"}, "seed": 7}),
        )
        .await;
    for k in 0..rounds {
        let t = 60.0 * f64::from(k);
        let (status, suggested) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{suggested}");
        let suggestion = &suggested["suggestions"][0];
        let x = suggestion["params"]["x"].as_f64().unwrap();
        let regret = (x - 0.3).powi(2);
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": suggestion["id"], "value": -regret, "regret": regret, "t": t + 30.0}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    id
}

/// Each chart's series names and how many points each has, by chart id.
const SERIES: &str = "Object.fromEntries([...document.querySelectorAll('[data-chart^=\"compare-\"]')] \
     .map(card => { card.querySelector('.table-toggle').click(); \
     const rows = [...card.querySelectorAll('tbody tr')].map(tr => tr.firstChild.textContent); \
     card.querySelector('.table-toggle').click(); \
     const count = {}; for (const r of rows) count[r] = (count[r] || 0) + 1; \
     return [card.dataset.chart, count]; }))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_picked_on_the_list_are_compared_side_by_side() {
    let Some(mut browser) = Browser::launch("dashboard_compare") else {
        return;
    };
    // The default settings: keys required.
    let server = TestServer::keys_required("ops").await;
    let bolt = run(&server, "pump", "bolt", 14).await;
    let gp_ucb = run(&server, "pump", "gp-ucb", 14).await;
    let random = run(&server, "pump, random", "random", 10).await;
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.sign_in(&server.url("/"), &key);
        browser.open(
            &server.url("/"),
            "document.querySelectorAll('#sessions tbody tr').length === 3",
        );
        // Two sessions of one name: each row says its id's start.
        let names = browser
            .eval("[...document.querySelectorAll('#sessions td.name')].map(td => td.textContent)");
        for id in [&bolt, &gp_ucb] {
            let label = format!("pump · {}", &id[..8]);
            assert!(
                names
                    .as_array()
                    .unwrap()
                    .contains(&Value::String(label.clone())),
                "{label} in {names}"
            );
        }
        assert!(
            names.as_array().unwrap().contains(&json!("pump, random")),
            "{names}"
        );
        // Each row's status now, as the listing says it; filtered by it on the page.
        let now = browser.eval(
            "[...document.querySelectorAll('#sessions tbody tr')].map(tr => [tr.dataset.session, tr.querySelector('td.now').textContent])",
        );
        let now: Vec<(String, String)> = serde_json::from_value(now).unwrap();
        assert_eq!(now.len(), 3);
        let (_, listing) = tokio::runtime::Handle::current().block_on(server.get("/v1/sessions"));
        for (id, words) in &now {
            let entry = listing["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == json!(id))
                .unwrap();
            let status = entry["summary"]["tracking"].as_str().unwrap();
            assert_eq!(words.as_str(), status.replace('-', " "), "{entry}");
        }
        let tracking = now.iter().filter(|(_, words)| words == "tracking").count();
        browser.eval(
            "(() => { const f = document.getElementById('tracking-filter'); f.value = 'tracking'; f.dispatchEvent(new Event('change')); })()",
        );
        assert_eq!(
            browser.eval("[...document.querySelectorAll('#sessions tbody tr')].filter(tr => !tr.hidden).length"),
            json!(tracking)
        );
        browser.eval(
            "(() => { const f = document.getElementById('tracking-filter'); f.value = ''; f.dispatchEvent(new Event('change')); })()",
        );
        // Pick them with their boxes; Compare opens the page of the three.
        assert_eq!(
            browser.eval("document.getElementById('compare').disabled"),
            json!(true)
        );
        browser.eval(
            "document.querySelectorAll('#sessions td.pick input').forEach(box => box.click())",
        );
        assert_eq!(
            browser.eval("document.getElementById('compare').textContent"),
            json!("Compare 3")
        );
        browser.eval("document.getElementById('compare').click()");
        assert!(
            browser.wait_for(
                "document.body.dataset.rendered === 'compare'",
                Duration::from_secs(30)
            ),
            "{}",
            browser.eval("document.body.innerText.slice(0, 500)")
        );
        let address = browser.eval("location.pathname + location.search");
        for id in [&bolt, &gp_ucb, &random] {
            assert!(address.as_str().unwrap().contains(id.as_str()), "{address}");
        }
        // The table: one row per session, its name told apart, a recommendation each.
        let table = browser.eval(
            "[...document.querySelectorAll('#compare-table tbody tr')].map(tr => [...tr.children].map(td => td.textContent))",
        );
        let rows = table.as_array().unwrap();
        assert_eq!(rows.len(), 3, "{table}");
        for row in rows {
            assert!(row[6].as_str().unwrap().starts_with("x = "), "{table}");
        }
        let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str().unwrap()).collect();
        assert!(
            labels.contains(&format!("pump ({})", &bolt[..8]).as_str()),
            "{labels:?}"
        );
        // Every session in the regret charts; the recommended x of the two with a model
        // (random search records no optimum), each at its suggests after the warm-up.
        let series = browser.eval(SERIES);
        for chart in ["compare-rolling", "compare-cumulative"] {
            assert_eq!(
                series[chart].as_object().unwrap().len(),
                3,
                "{chart}: {series}"
            );
        }
        let recommended = series["compare-param-x"].as_object().unwrap();
        assert_eq!(recommended.len(), 2, "{series}");
        assert!(
            recommended.values().all(|n| n.as_u64().unwrap() >= 9),
            "{series}"
        );
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        browser.keep_screenshot("dashboard-compare.png", 1100);
        // An address naming a session that is not there: the others drawn, it named.
        let missing = "0b6c1c57-4c3e-4bb3-9d36-3f7cbb1b2a10";
        browser.open(
            &server.url(&format!("/compare?sessions={bolt},{missing},not-an-id")),
            "document.body.dataset.rendered === 'compare'",
        );
        let notes = browser.eval("document.getElementById('compare-notes').textContent");
        assert!(
            notes.as_str().unwrap().contains(missing)
                && notes.as_str().unwrap().contains("1 of the 3"),
            "{notes}"
        );
        assert_eq!(
            browser.eval("document.querySelectorAll('#compare-table tbody tr').length"),
            json!(1)
        );
        // BOLT's page: its recommendation's history, newest first, a row per change.
        browser.open(
            &server.url(&format!("/sessions/{bolt}")),
            "document.body.dataset.rendered !== undefined",
        );
        let history = browser.eval(
            "(() => { const card = document.getElementById('recommendation-history'); card.open = true; \
             return [card.hidden, card.querySelector('h2').textContent, \
             [...card.querySelectorAll('th')].map(th => th.textContent), \
             [...card.querySelectorAll('tbody tr')].map(tr => tr.firstChild.textContent)]; })()",
        );
        assert_eq!(history[0], json!(false), "{history}");
        assert_eq!(
            history[2],
            json!(["session time", "x", "posterior mean"]),
            "{history}"
        );
        let times = history[3].as_array().unwrap();
        assert!(!times.is_empty() && times.len() <= 10, "{history}");
        assert!(
            history[1]
                .as_str()
                .unwrap()
                .contains(&format!("({} change", times.len())),
            "{history}"
        );
        // Newest first: the last round's (its suggest at 13 min, observed at 13.5) heads it.
        assert_eq!(times[0], json!("13.5 min"), "{history}");
    });
}
