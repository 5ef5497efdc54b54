//! Tuning a drifting system in-process with `tvbo-core` alone: no server, no database.
//!
//! The "system" is a function of two settings whose best point moves with time. A BOLT
//! session suggests a setting, the program measures it and observes the value, 200 times
//! on a simulated clock (one measurement every 0.5 s). Every 25 steps it prints where the
//! optimum is, what was suggested, and the active dataset that BOLT kept.
//!
//! Run it: `cargo run --release -p tvbo-core --example embed`.

use chrono::{DateTime, Utc};
use serde_json::json;
use tvbo_core::domain::config::CreateSession;
use tvbo_core::domain::input::ObservationInput;
use tvbo_core::engine::{LocalSession, new_session_config};

/// The system's response to settings `(x, y)` at time `t` (seconds): a peak of height 1
/// that circles the middle of the unit square once every 200 s.
fn measure(x: f64, y: f64, t: f64) -> f64 {
    let (cx, cy) = optimum(t);
    (-((x - cx).powi(2) + (y - cy).powi(2)) / 0.05).exp()
}

/// Where the peak is at time `t`.
fn optimum(t: f64) -> (f64, f64) {
    let angle = std::f64::consts::TAU * t / 200.0;
    (0.5 + 0.25 * angle.cos(), 0.5 + 0.25 * angle.sin())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The same request a client would POST to /v1/sessions.
    let request: CreateSession = serde_json::from_value(json!({
        "name": "embedded",
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": "bolt"},
        "time": {"source": "client"},
        "seed": 7
    }))?;
    let config = new_session_config(request, 7)?;
    // With client time the instant only stamps the rows; the session runs on `t`.
    let epoch = DateTime::<Utc>::UNIX_EPOCH;
    let mut session = LocalSession::new(config, epoch);
    println!("  step      t   optimum (x, y)   suggested (x, y)   value  kept");
    for step in 0..200 {
        let t = 0.5 * f64::from(step);
        let suggestion = session.suggest(1, Some(t), epoch)?.remove(0);
        // Float parameters' values are numbers (a categorical one's would be choices).
        let number = |name: &str| suggestion.params[name].as_number().expect("a float");
        let (x, y) = (number("x"), number("y"));
        let value = measure(x, y, t);
        let observation = ObservationInput {
            suggestion_id: Some(suggestion.id),
            value: Some(value),
            t: Some(t),
            ..ObservationInput::default()
        };
        session.observe(&[("observations[0]".into(), observation)], epoch)?;
        if step % 25 == 24 {
            let (cx, cy) = optimum(t);
            println!(
                "{:>6} {t:>6.1}   ({cx:.2}, {cy:.2})     ({x:.2}, {y:.2})      {value:>5.2}  {:>4}",
                step + 1,
                session.history().active.len()
            );
        }
    }
    Ok(())
}
