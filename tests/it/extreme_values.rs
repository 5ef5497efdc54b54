//! Prior-based sessions under extreme accepted input (docs/prior-selection.md, "Numerical
//! safety"): the likelihoods and the hyperposterior used to overflow to NaN, which was
//! stored as JSON `null` and broke the session for good (every later call a 500).
//!
//! - A property run: every prior-based algorithm, driven through the engine exactly as
//!   the server drives it, with values spanning ±1e300 and noise from 1e-300 to 1e300,
//!   for 120 rounds each: every accepted step's state reads back at the next step, an
//!   out-of-range value is a field error, and nothing else fails.
//! - Over HTTP on both backends, a case that broke with ordinary values: `hp-gp-ts` with
//!   `model.noise` 1e-30; every endpoint answers after it.

use crate::common;

use chrono::{Duration, TimeZone, Utc};
use common::TestServer;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use tvbo::domain::config::CreateSession;
use tvbo::domain::input::ObservationInput;
use tvbo::engine::{EngineError, LocalSession, new_session_config};

const ALGORITHMS: [&str; 6] = [
    "pe-gp-ucb",
    "pe-gp-ts",
    "hp-gp-ts",
    "map-gp-ts",
    "gp-ucb",
    "tv-gp-ucb",
];

/// A session over `arms` arms on a line, with kernel priors (one for GP-UCB and
/// TV-GP-UCB, which take one).
fn prior_session(algorithm: &str, arms: usize, noise: f64) -> Value {
    let arms: Vec<Value> = (0..arms)
        .map(|i| json!({"name": format!("a{i}"), "params": {"x": i as f64}}))
        .collect();
    let mut priors = vec![json!({"kernel": "rbf", "lengthscale": 1.0})];
    if !matches!(algorithm, "gp-ucb" | "tv-gp-ucb") {
        priors
            .push(json!({"kernel": "matern52", "lengthscale": 3.0, "variance": 2.0, "mean": 1.0}));
    }
    json!({
        "parameters": [{"name": "x", "low": 0, "high": arms.len()}],
        "arms": arms,
        "algorithm": {"name": algorithm, "priors": priors},
        "model": {"noise": noise},
        "time": {"source": "client"},
        "seed": 3,
    })
}

/// ±10^u, u uniform in [−300, 300].
fn extreme(rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    let magnitude = 10f64.powf(rng.random_range(-300.0..300.0));
    if rng.random::<bool>() {
        magnitude
    } else {
        -magnitude
    }
}

#[test]
fn prior_based_sessions_survive_values_and_noise_across_f64() {
    let created = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for algorithm in ALGORITHMS {
        for noise in [1e-300, 1e-30, 1.0, 1e30, 1e100, 1e300] {
            let request: CreateSession =
                serde_json::from_value(prior_session(algorithm, 6, noise)).unwrap();
            let config = match new_session_config(request, 3) {
                Ok(config) => config,
                Err(e) => {
                    assert!(noise > 1e100, "{algorithm}, noise {noise:e}: {e}");
                    assert_eq!(e.field, "model.noise");
                    continue;
                }
            };
            let mut session = LocalSession::new(config, created);
            for round in 0..120 {
                let t = round as f64;
                let now = created + Duration::seconds(round);
                let handed = session
                    .suggest(1, Some(t), now)
                    .unwrap_or_else(|e| panic!("{algorithm}, noise {noise:e}, round {round}: {e}"));
                let value = if round % 3 == 0 {
                    rng.random::<f64>() * 2.0 - 1.0
                } else {
                    extreme(&mut rng)
                };
                let input = ObservationInput {
                    suggestion_id: Some(handed[0].id),
                    value: Some(value),
                    t: Some(t + 0.5),
                    ..ObservationInput::default()
                };
                match session.observe(&[(String::new(), input)], now) {
                    Ok(_) => assert!(value.abs() <= 1e100, "{value:e} was accepted"),
                    Err(EngineError::Invalid(e)) => {
                        assert!(value.abs() > 1e100, "{algorithm}, noise {noise:e}: {e}");
                        assert_eq!(e.field, "value");
                    }
                    Err(e) => panic!("{algorithm}, noise {noise:e}, round {round}: {e}"),
                }
            }
        }
    }
}

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test]
    a_tiny_noise_leaves_every_endpoint_answering,
);

/// `hp-gp-ts` with `model.noise` 1e-30 and values in [−1, 1]: before the fix its state
/// became NaN after 11 to 26 rounds in seeds 0, 2 and 3, and every call after was a 500.
async fn a_tiny_noise_leaves_every_endpoint_answering(server: TestServer) {
    let server = server.with_key("extreme").await;
    for seed in [0, 2, 3] {
        let mut body = prior_session("hp-gp-ts", 6, 1e-30);
        body["seed"] = json!(seed);
        let id = server.create(body).await;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for step in 0..30 {
            let t = step as f64;
            let (status, answer) = server
                .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
                .await;
            assert_eq!(status, 201, "seed {seed}, step {step}: {answer}");
            let value = rng.random::<f64>() * 2.0 - 1.0;
            let (status, answer) = server
                .post(
                    &format!("/v1/sessions/{id}/observations"),
                    &json!({"suggestion_id": answer["suggestions"][0]["id"], "value": value, "t": t + 0.5}),
                )
                .await;
            assert_eq!(status, 201, "seed {seed}, step {step}: {answer}");
        }
        for path in [
            "",
            "/best?t=31",
            "/model",
            "/regret",
            "/steps",
            "/timeline",
            "/observations",
        ] {
            let (status, answer) = server.get(&format!("/v1/sessions/{id}{path}")).await;
            assert_eq!(status, 200, "seed {seed}, {path}: {answer}");
        }
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/predict"),
                &json!({"points": [{"x": 0.0}, {"x": 5.0}], "t": 31.0}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        for prediction in answer["predictions"].as_array().unwrap() {
            assert!(prediction["mean"].is_number(), "{answer}");
        }
    }
}
