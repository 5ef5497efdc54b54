//! Multimodal objectives with moving depths, outside the papers' suites: several basins at
//! well-spread centres whose depths oscillate, so that the deepest basin, and with it the
//! global minimiser, jumps from one basin to another during a run (the suite
//! `multimodal`, docs/benchmarks.md "Objectives").
//!
//! With τ = t / horizon ∈ [0, 1], K basins k = 0…K−1 and x ∈ [0, 1]^d (minimised):
//!
//! - depth  D_k(τ) = 1 + ½ sin(2π(ω_k τ + φ_k)), ω_k = ½ + k/(K−1), φ_k = frac(k g),
//!   g = (√5 − 1)/2, so every basin's depth runs between ½ and 3/2 at its own pace;
//! - centre c_k: K of 512 scrambled Sobol points mapped onto [0.15, 0.85]^d, chosen
//!   maximin (the first point, then repeatedly the one farthest from those chosen):
//!   0.6 to 0.76 apart at least, inside the box with a margin;
//! - width  σ_k = σ (¾ + ½ frac(k√2)), from ¾σ to 5/4 σ.
//!
//! The three kinds:
//!
//! - [`MultimodalKind::Gaussian`] (d = 4, K = 8, σ = 0.15):
//!   `f = −Σ_k D_k(τ) exp(−‖x − c_k‖² / (2σ_k²))`;
//! - [`MultimodalKind::Shekel`] (d = 5, K = 10): Shekel-like heavy-tailed basins whose
//!   widths drift, `f = −Σ_k D_k(τ) w_k(τ) / (‖x − c_k‖² + w_k(τ))` with
//!   w_k(τ) = σ_k² (1 + ½ sin(2π(ν_k τ + ψ_k))), σ = 0.12, ν_k = ½ + frac(k√3),
//!   ψ_k = frac(k√5) (the k-th term is −D_k at its centre);
//! - [`MultimodalKind::Drifting`] (d = 6, K = 7, σ = 0.2): Gaussian basins whose centres
//!   also move, c_k(τ)_i = c_k,i + 0.06 sin(2π(τ + θ_k,i)), θ_k,i = frac((k d + i) g).
//!
//! Noise variance 0.01, cost 0.1 s (as the wells). The minimum at t is the best bounded
//! L-BFGS descent (analytic gradient) from every basin's centre at t and from the best
//! of 256 fixed quasi-random points at t.

use tvbo_core::optim::{BoundedOptions, minimize_bounded};

use super::objective::Objective;

/// (√5 − 1)/2: phases frac(k g) spread evenly over [0, 1).
const GOLDEN: f64 = 0.618_033_988_749_894_9;
/// How far (per coordinate) the centres of [`MultimodalKind::Drifting`] move.
const DRIFT: f64 = 0.06;
/// Quasi-random points whose best at t is a start of the minimum search.
const PROBES: usize = 256;
/// Quasi-random candidates the centres are chosen among.
const CANDIDATES: usize = 512;
/// Scrambling seed of the centres' Sobol sequence.
const CENTRE_SEED: u32 = 0x5eed;
/// Scrambling seed of the probes' Sobol sequence.
const PROBE_SEED: u32 = 0xb0b;

/// The three multimodal objectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultimodalKind {
    /// Gaussian basins at fixed centres (d = 4, 8 basins).
    Gaussian,
    /// Shekel-like basins 1/(‖x − c‖² + w) whose widths drift (d = 5, 10 basins).
    Shekel,
    /// Gaussian basins whose centres move slowly (d = 6, 7 basins).
    Drifting,
}

impl MultimodalKind {
    pub const ALL: [MultimodalKind; 3] = [
        MultimodalKind::Gaussian,
        MultimodalKind::Shekel,
        MultimodalKind::Drifting,
    ];

    /// The objective's name in suites and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MultimodalKind::Gaussian => "basins4",
            MultimodalKind::Shekel => "shekel-basins5",
            MultimodalKind::Drifting => "drifting-basins6",
        }
    }

    /// Label in reports: inputs counted with time, as 002's Table 3 does.
    pub fn label(self) -> &'static str {
        match self {
            MultimodalKind::Gaussian => "Gaussian basins (5)",
            MultimodalKind::Shekel => "Shekel basins (6)",
            MultimodalKind::Drifting => "Drifting basins (7)",
        }
    }

    /// Search-space dimensions d.
    pub fn dim(self) -> usize {
        match self {
            MultimodalKind::Gaussian => 4,
            MultimodalKind::Shekel => 5,
            MultimodalKind::Drifting => 6,
        }
    }

    /// Number of basins K.
    pub fn basins(self) -> usize {
        match self {
            MultimodalKind::Gaussian => 8,
            MultimodalKind::Shekel => 10,
            MultimodalKind::Drifting => 7,
        }
    }

    /// The width scale σ.
    fn width(self) -> f64 {
        match self {
            MultimodalKind::Gaussian => 0.15,
            MultimodalKind::Shekel => 0.12,
            MultimodalKind::Drifting => 0.2,
        }
    }
}

