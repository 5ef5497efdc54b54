//! Optimisation over HTTP in client time: algorithms beat random on a drifting objective,
//! and the model survives a restart.

mod common;

use common::{TestServer, client_session};
use serde_json::{Value, json};

/// A 2-D bump whose peak circles the centre of the square once a minute.
fn drifting_objective(x: f64, y: f64, t: f64) -> f64 {
    let angle = 2.0 * std::f64::consts::PI * t / 60.0;
    let (cx, cy) = (0.5 + 0.3 * angle.cos(), 0.5 + 0.3 * angle.sin());
    (-((x - cx).powi(2) + (y - cy).powi(2)) / (2.0 * 0.2f64.powi(2))).exp()
}

/// Runs `steps` suggest/observe rounds (one per second of client time) and returns the
/// session's average regret as the server reports it.
async fn run_loop(server: &TestServer, algorithm: &str, seed: u64, steps: usize) -> f64 {
    let id = server.create(client_session(algorithm, seed)).await;
    for step in 0..steps {
        let t = step as f64;
        let (status, body) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{body}");
        let suggestion = &body["suggestions"][0];
        let x = suggestion["params"]["x"].as_f64().unwrap();
        let y = suggestion["params"]["y"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y));
        let value = drifting_objective(x, y, t);
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({
                    "suggestion_id": suggestion["id"],
                    "value": value,
                    "t": t,
                    "regret": 1.0 - value,
                }),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, regret) = server.get(&format!("/v1/sessions/{id}/regret")).await;
    assert_eq!(status, 200);
    assert_eq!(regret["points"].as_array().unwrap().len(), steps);
    regret["average_regret"].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tv_gp_ucb_beats_random_on_a_moving_peak() {
    let server = TestServer::start().await;
    let seeds = 1..=5u64;
    let mut tv = Vec::new();
    let mut random = Vec::new();
    for seed in seeds {
        tv.push(run_loop(&server, "tv-gp-ucb", seed, 60).await);
        random.push(run_loop(&server, "random", seed, 60).await);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "mean regret: tv-gp-ucb {:.3} {tv:?}, random {:.3} {random:?}",
        mean(&tv),
        mean(&random)
    );
    assert!(
        mean(&tv) < mean(&random),
        "tv-gp-ucb {tv:?} vs random {random:?}"
    );
    server.stop().await;
}

async fn next_suggestion(server: &TestServer, id: &str, t: f64) -> Value {
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
        .await;
    assert_eq!(status, 201, "{body}");
    body["suggestions"][0]["params"].clone()
}

/// Two sessions with the same seed and history; one asks the running server, the other a
/// new server over the same file: the suggestions must be equal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_gives_the_same_next_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("restart.db");
    for algorithm in ["tv-gp-ucb", "gp-ucb", "et-gp-ucb", "r-gp-ucb"] {
        let server = TestServer::start_on(path.clone()).await;
        let a = server.create(client_session(algorithm, 42)).await;
        let b = server.create(client_session(algorithm, 42)).await;
        for step in 0..12 {
            let t = step as f64;
            let pa = next_suggestion(&server, &a, t).await;
            let pb = next_suggestion(&server, &b, t).await;
            assert_eq!(pa, pb, "{algorithm}: same seed and history, step {step}");
            let value = drifting_objective(pa["x"].as_f64().unwrap(), pa["y"].as_f64().unwrap(), t);
            for id in [&a, &b] {
                let (status, body) = server
                    .post(
                        &format!("/v1/sessions/{id}/observations"),
                        &json!({"params": pa, "value": value, "t": t + 0.5}),
                    )
                    .await;
                assert_eq!(status, 201, "{body}");
            }
        }
        let running = next_suggestion(&server, &a, 12.0).await;
        server.stop().await;
        let restarted_server = TestServer::start_on(path.clone()).await;
        let restarted = next_suggestion(&restarted_server, &b, 12.0).await;
        assert_eq!(
            running, restarted,
            "{algorithm}: the restart changed the suggestion"
        );
        restarted_server.stop().await;
    }
}
