//! What matters, in real headless Chromium with keys required: a session over five
//! settings of which two matter (the value is a function of `a` and `b` alone), under
//! `model.lengthscales: per_parameter`, draws each setting's share of the model's
//! sensitivity over its fits, and names the two that matter first. A session with one
//! lengthscale draws no such chart.
//!
//! Needs Chromium (tests/it/common/browser.rs: without it the test skips, except under
//! CI).

use crate::common;

use common::TestServer;
use common::browser::Browser;
use serde_json::{Value, json};

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// A session of the five settings under `model`, 40 observations of sin(6a) +
/// 4(b − 0.4)² at spread-out settings, then three suggests (each fits and records its
/// lengthscales).
async fn session(server: &TestServer, name: &str, model: Value) -> String {
    let parameters: Vec<Value> = NAMES
        .iter()
        .map(|n| json!({"name": n, "low": 0, "high": 1}))
        .collect();
    let id = server
        .create(
            json!({"name": name, "parameters": parameters, "model": model,
                       "time": {"source": "client"}, "seed": 7}),
        )
        .await;
    let roots = [2f64, 3.0, 5.0, 7.0, 11.0].map(f64::sqrt);
    let observations: Vec<Value> = (0..40)
        .map(|i| {
            let x: Vec<f64> = roots.iter().map(|r| (0.5 + i as f64 * r).fract()).collect();
            let params: serde_json::Map<String, Value> = NAMES
                .iter()
                .zip(&x)
                .map(|(n, v)| (n.to_string(), json!(v)))
                .collect();
            let value = (6.0 * x[0]).sin() + 4.0 * (x[1] - 0.4).powi(2);
            json!({"params": params, "value": value, "t": i as f64})
        })
        .collect();
    server.observe_batch(&id, observations).await;
    for t in [40.0, 41.0, 42.0] {
        let (status, body) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{body}");
    }
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_importance_view_names_the_settings_that_matter() {
    let Some(mut browser) = Browser::launch("dashboard_importance") else {
        return;
    };
    let server = TestServer::keys_required("ops").await;
    let per_parameter = session(
        &server,
        "what-matters",
        json!({"lengthscales": "per_parameter", "warmup": 0}),
    )
    .await;
    let shared = session(&server, "one-lengthscale", json!({"warmup": 0})).await;
    let key = server.key().unwrap().to_string();
    tokio::task::block_in_place(|| {
        browser.sign_in(&server.url("/"), &key);
        browser.open(
            &server.url(&format!("/sessions/{per_parameter}")),
            "document.body.dataset.rendered !== undefined",
        );
        let chart = "document.querySelector('[data-chart=\"importance\"]')";
        let caption = browser.eval(&format!("{chart}?.querySelector('.caption')?.textContent"));
        let caption = caption
            .as_str()
            .unwrap_or_else(|| panic!("no importance chart"));
        // "now: a 41 %, b 38 %, …": the two that matter first.
        let ranked: Vec<&str> = caption
            .trim_start_matches("now: ")
            .split(", ")
            .map(|part| part.split(' ').next().unwrap())
            .collect();
        assert_eq!(ranked.len(), 5, "{caption}");
        let mut first_two = ranked[..2].to_vec();
        first_two.sort_unstable();
        assert_eq!(first_two, ["a", "b"], "{caption}");
        let lines = browser.eval(&format!("{chart}.querySelectorAll('path').length"));
        assert!(lines.as_u64().unwrap() >= 5, "{lines}");
        if let Ok(dir) = std::env::var("TVBO_SCREENSHOTS") {
            let path = format!("{dir}/dashboard-importance.png");
            browser.screenshot_from(&path, "[data-chart=\"importance\"]", 420);
        }
        assert!(browser.errors.is_empty(), "{:?}", browser.errors);
        browser.open(
            &server.url(&format!("/sessions/{shared}")),
            "document.body.dataset.rendered !== undefined",
        );
        assert_eq!(
            browser.eval("!!document.querySelector('[data-chart=\"importance\"]')"),
            json!(false)
        );
    });
    server.stop().await;
}