fn frac(v: f64) -> f64 {
    v - v.floor()
}

fn sine(omega: f64, phase: f64, tau: f64) -> f64 {
    (std::f64::consts::TAU * (omega * tau + phase)).sin()
}

/// Point `i` of the scrambled Sobol sequence `seed` in `dim` dimensions.
fn sobol(i: usize, dim: usize, seed: u32) -> Vec<f64> {
    (0..dim)
        .map(|j| f64::from(sobol_burley::sample(i as u32, j as u32, seed)))
        .collect()
}

fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(u, v)| (u - v) * (u - v)).sum()
}

/// `k` of `candidates`, well spread: the first, then repeatedly the candidate farthest
/// from those chosen (the first of equals).
fn maximin(candidates: &[Vec<f64>], k: usize) -> Vec<Vec<f64>> {
    let mut chosen = vec![candidates[0].clone()];
    let mut gap: Vec<f64> = candidates
        .iter()
        .map(|x| squared_distance(x, &candidates[0]))
        .collect();
    while chosen.len() < k {
        let next =
            (0..candidates.len()).fold(0, |best, i| if gap[i] > gap[best] { i } else { best });
        chosen.push(candidates[next].clone());
        for (g, x) in gap.iter_mut().zip(candidates) {
            *g = g.min(squared_distance(x, &candidates[next]));
        }
    }
    chosen
}

/// A multimodal objective of `kind` over `[0, horizon]` seconds.
pub struct Multimodal {
    kind: MultimodalKind,
    horizon: f64,
    /// Each basin's centre at τ = 0 (for [`MultimodalKind::Drifting`], the middle of its
    /// path).
    centres: Vec<Vec<f64>>,
    /// σ_k.
    widths: Vec<f64>,
    probes: Vec<Vec<f64>>,
}

/// The basins at one time: centres, depths and widths (σ_k for Gaussian basins, w_k for
/// Shekel-like ones).
struct Basins {
    centres: Vec<Vec<f64>>,
    depths: Vec<f64>,
    widths: Vec<f64>,
}

impl Multimodal {
    /// Contract: `horizon > 0`.
    pub fn new(kind: MultimodalKind, horizon: f64) -> Multimodal {
        let (dim, k) = (kind.dim(), kind.basins());
        let candidates: Vec<Vec<f64>> = (0..CANDIDATES)
            .map(|i| {
                sobol(i, dim, CENTRE_SEED)
                    .into_iter()
                    .map(|s| 0.15 + 0.7 * s)
                    .collect()
            })
            .collect();
        let centres = maximin(&candidates, k);
        let widths = (0..k)
            .map(|b| kind.width() * (0.75 + 0.5 * frac(b as f64 * std::f64::consts::SQRT_2)))
            .collect();
        let probes = (0..PROBES).map(|i| sobol(i, dim, PROBE_SEED)).collect();
        Multimodal {
            kind,
            horizon,
            centres,
            widths,
            probes,
        }
    }

    fn tau(&self, t: f64) -> f64 {
        (t / self.horizon).clamp(0.0, 1.0)
    }

