//! The eight synthetic benchmarks of Bardou & Thiran (paper 002, Appendix F), in their
//! usual (minimised) form, with the noise variance and cost of their Table 2.
//!
//! Each function has d' = d + 1 inputs z = (z_1, …, z_d, z_{d'}) on a box [lo, hi]^{d'}
//! (the same interval for every input, as in Appendix F). The first d inputs are the
//! search space, read from x ∈ `[0,1]^d` as z_i = lo + x_i (hi − lo); the last input is time,
//! z_{d'} = lo + (t / horizon)(hi − lo), so that the objective drifts over the whole
//! experiment (002, Section 5.1: "scaled in [0, 600] seconds").

use std::f64::consts::{E, PI};

/// One of the eight synthetic functions of 002 Appendix F.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyntheticFunction {
    Shekel,
    Hartmann3,
    Ackley,
    Griewank,
    Eggholder,
    Schwefel,
    Hartmann6,
    Powell,
}

/// Shekel's β (002 Appendix F, m = 10).
const SHEKEL_BETA: [f64; 10] = [0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5];
/// Shekel's C, one row per input j (4 × 10).
const SHEKEL_C: [[f64; 10]; 4] = [
    [4.0, 1.0, 8.0, 6.0, 3.0, 2.0, 5.0, 8.0, 6.0, 7.0],
    [4.0, 1.0, 8.0, 6.0, 7.0, 9.0, 3.0, 1.0, 2.0, 3.6],
    [4.0, 1.0, 8.0, 6.0, 3.0, 2.0, 5.0, 8.0, 6.0, 7.0],
    [4.0, 1.0, 8.0, 6.0, 7.0, 9.0, 3.0, 1.0, 2.0, 3.6],
];
/// Hartmann's α (both dimensions).
const HARTMANN_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
const HARTMANN3_A: [[f64; 3]; 4] = [
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
];
const HARTMANN3_P: [[f64; 3]; 4] = [
    [0.3689, 0.1170, 0.2673],
    [0.4699, 0.4387, 0.7470],
    [0.1091, 0.8732, 0.5547],
    [0.0381, 0.5743, 0.8828],
];
const HARTMANN6_A: [[f64; 6]; 4] = [
    [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
    [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
    [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
    [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
];
const HARTMANN6_P: [[f64; 6]; 4] = [
    [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
    [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
    [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
    [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
];

impl SyntheticFunction {
    /// All eight, in the order of 002's Table 2.
    pub const ALL: [SyntheticFunction; 8] = [
        SyntheticFunction::Shekel,
        SyntheticFunction::Hartmann3,
        SyntheticFunction::Ackley,
        SyntheticFunction::Griewank,
        SyntheticFunction::Eggholder,
        SyntheticFunction::Schwefel,
        SyntheticFunction::Hartmann6,
        SyntheticFunction::Powell,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            SyntheticFunction::Shekel => "shekel",
            SyntheticFunction::Hartmann3 => "hartmann3",
            SyntheticFunction::Ackley => "ackley",
            SyntheticFunction::Griewank => "griewank",
            SyntheticFunction::Eggholder => "eggholder",
            SyntheticFunction::Schwefel => "schwefel",
            SyntheticFunction::Hartmann6 => "hartmann6",
            SyntheticFunction::Powell => "powell",
        }
    }

    /// The label of 002's Table 3, with d + 1 in parentheses.
    pub fn label(self) -> &'static str {
        match self {
            SyntheticFunction::Shekel => "Shekel (4)",
            SyntheticFunction::Hartmann3 => "Hartmann (3)",
            SyntheticFunction::Ackley => "Ackley (4)",
            SyntheticFunction::Griewank => "Griewank (6)",
            SyntheticFunction::Eggholder => "Eggholder (2)",
            SyntheticFunction::Schwefel => "Schwefel (4)",
            SyntheticFunction::Hartmann6 => "Hartmann (6)",
            SyntheticFunction::Powell => "Powell (4)",
        }
    }

    /// d' = d + 1: the number of inputs, time included.
    pub fn inputs(self) -> usize {
        match self {
            SyntheticFunction::Eggholder => 2,
            SyntheticFunction::Hartmann3 => 3,
            SyntheticFunction::Shekel
            | SyntheticFunction::Ackley
            | SyntheticFunction::Schwefel
            | SyntheticFunction::Powell => 4,
            SyntheticFunction::Griewank | SyntheticFunction::Hartmann6 => 6,
        }
    }

    /// The interval of every input (002 Appendix F).
    pub fn bounds(self) -> (f64, f64) {
        match self {
            SyntheticFunction::Shekel => (0.0, 10.0),
            SyntheticFunction::Hartmann3 | SyntheticFunction::Hartmann6 => (0.0, 1.0),
            SyntheticFunction::Ackley => (-32.0, 32.0),
            SyntheticFunction::Griewank => (-600.0, 600.0),
            SyntheticFunction::Eggholder => (-512.0, 512.0),
            SyntheticFunction::Schwefel => (-500.0, 500.0),
            SyntheticFunction::Powell => (-4.0, 5.0),
        }
    }

    /// Noise variance σ0² of 002 Table 2.
    pub fn noise_variance(self) -> f64 {
        match self {
            SyntheticFunction::Shekel => 0.02,
            SyntheticFunction::Hartmann3 => 0.05,
            SyntheticFunction::Ackley => 0.05,
            SyntheticFunction::Griewank => 0.30,
            SyntheticFunction::Eggholder => 0.10,
            SyntheticFunction::Schwefel => 0.25,
            SyntheticFunction::Hartmann6 => 0.05,
            SyntheticFunction::Powell => 2.50,
        }
    }

    /// Cost c of one evaluation in seconds (002 Table 2).
    pub fn cost(self) -> f64 {
        match self {
            SyntheticFunction::Shekel => 0.50,
            SyntheticFunction::Hartmann3 => 1.00,
            SyntheticFunction::Ackley => 0.05,
            SyntheticFunction::Griewank => 0.05,
            SyntheticFunction::Eggholder => 0.05,
            SyntheticFunction::Schwefel => 0.05,
            SyntheticFunction::Hartmann6 => 0.10,
            SyntheticFunction::Powell => 1.00,
        }
    }

    /// The function at z (all d' inputs, in the function's own coordinates).
    ///
    /// # Panics
    /// If `z.len() != self.inputs()`.
    pub fn eval(self, z: &[f64]) -> f64 {
        assert_eq!(
            z.len(),
            self.inputs(),
            "{} takes {} inputs",
            self.name(),
            self.inputs()
        );
        match self {
            // f(z) = −Σ_{i=1..m} (Σ_j (z_j − C_ji)² + β_i)^{-1}
            SyntheticFunction::Shekel => -(0..10)
                .map(|i| {
                    let s: f64 = (0..4).map(|j| (z[j] - SHEKEL_C[j][i]).powi(2)).sum();
                    1.0 / (s + SHEKEL_BETA[i])
                })
                .sum::<f64>(),
            // f(z) = −Σ_i α_i exp(−Σ_j A_ij (z_j − P_ij)²)
            SyntheticFunction::Hartmann3 => hartmann(z, &HARTMANN3_A, &HARTMANN3_P),
            SyntheticFunction::Hartmann6 => hartmann(z, &HARTMANN6_A, &HARTMANN6_P),
            // f(z) = −a exp(−b √(Σ z²/d')) − exp(Σ cos(c z)/d') + a + e, a = 20, b = 0.2, c = 2π
            SyntheticFunction::Ackley => {
                let d = z.len() as f64;
                let squares: f64 = z.iter().map(|v| v * v).sum::<f64>() / d;
                let cosines: f64 = z.iter().map(|v| (2.0 * PI * v).cos()).sum::<f64>() / d;
                -20.0 * (-0.2 * squares.sqrt()).exp() - cosines.exp() + 20.0 + E
            }
            // f(z) = Σ z_i²/4000 − Π cos(z_i/√i) + 1
            SyntheticFunction::Griewank => {
                let sum: f64 = z.iter().map(|v| v * v / 4000.0).sum();
                let product: f64 = z
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v / ((i + 1) as f64).sqrt()).cos())
                    .product();
                sum - product + 1.0
            }
            // f(z) = −(z2 + 47) sin √|z2 + z1/2 + 47| − z1 sin √|z1 − z2 − 47|
            SyntheticFunction::Eggholder => {
                let (a, b) = (z[0], z[1]);
                -(b + 47.0) * (b + a / 2.0 + 47.0).abs().sqrt().sin()
                    - a * (a - b - 47.0).abs().sqrt().sin()
            }
            // f(z) = 418.9829 d' − Σ z_i sin √|z_i|
            SyntheticFunction::Schwefel => {
                418.9829 * z.len() as f64 - z.iter().map(|v| v * v.abs().sqrt().sin()).sum::<f64>()
            }
            // f(z) = Σ_{i=1..d'/4} (z1 + 10 z2)² + 5 (z3 − z4)² + (z2 − 2 z3)⁴ + 10 (z1 − z4)⁴
            SyntheticFunction::Powell => z
                .chunks_exact(4)
                .map(|w| {
                    (w[0] + 10.0 * w[1]).powi(2)
                        + 5.0 * (w[2] - w[3]).powi(2)
                        + (w[1] - 2.0 * w[2]).powi(4)
                        + 10.0 * (w[0] - w[3]).powi(4)
                })
                .sum(),
        }
    }

    /// Points (in the function's own coordinates, all d' inputs) known to lie in the
    /// basins of the function's deep minima: the global minimiser and, for the
    /// multi-well functions, the well centres. The minimum search starts local descents
    /// from their spatial part besides its dense quasi-random points, so that narrow
    /// basins a sample would miss are found (Griewank's wells are ~1% of the box wide).
    pub fn basin_hints(self) -> Vec<Vec<f64>> {
        match self {
            SyntheticFunction::Shekel => (0..10)
                .map(|i| (0..4).map(|j| SHEKEL_C[j][i]).collect())
                .collect(),
            SyntheticFunction::Hartmann3 => HARTMANN3_P.iter().map(|p| p.to_vec()).collect(),
            SyntheticFunction::Hartmann6 => HARTMANN6_P.iter().map(|p| p.to_vec()).collect(),
            SyntheticFunction::Ackley | SyntheticFunction::Powell => vec![vec![0.0; self.inputs()]],
            SyntheticFunction::Griewank => {
                // The origin, and, for the times when cos(z_6/√6) < 0 flips the product's
                // sign, the points with one input at ±π√i (its cosine −1) and the rest 0.
                let mut hints = vec![vec![0.0; 6]];
                for i in 0..5 {
                    for sign in [-1.0, 1.0] {
                        let mut z = vec![0.0; 6];
                        z[i] = sign * PI * ((i + 1) as f64).sqrt();
                        hints.push(z);
                    }
                }
                hints
            }
            SyntheticFunction::Eggholder => vec![vec![512.0, 404.2319]],
            SyntheticFunction::Schwefel => vec![vec![420.9687; 4]],
        }
    }

    /// The published global minimum over the whole box (time included) and a minimiser.
    pub fn global_minimum(self) -> (f64, Vec<f64>) {
        match self {
            SyntheticFunction::Shekel => (-10.536_443, vec![4.0; 4]),
            SyntheticFunction::Hartmann3 => (-3.862_78, vec![0.114_614, 0.555_649, 0.852_547]),
            SyntheticFunction::Ackley => (0.0, vec![0.0; 4]),
            SyntheticFunction::Griewank => (0.0, vec![0.0; 6]),
            SyntheticFunction::Eggholder => (-959.640_7, vec![512.0, 404.231_9]),
            SyntheticFunction::Schwefel => (0.0, vec![420.968_7; 4]),
            SyntheticFunction::Hartmann6 => (
                -3.322_37,
                vec![
                    0.201_69, 0.150_011, 0.476_874, 0.275_332, 0.311_652, 0.657_3,
                ],
            ),
            SyntheticFunction::Powell => (0.0, vec![0.0; 4]),
        }
    }
}

fn hartmann<const D: usize>(z: &[f64], a: &[[f64; D]; 4], p: &[[f64; D]; 4]) -> f64 {
    -(0..4)
        .map(|i| {
            let s: f64 = (0..D).map(|j| a[i][j] * (z[j] - p[i][j]).powi(2)).sum();
            HARTMANN_ALPHA[i] * (-s).exp()
        })
        .sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_minima_are_reached_at_the_published_minimisers() {
        for f in SyntheticFunction::ALL {
            let (minimum, at) = f.global_minimum();
            let value = f.eval(&at);
            assert!(
                (value - minimum).abs() <= 1e-4 * minimum.abs().max(1.0),
                "{}: f(x*) = {value}, published {minimum}",
                f.name()
            );
        }
    }

    #[test]
    fn known_values_away_from_the_minimum() {
        // Hand-computed values at simple points.
        assert!((SyntheticFunction::Ackley.eval(&[1.0; 4]) - 3.625_384_938).abs() < 1e-6);
        // Griewank at (π, 0, …): π²/4000 + 2.
        let mut z = vec![0.0; 6];
        z[0] = PI;
        assert!((SyntheticFunction::Griewank.eval(&z) - (PI * PI / 4000.0 + 2.0)).abs() < 1e-12);
        // Powell at (1, 1, 1, 1): 121 + 0 + 1 + 0.
        assert_eq!(SyntheticFunction::Powell.eval(&[1.0; 4]), 122.0);
        // Schwefel at 0: 418.9829 · 4.
        assert!((SyntheticFunction::Schwefel.eval(&[0.0; 4]) - 1675.9316).abs() < 1e-9);
        // Eggholder at 0: −47 sin √47.
        assert!(
            (SyntheticFunction::Eggholder.eval(&[0.0, 0.0]) + 47.0 * 47f64.sqrt().sin()).abs()
                < 1e-12
        );
    }

    #[test]
    fn table_2_noise_and_cost() {
        assert_eq!(SyntheticFunction::Powell.noise_variance(), 2.5);
        assert_eq!(SyntheticFunction::Powell.cost(), 1.0);
        assert_eq!(SyntheticFunction::Eggholder.cost(), 0.05);
        assert_eq!(SyntheticFunction::Hartmann6.cost(), 0.1);
        for f in SyntheticFunction::ALL {
            let (minimum, at) = f.global_minimum();
            let (lo, hi) = f.bounds();
            assert_eq!(at.len(), f.inputs());
            assert!(at.iter().all(|v| (lo..=hi).contains(v)), "{}", f.name());
            assert!(minimum.is_finite());
        }
    }
}
