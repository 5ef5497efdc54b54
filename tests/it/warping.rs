//! `model.warping: log` through the server with keys on and the default limits: on a
//! throughput that spans three orders of magnitude with noise proportional to its level
//! (as a real system's is), the log-warped model predicts the low end within 10 %, sure
//! of it to a few per cent, where the model of the values themselves, whose one noise
//! variance is set by the high end, is less accurate and less sure there than the low
//! end's whole range; the session echoes its warping, and a warping it does not know is
//! a 422 naming `model.warping` that creates nothing.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    log_warping_models_relative_differences,
);

/// The throughput at a: e^(8a), from 1 to about 3,000.
fn throughput(a: f64) -> f64 {
    (8.0 * a).exp()
}

/// A session under `model`, 40 observations of the throughput at spread-out a with ±5 %
/// noise (a fixed pseudo-random sequence), and its predicted (mean, std) at `points`.
async fn predictions(server: &TestServer, model: Value, points: &[f64]) -> Vec<(f64, f64)> {
    let id = server
        .create(json!({
            "parameters": [{"name": "a", "low": 0, "high": 1}],
            "goal": "maximize",
            "time": {"source": "client"},
            "model": model,
        }))
        .await;
    let observations: Vec<Value> = (0..40)
        .map(|i| {
            let a = (0.5 + i as f64 * 2f64.sqrt()).fract();
            let noise = 0.05 * (2.0 * (i as f64 * 3f64.sqrt()).fract() - 1.0);
            json!({"params": {"a": a}, "value": throughput(a) * (1.0 + noise), "t": i as f64})
        })
        .collect();
    server.observe_batch(&id, observations).await;
    let points: Vec<Value> = points.iter().map(|a| json!({"a": a})).collect();
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/predict"),
            &json!({"points": points, "t": 40.0}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["predictions"]
        .as_array()
        .unwrap_or_else(|| panic!("no predictions: {body}"))
        .iter()
        .map(|p| (p["mean"].as_f64().unwrap(), p["std"].as_f64().unwrap()))
        .collect()
}

async fn log_warping_models_relative_differences(server: TestServer) {
    let server = server.with_key("warping").await;
    let low = [0.05, 0.1, 0.15, 0.2];
    let log = predictions(&server, json!({"warping": "log"}), &low).await;
    let linear = predictions(&server, json!({}), &low).await;
    let error = |(mean, _): (f64, f64), a: f64| (mean / throughput(a) - 1.0).abs();
    let worst = |p: &[(f64, f64)]| {
        p.iter()
            .zip(low)
            .map(|(&p, a)| error(p, a))
            .fold(0.0, f64::max)
    };
    println!(
        "(mean, std) at a = {low:?}: log {log:?}, none {linear:?}; worst relative errors {} and {}",
        worst(&log),
        worst(&linear)
    );
    assert!(worst(&log) < 0.1, "log: {log:?}");
    assert!(
        worst(&linear) > 3.0 * worst(&log),
        "none: {linear:?}, log: {log:?}"
    );
    // The log model is sure of the low end to a few per cent; the plain model's
    // uncertainty there is wider than the low end's whole range.
    let range = throughput(low[3]) - throughput(low[0]);
    for ((mean, std), (_, plain_std)) in log.into_iter().zip(linear) {
        assert!(
            mean > 0.0 && std > 0.0 && std < 0.1 * mean,
            "{mean} ± {std}"
        );
        assert!(plain_std > range, "{plain_std} against {range}");
    }

    let (status, created) = server
        .post(
            "/v1/sessions",
            &json!({"parameters": [{"name": "a", "low": 0, "high": 1}], "model": {"warping": "log"}}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["model"]["warping"], "log", "{created}");

    let (_, before) = server.get("/v1/sessions").await;
    let (status, problem) = server
        .post(
            "/v1/sessions",
            &json!({"parameters": [{"name": "a", "low": 0, "high": 1}], "model": {"warping": "sqrt"}}),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "model.warping", "{problem}");
    let (_, after) = server.get("/v1/sessions").await;
    assert_eq!(before, after, "a refused create changed the listing");
}
