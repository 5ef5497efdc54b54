//! Drift events (docs/events.md) on real sessions driven through the engine: a static
//! objective measured with noise finds none in 500 steps, and an optimum whose drift
//! speeds up eightfold finds `drift-rate-changed` towards a shorter temporal lengthscale.

use chrono::{DateTime, Utc};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde_json::json;
use tvbo_core::domain::config::CreateSession;
use tvbo_core::domain::events::{EventKind, NewEvent};
use tvbo_core::domain::input::ObservationInput;
use tvbo_core::engine::{LocalSession, new_session_config};

/// A bump of height 1 and width 0.1 at `centre`, measured with `noise`.
fn measured(x: f64, centre: f64, noise: f64) -> f64 {
    (-(x - centre).powi(2) / (2.0 * 0.1f64.powi(2))).exp() + noise
}

/// Runs `steps` suggest/observe rounds of a client-time session of `algorithm` at
/// t = 0, 1, ... with the optimum at `centre(t)` and noise of sd 0.05; its events, and
/// how many regrets its tracking rule counted.
fn run(
    algorithm: &str,
    seed: u64,
    steps: usize,
    centre: impl Fn(f64) -> f64,
) -> (Vec<NewEvent>, u64) {
    let request: CreateSession = serde_json::from_value(json!({
        "parameters": [{"name": "x", "low": 0, "high": 1}],
        "algorithm": {"name": algorithm},
        "time": {"source": "client"},
        "seed": seed,
    }))
    .unwrap();
    let epoch = DateTime::<Utc>::UNIX_EPOCH;
    let mut session = LocalSession::new(new_session_config(request, seed).unwrap(), epoch);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.05).unwrap();
    for step in 0..steps {
        let t = step as f64;
        let suggestion = session.suggest(1, Some(t), epoch).unwrap().remove(0);
        let x = suggestion.params["x"].as_number().unwrap();
        let observation = ObservationInput {
            suggestion_id: Some(suggestion.id),
            value: Some(measured(x, centre(t), noise.sample(&mut rng))),
            t: Some(t),
            ..ObservationInput::default()
        };
        session
            .observe(&[("observations[0]".into(), observation)], epoch)
            .unwrap();
    }
    let state = &session.history().session.state;
    let counted = state["drift"]["tracking"]["count"].as_u64().unwrap_or(0);
    (session.events().to_vec(), counted)
}

#[test]
fn a_static_objective_finds_no_drift_event_in_500_steps() {
    let (events, counted) = run("bolt", 22, 500, |_| 0.2);
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert!(kinds.is_empty(), "{kinds:?}");
    // Every observation after the warm-up's first suggest with a model has an estimated
    // regret: the tracking rule saw them.
    assert!(counted >= 450, "{counted}");
}

#[test]
fn a_drift_that_speeds_up_is_a_drift_rate_change_to_a_shorter_lengthscale() {
    // The optimum circles with a period of 400 s, then, from t = 200, of 50 s.
    let phase = |t: f64| {
        if t < 200.0 {
            t / 400.0
        } else {
            0.5 + (t - 200.0) / 50.0
        }
    };
    let (events, _) = run("bolt", 22, 350, |t| {
        0.5 + 0.3 * (std::f64::consts::TAU * phase(t)).sin()
    });
    let changes: Vec<&NewEvent> = events
        .iter()
        .filter(|e| e.kind == EventKind::DriftRateChanged)
        .collect();
    assert!(!changes.is_empty(), "{events:?}");
    for change in &changes {
        assert!(change.t > 200.0, "{change:?}");
        let factor = change.data["factor"].as_f64().unwrap();
        assert!(factor <= 0.5, "{change:?}");
    }
}