    /// The basins at time `t`.
    fn basins(&self, t: f64) -> Basins {
        let tau = self.tau(t);
        let k = self.kind.basins();
        let dim = self.kind.dim();
        let depths = (0..k)
            .map(|b| {
                let omega = 0.5 + b as f64 / (k - 1) as f64;
                1.0 + 0.5 * sine(omega, frac(b as f64 * GOLDEN), tau)
            })
            .collect();
        let widths = match self.kind {
            MultimodalKind::Gaussian | MultimodalKind::Drifting => self.widths.clone(),
            MultimodalKind::Shekel => (0..k)
                .map(|b| {
                    let nu = 0.5 + frac(b as f64 * 3f64.sqrt());
                    let psi = frac(b as f64 * 5f64.sqrt());
                    self.widths[b].powi(2) * (1.0 + 0.5 * sine(nu, psi, tau))
                })
                .collect(),
        };
        let centres = match self.kind {
            MultimodalKind::Gaussian | MultimodalKind::Shekel => self.centres.clone(),
            MultimodalKind::Drifting => self
                .centres
                .iter()
                .enumerate()
                .map(|(b, c)| {
                    c.iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let theta = frac((b * dim + i) as f64 * GOLDEN);
                            v + DRIFT * sine(1.0, theta, tau)
                        })
                        .collect()
                })
                .collect(),
        };
        Basins {
            centres,
            depths,
            widths,
        }
    }

    /// f and its gradient in x at the basins of one time.
    fn value_and_gradient(&self, x: &[f64], basins: &Basins) -> (f64, Vec<f64>) {
        let mut value = 0.0;
        let mut gradient = vec![0.0; x.len()];
        for ((c, &depth), &width) in basins
            .centres
            .iter()
            .zip(&basins.depths)
            .zip(&basins.widths)
        {
            let r2 = squared_distance(x, c);
            // f_k = −depth·φ(r²) and ∂f_k/∂x = −depth·φ'(r²)·2(x − c).
            let (term, slope) = match self.kind {
                MultimodalKind::Gaussian | MultimodalKind::Drifting => {
                    let e = (-r2 / (2.0 * width * width)).exp();
                    (-depth * e, depth * e / (2.0 * width * width))
                }
                MultimodalKind::Shekel => {
                    let q = r2 + width;
                    (-depth * width / q, depth * width / (q * q))
                }
            };
            value += term;
            for (g, (a, b)) in gradient.iter_mut().zip(x.iter().zip(c)) {
                *g += slope * 2.0 * (a - b);
            }
        }
        (value, gradient)
    }

    /// The global minimiser at `t` and its value: the best bounded L-BFGS descent from
    /// every basin's centre and from the best probe.
    pub fn minimiser(&self, t: f64) -> (Vec<f64>, f64) {
        let basins = self.basins(t);
        let dim = self.kind.dim();
        let (lower, upper) = (vec![0.0; dim], vec![1.0; dim]);
        let options = BoundedOptions {
            max_iterations: 200,
            gradient_tolerance: 1e-10,
            ..BoundedOptions::default()
        };
        let best_probe = self
            .probes
            .iter()
            .map(|x| (self.value_and_gradient(x, &basins).0, x))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, x)| x.clone())
            .expect("probes");
        basins
            .centres
            .iter()
            .map(|c| c.iter().map(|v| v.clamp(0.0, 1.0)).collect::<Vec<f64>>())
            .chain(std::iter::once(best_probe))
            .map(|start| {
                let found = minimize_bounded(
                    |x| self.value_and_gradient(x, &basins),
                    &start,
                    &lower,
                    &upper,
                    &options,
                );
                let at_start = self.value_and_gradient(&start, &basins).0;
                if found.value <= at_start {
                    (found.x, found.value)
                } else {
                    (start, at_start)
                }
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("starts")
    }

    /// The basin whose centre (at `t`) is nearest to `x`.
    pub fn nearest_basin(&self, x: &[f64], t: f64) -> usize {
        let basins = self.basins(t);
        (0..basins.centres.len())
            .min_by(|&a, &b| {
                squared_distance(x, &basins.centres[a])
                    .total_cmp(&squared_distance(x, &basins.centres[b]))
            })
            .expect("basins")
    }
}

impl Objective for Multimodal {
    fn dim(&self) -> usize {
        self.kind.dim()
    }

    fn noise_variance(&self) -> f64 {
        0.01
    }

    fn cost(&self) -> f64 {
        0.1
    }

    fn value(&self, x: &[f64], t: f64) -> f64 {
        let x: Vec<f64> = x.iter().map(|v| v.clamp(0.0, 1.0)).collect();
        self.value_and_gradient(&x, &self.basins(t)).0
    }

