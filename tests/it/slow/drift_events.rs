//! `optimum-moved` (docs/events.md) on a real run, both backends: a client-time session
//! whose optimum jumps twice finds exactly two, and one whose optimum stands still, with
//! the same noise, finds none in 500 steps.

use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

use crate::common;

use common::TestServer;

backend_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    an_optimum_that_jumps_twice_is_two_events_and_one_that_stands_is_none,
);

/// A bump of height 1 and width 0.1 at `centre`, measured with noise of sd 0.05.
fn measured(x: f64, centre: f64, noise: f64) -> f64 {
    (-(x - centre).powi(2) / (2.0 * 0.1f64.powi(2))).exp() + noise
}

/// Runs `steps` suggest/observe rounds at t = 0, 1, ... with the optimum at `centre(t)`;
/// the session's `optimum-moved` events.
async fn run(
    server: &TestServer,
    seed: u64,
    steps: usize,
    centre: impl Fn(f64) -> f64,
) -> Vec<Value> {
    let id = server
        .create(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "bolt"},
            "time": {"source": "client"},
            "seed": seed,
        }))
        .await;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.05).unwrap();
    for step in 0..steps {
        let t = step as f64;
        let (status, answer) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{answer}");
        let suggestion = &answer["suggestions"][0];
        let x = suggestion["params"]["x"].as_f64().unwrap();
        let value = measured(x, centre(t), noise.sample(&mut rng));
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": suggestion["id"], "value": value, "t": t}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let (status, events) = server.get(&format!("/v1/sessions/{id}/events")).await;
    assert_eq!(status, 200, "{events}");
    events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "optimum-moved")
        .cloned()
        .collect()
}

async fn an_optimum_that_jumps_twice_is_two_events_and_one_that_stands_is_none(server: TestServer) {
    let jumps = run(&server, 21, 300, |t| {
        if (100.0..200.0).contains(&t) {
            0.8
        } else {
            0.2
        }
    })
    .await;
    let moves: Vec<(f64, f64, f64)> = jumps
        .iter()
        .map(|e| {
            (
                e["t"].as_f64().unwrap(),
                e["data"]["from"]["params"]["x"].as_f64().unwrap(),
                e["data"]["to"]["params"]["x"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(moves.len(), 2, "{moves:?}");
    assert!((100.0..200.0).contains(&moves[0].0), "{moves:?}");
    assert!(
        (moves[0].1 - 0.2).abs() < 0.1 && (moves[0].2 - 0.8).abs() < 0.1,
        "{moves:?}"
    );
    assert!(moves[1].0 >= 200.0, "{moves:?}");
    assert!(
        (moves[1].1 - 0.8).abs() < 0.1 && (moves[1].2 - 0.2).abs() < 0.1,
        "{moves:?}"
    );
    let still = run(&server, 22, 500, |_| 0.2).await;
    assert!(still.is_empty(), "{still:?}");
    server.stop().await;
}
