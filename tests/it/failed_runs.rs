//! Failed runs teach the model (issue 67, point 3), through the server with keys on and
//! the default limits: one parameter x in [0, 1], value x to maximise, and every run
//! above x = 0.8 fails, so the unconstrained best is the crash region. Under the default
//! `model.failures: impute` a failed setting is a data point below every success, so
//! the suggestions leave the crash region and `GET …/best` recommends a setting that
//! succeeds; under `ignore` (the papers') every round after the warm-up failed and the
//! recommendation crashed. Under `model.warping: log` (the values are positive, the
//! imputed failures below zero) the same holds.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    failed_runs_steer_suggestions_and_the_recommendation_away,
);

/// Runs above this fail.
const CRASH_ABOVE: f64 = 0.8;
/// Rounds of each session, and its warm-up of uniform random suggestions (the default).
const ROUNDS: usize = 60;
const WARMUP: usize = 15;

/// Runs the scenario on a session with `seed`: the rounds after the warm-up that failed,
/// and the x `GET …/best` recommends at the end.
async fn scenario(server: &TestServer, seed: u64, model: Value) -> (usize, f64) {
    let id = server
        .create(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "time": {"source": "client"},
            "model": model,
            "seed": seed,
        }))
        .await;
    let mut failed_after_warmup = 0;
    for round in 0..ROUNDS {
        let t = round as f64;
        let (status, body) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{body}");
        let suggestion = &body["suggestions"][0];
        let x = suggestion["params"]["x"].as_f64().unwrap();
        let outcome = if x > CRASH_ABOVE {
            failed_after_warmup += usize::from(round >= WARMUP);
            json!({"suggestion_id": suggestion["id"], "failed": true, "reason": "crashed", "t": t})
        } else {
            json!({"suggestion_id": suggestion["id"], "value": x, "t": t})
        };
        let (status, body) = server
            .post(&format!("/v1/sessions/{id}/observations"), &outcome)
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, best) = server
        .get(&format!("/v1/sessions/{id}/best?t={ROUNDS}"))
        .await;
    assert_eq!(status, 200, "{best}");
    (failed_after_warmup, best["params"]["x"].as_f64().unwrap())
}

async fn failed_runs_steer_suggestions_and_the_recommendation_away(server: TestServer) {
    let server = server.with_key("crashes").await;
    let mut outcomes = Vec::new();
    for seed in [1, 2, 3] {
        outcomes.push((seed, scenario(&server, seed, json!({})).await));
    }
    outcomes.push((1, scenario(&server, 1, json!({"warping": "log"})).await));
    println!("(seed, (failed rounds after the warm-up, best x)): {outcomes:?}");
    for (seed, (failed, best)) in outcomes {
        assert!(
            4 * failed <= ROUNDS - WARMUP,
            "seed {seed}: {failed} of {} rounds after the warm-up failed",
            ROUNDS - WARMUP
        );
        assert!(
            best <= CRASH_ABOVE,
            "seed {seed}: GET best recommends x = {best}, which crashes"
        );
    }
}
