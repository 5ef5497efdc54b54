//! BOLT and W-DBO over HTTP in client time: forgetting by relevance, dataset size from the
//! measured response time.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

fn one_dimensional(algorithm: Value) -> Value {
    json!({
        "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
        "algorithm": algorithm,
        "model": {"warmup": 3},
        "time": {"source": "client"},
        "seed": 5
    })
}

/// A bump whose peak drifts across the interval with the given period (seconds).
fn bump(x: f64, t: f64, period: f64) -> f64 {
    let centre = 0.5 + 0.35 * (2.0 * std::f64::consts::PI * t / period).sin();
    (-(x - centre).powi(2) / (2.0 * 0.15f64.powi(2))).exp()
}

/// Drift with a two-minute period.
fn drifting(x: f64, t: f64) -> f64 {
    bump(x, t, 120.0)
}

/// Drift with a ten-minute period: over 20 s the objective barely moves.
fn slow(x: f64, t: f64) -> f64 {
    bump(x, t, 600.0)
}

/// One round at time t: suggest, evaluate `objective`, observe.
async fn suggest_and_observe(
    server: &TestServer,
    id: &str,
    t: f64,
    objective: fn(f64, f64) -> f64,
) {
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
        .await;
    assert_eq!(status, 201, "{body}");
    let suggestion = &body["suggestions"][0];
    let x = suggestion["params"]["x"].as_f64().unwrap();
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"suggestion_id": suggestion["id"], "value": objective(x, t), "t": t}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bolt_shrinks_its_dataset_when_suggest_intervals_grow() {
    let server = TestServer::start().await;
    let id = server
        .create(one_dimensional(
            json!({"name": "bolt", "min_dataset_size": 5, "max_dataset_size": 500}),
        ))
        .await;
    let mut t = 0.0;
    let mut sizes = Vec::new();
    for _ in 0..60 {
        suggest_and_observe(&server, &id, t, slow).await;
        let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
        let n = session["dataset_size"].as_f64().unwrap();
        if let Some(limit) = session["max_dataset_size"].as_i64() {
            sizes.push(limit);
            assert!(n as i64 <= limit.max(5), "dataset {n} above n* {limit}");
        }
        // The client's evaluation gets slower as the dataset grows: R(n) = 0.5 + 2e-4 n³ s.
        t += 0.5 + 2e-4 * n.powi(3);
    }
    println!("n* after each observation: {sizes:?}");
    let peak = *sizes.iter().max().unwrap();
    let last = *sizes.last().unwrap();
    assert!(last < peak, "n* never fell: {sizes:?}");
    assert!(last > 5 && last < 500, "n* pinned to a bound: {sizes:?}");
    let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert_eq!(model["max_dataset_size"], last);
    assert!(model["response_time"]["coefficients"].is_array(), "{model}");
    assert_eq!(
        model["relevance"].as_array().unwrap().len() as i64,
        model["dataset_size"].as_i64().unwrap()
    );
    let (_, all) = server
        .get(&format!(
            "/v1/sessions/{id}/observations?include_pruned=true"
        ))
        .await;
    let pruned: Vec<&Value> = all["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["active"] == false)
        .collect();
    assert!(!pruned.is_empty());
    assert!(pruned.iter().all(|o| o["removed_reason"] == "relevance"));
    let (_, regret) = server.get(&format!("/v1/sessions/{id}/regret")).await;
    let inactive = regret["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["active"] == false)
        .count();
    assert_eq!(inactive, pruned.len());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_duplicate_is_forgotten_before_a_recent_distinct_point() {
    let server = TestServer::start().await;
    // Dataset capped at 5: the 6th observation forces exactly one removal.
    let id = server
        .create(one_dimensional(
            json!({"name": "bolt", "min_dataset_size": 5, "max_dataset_size": 5}),
        ))
        .await;
    let point = |x: f64, t: f64| json!({"params": {"x": x}, "value": slow(x, t), "t": t});
    let batch = vec![
        // seq 1 and 2: an old observation and its duplicate (same x, same time).
        point(0.5, 0.0),
        point(0.5, 0.0),
        // seq 3–5: observations at distinct places, the last one recent.
        point(0.1, 6.0),
        point(0.9, 12.0),
        point(0.3, 20.0),
        // seq 6: a recent point at another distinct place.
        point(0.7, 20.0),
    ];
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"observations": batch}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let removed: Vec<i64> = body["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["active"] == false)
        .map(|o| o["seq"].as_i64().unwrap())
        .collect();
    assert!(
        removed == [1] || removed == [2],
        "removed {removed:?}: {body}"
    );
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(session["dataset_size"], 5);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w_dbo_spends_its_budget_on_stale_observations() {
    let server = TestServer::start().await;
    let id = server
        .create(one_dimensional(
            json!({"name": "w-dbo", "min_dataset_size": 5}),
        ))
        .await;
    let mut t = 0.0;
    for _ in 0..40 {
        suggest_and_observe(&server, &id, t, drifting).await;
        t += 10.0;
    }
    let (_, all) = server
        .get(&format!(
            "/v1/sessions/{id}/observations?include_pruned=true"
        ))
        .await;
    let observations = all["observations"].as_array().unwrap();
    let pruned: Vec<&Value> = observations
        .iter()
        .filter(|o| o["active"] == false)
        .collect();
    assert!(!pruned.is_empty(), "W-DBO forgot nothing in 400 s of drift");
    assert!(pruned.iter().all(|o| o["removed_reason"] == "budget"));
    assert!(observations.len() - pruned.len() >= 5);
    let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert!(model["algorithm_state"]["budget"].as_f64().unwrap() >= 0.0);
    server.stop().await;
}