    fn optimum(&self, t: f64) -> f64 {
        self.minimiser(t).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    const HORIZON: f64 = 150.0;

    /// The gradient is f's (central differences), at random points and times.
    #[test]
    fn the_gradient_is_the_functions() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for kind in MultimodalKind::ALL {
            let objective = Multimodal::new(kind, HORIZON);
            for _ in 0..6 {
                let basins = objective.basins(rng.random::<f64>() * HORIZON);
                // Near a centre, where f bends most, and anywhere.
                let near: Vec<f64> = basins.centres[rng.random_range(0..kind.basins())]
                    .iter()
                    .map(|v| v + 0.1 * (rng.random::<f64>() - 0.5))
                    .collect();
                let anywhere: Vec<f64> = (0..kind.dim()).map(|_| rng.random()).collect();
                for x in [near, anywhere] {
                    let (_, gradient) = objective.value_and_gradient(&x, &basins);
                    for i in 0..kind.dim() {
                        let (mut up, mut down) = (x.clone(), x.clone());
                        up[i] += 1e-6;
                        down[i] -= 1e-6;
                        let numeric = (objective.value_and_gradient(&up, &basins).0
                            - objective.value_and_gradient(&down, &basins).0)
                            / 2e-6;
                        assert!(
                            (numeric - gradient[i]).abs() < 1e-6,
                            "{}: ∂f/∂x_{i} {} vs {numeric}",
                            kind.name(),
                            gradient[i]
                        );
                    }
                }
            }
        }
    }

    /// The optimum is never above f at 3000 random points, at several times, and is f at
    /// the minimiser found.
    #[test]
    fn the_optimum_bounds_random_points() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        for kind in MultimodalKind::ALL {
            let objective = Multimodal::new(kind, HORIZON);
            for t in [0.0, 23.0, 61.5, 97.0, 150.0] {
                let (x, optimum) = objective.minimiser(t);
                assert!((objective.value(&x, t) - optimum).abs() < 1e-12);
                assert!(optimum < -0.5, "{}: optimum {optimum}", kind.name());
                for _ in 0..3000 {
                    let x: Vec<f64> = (0..kind.dim()).map(|_| rng.random()).collect();
                    let value = objective.value(&x, t);
                    assert!(
                        optimum <= value + 1e-12,
                        "{}: optimum {optimum} above f = {value} at t = {t}",
                        kind.name()
                    );
                }
            }
        }
    }

    /// Every basin is a basin of its own at every time (a descent from its centre ends
    /// nearest to it), and the deepest one changes over the horizon: the global minimiser
    /// at τ = 0 lies in another basin than at some later time, and at least three basins
    /// hold it in turn.
    #[test]
    fn the_deepest_basin_changes_over_the_horizon() {
        for kind in MultimodalKind::ALL {
            let objective = Multimodal::new(kind, HORIZON);
            let options = BoundedOptions::default();
            let (lower, upper) = (vec![0.0; kind.dim()], vec![1.0; kind.dim()]);
            for i in 0..=10 {
                let t = HORIZON * i as f64 / 10.0;
                let basins = objective.basins(t);
                for (b, c) in basins.centres.iter().enumerate() {
                    let found = minimize_bounded(
                        |x| objective.value_and_gradient(x, &basins),
                        c,
                        &lower,
                        &upper,
                        &options,
                    );
                    assert_eq!(
                        objective.nearest_basin(&found.x, t),
                        b,
                        "{}: basin {b} drains into another at t = {t}",
                        kind.name()
                    );
                }
            }
            let deepest: Vec<usize> = (0..=60)
                .map(|i| {
                    let t = HORIZON * i as f64 / 60.0;
                    objective.nearest_basin(&objective.minimiser(t).0, t)
                })
                .collect();
            assert!(
                deepest.iter().any(|&b| b != deepest[0]),
                "{}: always basin {}",
                kind.name(),
                deepest[0]
            );
            let distinct: std::collections::BTreeSet<usize> = deepest.iter().copied().collect();
            assert!(
                distinct.len() >= 3,
                "{}: the deepest basins {distinct:?}",
                kind.name()
            );
        }
    }

    /// The centres are well spread and inside the box (for the drifting kind, along
    /// their whole path).
    #[test]
    fn the_centres_are_spread_and_inside() {
        for kind in MultimodalKind::ALL {
            let objective = Multimodal::new(kind, HORIZON);
            let c = &objective.centres;
            let mut closest = f64::INFINITY;
            for a in 0..c.len() {
                for b in a + 1..c.len() {
                    let d: f64 = c[a].iter().zip(&c[b]).map(|(u, v)| (u - v).powi(2)).sum();
                    closest = closest.min(d.sqrt());
                }
            }
            eprintln!("{}: closest centres {closest}", kind.name());
            assert!(closest > 0.6, "{}: centres {closest} apart", kind.name());
            for i in 0..=20 {
                for centre in objective.basins(HORIZON * i as f64 / 20.0).centres {
                    assert!(centre.iter().all(|v| (0.05..=0.95).contains(v)));
                }
            }
        }
    }
}
