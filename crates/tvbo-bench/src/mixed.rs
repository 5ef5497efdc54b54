//! A mixed objective outside the papers' suites: one categorical setting of three choices
//! beside two continuous ones, where the best choice changes during a run (the suite
//! `mixed`, docs/benchmarks.md "Objectives"). It is what a codec (the choice) and two
//! tuning knobs of it look like when the data they compress drifts.
//!
//! With τ = t / horizon ∈ [0, 1], choice c ∈ {0, 1, 2} (the first coordinate, at (c + ½)/3
//! of its unit interval) and z = (x₂, x₃) ∈ [0, 1]² (minimised):
//!
//! - `f(c, z, t) = D_c(τ) + 3 ‖z − m_c(τ)‖²`;
//! - depth `D_c(τ) = ½ sin(2π(τ + c/3))`: the deepest choice rotates through the three,
//!   each the best for a third of the run;
//! - centre `m_c(τ) = ½ + ¼ (cos 2π(τ/2 + c/3), sin 2π(τ/2 + c/3))`: each choice's best
//!   knobs circle slowly, inside the box.
//!
//! The minimum at t is min_c D_c(τ) (every centre is inside the box). Noise variance 0.01,
//! cost 0.1 s (as the multimodal objectives).

use std::f64::consts::TAU;

use tvbo_core::domain::space::choice_at;

use super::objective::Objective;

/// The choices of the categorical coordinate.
pub const CHOICES: usize = 3;

/// The mixed objective over `[0, horizon]` seconds.
pub struct Mixed {
    horizon: f64,
}

impl Mixed {
    pub fn new(horizon: f64) -> Mixed {
        Mixed {
            horizon: horizon.max(f64::MIN_POSITIVE),
        }
    }

    fn depth(&self, choice: usize, t: f64) -> f64 {
        let tau = t / self.horizon;
        0.5 * (TAU * (tau + choice as f64 / CHOICES as f64)).sin()
    }

    fn centre(&self, choice: usize, t: f64) -> [f64; 2] {
        let angle = TAU * (0.5 * t / self.horizon + choice as f64 / CHOICES as f64);
        [0.5 + 0.25 * angle.cos(), 0.5 + 0.25 * angle.sin()]
    }
}

impl Objective for Mixed {
    fn dim(&self) -> usize {
        3
    }

    fn choices(&self, coordinate: usize) -> usize {
        if coordinate == 0 { CHOICES } else { 0 }
    }

    fn noise_variance(&self) -> f64 {
        0.01
    }

    fn cost(&self) -> f64 {
        0.1
    }

    fn value(&self, x: &[f64], t: f64) -> f64 {
        let choice = choice_at(x[0], CHOICES);
        let m = self.centre(choice, t);
        let squared = (x[1] - m[0]).powi(2) + (x[2] - m[1]).powi(2);
        self.depth(choice, t) + 3.0 * squared
    }

    fn optimum(&self, t: f64) -> f64 {
        (0..CHOICES)
            .map(|c| self.depth(c, t))
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvbo_core::domain::space::choice_centre;

    /// The minimum is reached at the deepest choice's centre, no grid point is lower,
    /// and each choice is the best for about a third of the run.
    #[test]
    fn the_minimum_is_the_deepest_choice_at_its_centre() {
        let mixed = Mixed::new(150.0);
        let mut best_counts = [0; CHOICES];
        for step in 0..=150 {
            let t = f64::from(step);
            let optimum = mixed.optimum(t);
            let best = (0..CHOICES)
                .min_by(|&a, &b| mixed.depth(a, t).total_cmp(&mixed.depth(b, t)))
                .unwrap();
            best_counts[best] += 1;
            let m = mixed.centre(best, t);
            let u = choice_centre(best, CHOICES);
            assert!((mixed.value(&[u, m[0], m[1]], t) - optimum).abs() < 1e-12);
            for c in 0..CHOICES {
                let u = choice_centre(c, CHOICES);
                for i in 0..=20 {
                    for j in 0..=20 {
                        let x = [u, f64::from(i) / 20.0, f64::from(j) / 20.0];
                        assert!(mixed.value(&x, t) >= optimum - 1e-12);
                    }
                }
            }
        }
        assert!(
            best_counts.iter().all(|&n| (40..=62).contains(&n)),
            "{best_counts:?}"
        );
    }
}
