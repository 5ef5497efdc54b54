//! A drifting polynomial with several wells, outside the papers' suites: the objective on
//! which W-DBO's fidelity to the authors' code is checked (docs/benchmarks.md, "W-DBO
//! against the official code"). `benches/wdbo/compare.py` evaluates the same function
//! for the official W-DBO.
//!
//! With z = 3x − 1.5 ∈ [−1.5, 1.5]^d and τ = t / horizon ∈ [0, 1]:
//!
//! `f(z, τ) = Σ_i (z_i² − 1)² + a Σ_i sin(2π(ω_i τ + φ_i)) z_i + b Σ_i z_i z_{i+1}`
//!
//! Each `(z_i² − 1)²` is a double well, so f has 2^d wells near z_i = ±1; the tilts
//! (a = 0.4) make first one well and then another the deepest as τ runs, and the chain
//! coupling (b = 0.15) keeps f from being separable. Noise variance 0.01, cost 0.1 s.

use tvbo_core::optim::{BoundedOptions, minimize_bounded};

use super::objective::Objective;

const TILT: f64 = 0.4;
const COUPLING: f64 = 0.15;
const OMEGAS: [f64; 5] = [1.0, 0.7, 1.3, 0.5, 0.9];
const PHASES: [f64; 5] = [0.1, 0.6, 0.35, 0.8, 0.2];
/// Dimensions the wells objective comes in.
pub const WELLS_DIMS: [usize; 3] = [3, 4, 5];

/// The wells objective in `dim` dimensions over `[0, horizon]` seconds.
pub struct Wells {
    dim: usize,
    horizon: f64,
}

impl Wells {
    /// Contract: `dim` in [`WELLS_DIMS`], `horizon > 0`.
    pub fn new(dim: usize, horizon: f64) -> Wells {
        assert!(WELLS_DIMS.contains(&dim), "wells in {dim} dimensions");
        Wells { dim, horizon }
    }

    fn tilts(&self, t: f64) -> Vec<f64> {
        let tau = (t / self.horizon).clamp(0.0, 1.0);
        (0..self.dim)
            .map(|i| TILT * (std::f64::consts::TAU * (OMEGAS[i] * tau + PHASES[i])).sin())
            .collect()
    }

    /// f and its gradient in z.
    fn value_and_gradient(z: &[f64], tilts: &[f64]) -> (f64, Vec<f64>) {
        let mut value = 0.0;
        let mut gradient = vec![0.0; z.len()];
        for i in 0..z.len() {
            value += (z[i] * z[i] - 1.0).powi(2) + tilts[i] * z[i];
            gradient[i] += 4.0 * z[i] * (z[i] * z[i] - 1.0) + tilts[i];
            if i + 1 < z.len() {
                value += COUPLING * z[i] * z[i + 1];
                gradient[i] += COUPLING * z[i + 1];
                gradient[i + 1] += COUPLING * z[i];
            }
        }
        (value, gradient)
    }
}

impl Objective for Wells {
    fn dim(&self) -> usize {
        self.dim
    }

    fn noise_variance(&self) -> f64 {
        0.01
    }

    fn cost(&self) -> f64 {
        0.1
    }

    fn value(&self, x: &[f64], t: f64) -> f64 {
        let z: Vec<f64> = x.iter().map(|v| 3.0 * v.clamp(0.0, 1.0) - 1.5).collect();
        Self::value_and_gradient(&z, &self.tilts(t)).0
    }

    /// Bounded L-BFGS with the analytic gradient from each of the 2^d wells (z_i = ±1).
    fn optimum(&self, t: f64) -> f64 {
        let tilts = self.tilts(t);
        let lower = vec![-1.5; self.dim];
        let upper = vec![1.5; self.dim];
        let options = BoundedOptions {
            max_iterations: 100,
            gradient_tolerance: 1e-10,
            ..BoundedOptions::default()
        };
        (0..1usize << self.dim)
            .map(|corner| {
                let start: Vec<f64> = (0..self.dim)
                    .map(|i| if corner >> i & 1 == 1 { 1.0 } else { -1.0 })
                    .collect();
                minimize_bounded(
                    |z| Self::value_and_gradient(z, &tilts),
                    &start,
                    &lower,
                    &upper,
                    &options,
                )
                .value
            })
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// The gradient is f's (central differences), and the optimum is never above f at
    /// random points, at several times.
    #[test]
    fn the_gradient_and_the_optimum_hold() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for dim in WELLS_DIMS {
            let wells = Wells::new(dim, 150.0);
            for _ in 0..4 {
                let t = rng.random::<f64>() * 150.0;
                let tilts = wells.tilts(t);
                let z: Vec<f64> = (0..dim).map(|_| rng.random::<f64>() * 3.0 - 1.5).collect();
                let (_, gradient) = Wells::value_and_gradient(&z, &tilts);
                for i in 0..dim {
                    let mut up = z.clone();
                    let mut down = z.clone();
                    up[i] += 1e-6;
                    down[i] -= 1e-6;
                    let numeric = (Wells::value_and_gradient(&up, &tilts).0
                        - Wells::value_and_gradient(&down, &tilts).0)
                        / 2e-6;
                    assert!((numeric - gradient[i]).abs() < 1e-6, "∂f/∂z_{i}");
                }
                let optimum = wells.optimum(t);
                for _ in 0..3000 {
                    let x: Vec<f64> = (0..dim).map(|_| rng.random()).collect();
                    assert!(optimum <= wells.value(&x, t) + 1e-12);
                }
            }
        }
    }

    /// The numbers `benches/wdbo/compare.py`'s `Wells` gives (printed by it): f at the
    /// box's centre and at a corner, and the optimum, at t = 37.5 s of a 150 s horizon in
    /// 4 dimensions.
    #[test]
    fn values_match_the_comparison_script() {
        let wells = Wells::new(4, 150.0);
        let centre = wells.value(&[0.5; 4], 37.5);
        assert!((centre - 4.0).abs() < 1e-12, "f(centre) = {centre}");
        let corner = wells.value(&[1.0, 0.0, 1.0, 0.0], 37.5);
        assert!(
            (corner - 6.053_313_586_312_758).abs() < 1e-12,
            "f(corner) = {corner}"
        );
        let optimum = wells.optimum(37.5);
        assert!(
            (optimum - -1.129_865_449_228_858).abs() < 1e-8,
            "optimum {optimum}"
        );
    }
}
