//! `optimum-moved` (docs/events.md) on a real run, both backends: a client-time session
//! whose optimum jumps twice finds exactly two, and one whose optimum stands still, with
//! the same noise, finds none in 500 steps; a context session whose best x jumps at a
//! constant load finds one, and none when the load moves and the best x with it.

use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

use crate::common;

use common::TestServer;

backend_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    an_optimum_that_jumps_twice_is_two_events_and_one_that_stands_is_none,
    in_a_context_session_the_optimum_moving_is_an_event_and_the_context_moving_is_not,
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
    run_in_context(server, seed, steps, centre, None::<fn(f64) -> f64>).await
}

/// [`run`], in a session with a context parameter `load` held at `load(t)` by each
/// suggest when `load` is given.
async fn run_in_context(
    server: &TestServer,
    seed: u64,
    steps: usize,
    centre: impl Fn(f64) -> f64,
    load: Option<impl Fn(f64) -> f64>,
) -> Vec<Value> {
    let mut parameters = vec![json!({"name": "x", "low": 0, "high": 1})];
    if load.is_some() {
        parameters.push(json!({"name": "load", "low": 0, "high": 1, "context": true}));
    }
    let id = server
        .create(json!({
            "parameters": parameters,
            "algorithm": {"name": "bolt"},
            "time": {"source": "client"},
            "seed": seed,
        }))
        .await;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.05).unwrap();
    for step in 0..steps {
        let t = step as f64;
        let mut body = json!({"t": t});
        if let Some(load) = &load {
            body["fixed"] = json!({"load": load(t)});
        }
        let (status, answer) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &body)
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

async fn in_a_context_session_the_optimum_moving_is_an_event_and_the_context_moving_is_not(
    server: TestServer,
) {
    // At a constant load the best x jumps from 0.2 to 0.8 at t = 120: one event.
    let jump = |t: f64| if t < 120.0 { 0.2 } else { 0.8 };
    let moved = run_in_context(&server, 31, 240, jump, Some(|_| 0.5)).await;
    assert_eq!(moved.len(), 1, "{moved:?}");
    let event = &moved[0];
    assert!(event["t"].as_f64().unwrap() >= 120.0, "{event}");
    let from = event["data"]["from"]["params"]["x"].as_f64().unwrap();
    let to = event["data"]["to"]["params"]["x"].as_f64().unwrap();
    assert!(
        (from - 0.2).abs() < 0.1 && (to - 0.8).abs() < 0.1,
        "{event}"
    );
    assert_eq!(event["data"]["to"]["params"]["load"], 0.5, "{event}");
    // The load jumps from 0.2 to 0.8 at t = 120 and the best x with it: no event.
    let load = |t: f64| if t < 120.0 { 0.2 } else { 0.8 };
    let followed = run_in_context(&server, 32, 240, load, Some(load)).await;
    assert!(followed.is_empty(), "{followed:?}");
    server.stop().await;
}
