//! Shared benchmark data: the reference setting of docs/performance.md, d = 3 plus time over a 600 s
//! horizon, Matérn-5/2 in space.
#![allow(dead_code)]

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tvbo_core::domain::checked::CheckedConfig;
use tvbo_core::domain::config::{
    AlgorithmConfig, CreateSession, Failures, FitStart, Hyperpriors, Lengthscales, Level,
    ModelConfig, Warping,
};
use tvbo_core::domain::space::{ParameterSpec, SearchSpace};
use tvbo_core::gp::{Gp, Hyperparameters, KernelKind, KernelSpec};
use tvbo_core::policy::Observation;

pub const DIM: usize = 3;
pub const HORIZON: f64 = 600.0;

/// Matérn-5/2 × Matérn-3/2.
pub fn spec() -> KernelSpec {
    KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32))
}

/// A drifting smooth objective sampled at n random points over the horizon, standardised.
pub fn data(n: usize) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
    let xs: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..DIM).map(|_| rng.random::<f64>()).collect())
        .collect();
    let ts: Vec<f64> = (0..n).map(|i| HORIZON * i as f64 / n as f64).collect();
    let raw: Vec<f64> = xs
        .iter()
        .zip(&ts)
        .map(|(x, t)| {
            let shift = 0.3 * (t / 200.0).sin();
            -(x[0] - 0.5 - shift).powi(2) - (x[1] - 0.3).powi(2)
                + (6.0 * x[2]).sin() * 0.2
                + 0.05 * (rng.random::<f64>() - 0.5)
        })
        .collect();
    let mean = raw.iter().sum::<f64>() / n as f64;
    let sd = (raw.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    let ys = raw.iter().map(|y| (y - mean) / sd).collect();
    (xs, ts, ys)
}

/// Typical fitted hyperparameters of that data.
pub fn hyper() -> Hyperparameters {
    Hyperparameters {
        signal_variance: 1.0,
        spatial_lengthscale: 0.3,
        temporal_lengthscale: 300.0,
        noise_variance: 0.01,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    }
}

/// The GP of `data(n)` with `hyper()`.
pub fn gp(n: usize) -> Gp {
    let (xs, ts, ys) = data(n);
    Gp::new(spec(), hyper(), DIM, xs, ts, ys).expect("benchmark GP")
}

/// `data(n)` as a policy's observations.
pub fn observations(n: usize) -> Vec<Observation> {
    let (xs, ts, ys) = data(n);
    xs.into_iter()
        .zip(ts)
        .zip(ys)
        .enumerate()
        .map(|(i, ((x, t), y))| Observation {
            seq: i as i64 + 1,
            x,
            t,
            y,
        })
        .collect()
}

/// The unit cube [0,1]^DIM as a session's search space.
pub fn unit_space() -> SearchSpace {
    SearchSpace::new(
        (0..DIM)
            .map(|i| ParameterSpec::float(&format!("x{i}"), 0.0, 1.0))
            .collect(),
    )
    .expect("a valid space")
}

/// Matérn-5/2 in space with the given temporal kernel, no warm-up.
pub fn model(temporal: KernelKind) -> ModelConfig {
    ModelConfig {
        spatial_kernel: KernelKind::Matern52,
        temporal_kernel: Some(temporal),
        noise: None,
        warmup: 0,
        fit_start: FitStart::Fixed,
        hyperpriors: Hyperpriors::default(),
        failures: Failures::default(),
        lengthscales: Lengthscales::default(),
        warping: Warping::default(),
        level: Level::default(),
    }
}

/// A session over DIM unit parameters running `algorithm`.
pub fn session(algorithm: AlgorithmConfig) -> CheckedConfig {
    let parameters: Vec<serde_json::Value> = (0..DIM)
        .map(|i| serde_json::json!({"name": format!("x{i}"), "low": 0, "high": 1}))
        .collect();
    let request: CreateSession = serde_json::from_value(
        serde_json::json!({ "parameters": parameters, "algorithm": algorithm }),
    )
    .expect("request");
    CheckedConfig::from_request(request, 0).expect("benchmark session")
}
