//! Benchmark objectives: what a run optimises, and how its regret is measured.
//!
//! Every objective is *minimised* (the session is created with `"goal": "minimize"`),
//! its search space is `[0,1]^d` (or a finite set of arms in `[0,1]^d`), and time t runs
//! from 0 to the horizon in seconds. The regret of a query is f(x, t) − min_x f(x, t) on
//! noise-free values (002 Section 2: r_k = f(x*_k, t_k) − f(x_k, t_k) for maximisation).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use tvbo_core::domain::priors::PriorSpec;
use tvbo_core::domain::space::ParameterSpec;
use tvbo_core::optim::{BoundedOptions, minimize_bounded};

use super::synthetic::SyntheticFunction;

/// A function to minimise over `[0,1]^d` × [0, horizon].
pub trait Objective: Send + Sync {
    /// Number of search-space dimensions d.
    fn dim(&self) -> usize;
    /// How many choices coordinate `coordinate` has: 0 (the default) for a continuous
    /// one; K for a categorical one, whose choice k the unit point holds at (k + ½)/K.
    fn choices(&self, _coordinate: usize) -> usize {
        0
    }
    /// The finite decision set, as unit-cube points, for arm objectives; `None` for the box.
    fn arms(&self) -> Option<&[Vec<f64>]> {
        None
    }
    /// The interval every search input spans in the session's parameters (and the arms'
    /// coordinates); `value` and `arms` take unit points, mapped linearly onto it.
    fn parameter_range(&self) -> (f64, f64) {
        (0.0, 1.0)
    }
    /// Candidate priors of the minimised value over the arms, for the algorithms that
    /// select among priors (003); `None` when the objective has none.
    fn priors(&self) -> Option<&[PriorSpec]> {
        None
    }
    /// The session's parameters in the API's form, for an objective over a system's own
    /// settings (a trace replay); `None` for x1…xd over [`Objective::parameter_range`].
    fn parameters(&self) -> Option<Vec<ParameterSpec>> {
        None
    }
    /// Variance of the Gaussian noise added to each evaluation.
    fn noise_variance(&self) -> f64;
    /// A noisy evaluation at `x` and `t` whose noise-free value is `clean`: by default
    /// `clean` plus Gaussian noise of [`Objective::noise_variance`], drawn from `rng`.
    fn measure(&self, _x: &[f64], _t: f64, clean: f64, rng: &mut ChaCha8Rng) -> f64 {
        clean + self.noise_variance().sqrt() * rng.sample::<f64, _>(StandardNormal)
    }
    /// The fraction of the per-moment optimum that noise-free `value` achieves, for an
    /// objective in real units (a trace replay); `None` for the synthetic ones.
    fn achieved(&self, _value: f64, _optimum: f64) -> Option<f64> {
        None
    }
    /// Seconds one evaluation takes (the simulated clock advances by it).
    fn cost(&self) -> f64;
    /// The noise-free value at unit point `x` and time `t` (seconds).
    fn value(&self, x: &[f64], t: f64) -> f64;
    /// min_x f(x, t) over the search space (or the arms), noise-free.
    fn optimum(&self, t: f64) -> f64;
}

/// A synthetic function of 002 Appendix F as a benchmark objective: x ∈ `[0,1]^d` maps
/// onto the first d inputs, t ∈ [0, horizon] onto the last (see [`super::synthetic`]).
pub struct SyntheticObjective {
    function: SyntheticFunction,
    horizon: f64,
    search: MinimumSearch,
}

impl SyntheticObjective {
    pub fn new(function: SyntheticFunction, horizon: f64) -> Self {
        let (lo, hi) = function.bounds();
        let hints = function
            .basin_hints()
            .into_iter()
            .map(|z| {
                z[..function.inputs() - 1]
                    .iter()
                    .map(|v| (v - lo) / (hi - lo))
                    .collect()
            })
            .collect();
        SyntheticObjective {
            function,
            horizon,
            search: MinimumSearch::new(function.inputs() - 1, hints, horizon),
        }
    }

    /// The function's own inputs z for unit point x at time t.
    pub fn inputs(&self, x: &[f64], t: f64) -> Vec<f64> {
        let (lo, hi) = self.function.bounds();
        let tau = (t / self.horizon).clamp(0.0, 1.0);
        x.iter()
            .map(|v| lo + v.clamp(0.0, 1.0) * (hi - lo))
            .chain(std::iter::once(lo + tau * (hi - lo)))
            .collect()
    }

    /// The time (seconds) at which the last input takes the value `z_last`.
    pub fn time_of(&self, z_last: f64) -> f64 {
        let (lo, hi) = self.function.bounds();
        (z_last - lo) / (hi - lo) * self.horizon
    }
}

impl Objective for SyntheticObjective {
    fn dim(&self) -> usize {
        self.function.inputs() - 1
    }

    fn noise_variance(&self) -> f64 {
        self.function.noise_variance()
    }

    fn cost(&self) -> f64 {
        self.function.cost()
    }

    fn value(&self, x: &[f64], t: f64) -> f64 {
        self.function.eval(&self.inputs(x, t))
    }

    fn optimum(&self, t: f64) -> f64 {
        self.search.minimum(|x, t| self.value(x, t), t)
    }
}

/// Dense quasi-random points of the minimum search.
const DENSE_POINTS: usize = 1 << 14;
/// Local descents started per grid time (from the best dense points and hints).
const DESCENTS: usize = 10;
/// Cached minimisers refined at each queried time.
const REFINED: usize = 4;
/// Spacing of the cached time grid, as a fraction of the horizon.
const GRID_FRACTION: f64 = 1.0 / 1200.0;

/// min_x f(x, t) over `[0,1]^d` by a dense search per time, cached.
///
/// For each time of a grid (horizon / 1200 apart) it evaluates f at 2^14 scrambled Sobol
/// points and at the basin hints, and refines the best `DESCENTS` by bounded L-BFGS
/// (central-difference gradients); the minimisers found are cached. The minimum at any
/// t is then the best local descent, at t itself, from the cached minimisers of the two
/// grid times around t (the `REFINED` best of them at t). Since f is continuous in t, the minimiser at t lies in the
/// basin of a minimiser at a neighbouring grid time unless the basins re-order within
/// one grid step. Deterministic: the result depends only on f and t.
pub struct MinimumSearch {
    dim: usize,
    dense: Vec<Vec<f64>>,
    step: f64,
    cache: Mutex<HashMap<i64, Arc<Vec<Vec<f64>>>>>,
}

impl MinimumSearch {
    pub fn new(dim: usize, hints: Vec<Vec<f64>>, horizon: f64) -> Self {
        let mut dense: Vec<Vec<f64>> = (0..DENSE_POINTS)
            .map(|i| {
                (0..dim)
                    .map(|j| f64::from(sobol_burley::sample(i as u32, j as u32, 0x7B0)))
                    .collect()
            })
            .collect();
        dense.extend(
            hints
                .into_iter()
                .map(|h| h.iter().map(|v| v.clamp(0.0, 1.0)).collect()),
        );
        MinimumSearch {
            dim,
            dense,
            step: (horizon * GRID_FRACTION).max(1e-9),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// min_x f(x, t): local descents at t from the `REFINED` best (at t) of the cached
    /// minimisers of the grid times around t.
    pub fn minimum(&self, f: impl Fn(&[f64], f64) -> f64, t: f64) -> f64 {
        let k = (t / self.step).floor() as i64;
        let (below, above) = (self.grid_minimisers(&f, k), self.grid_minimisers(&f, k + 1));
        let mut starts: Vec<(f64, &Vec<f64>)> = below
            .iter()
            .chain(above.iter())
            .map(|x| (f(x, t), x))
            .collect();
        starts.sort_by(|a, b| a.0.total_cmp(&b.0));
        starts
            .iter()
            .take(REFINED)
            .map(|(_, x)| self.descend(&f, x, t).1)
            .fold(f64::INFINITY, f64::min)
    }

    fn grid_minimisers(&self, f: &impl Fn(&[f64], f64) -> f64, k: i64) -> Arc<Vec<Vec<f64>>> {
        if let Some(found) = self.cache.lock().expect("cache lock").get(&k) {
            return found.clone();
        }
        let t = k as f64 * self.step;
        let mut scored: Vec<(f64, &Vec<f64>)> = self.dense.iter().map(|x| (f(x, t), x)).collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut minimisers: Vec<Vec<f64>> = scored
            .iter()
            .take(DESCENTS)
            .map(|(_, x)| self.descend(f, x, t).0)
            .collect();
        // Every hint is a start of its own, however it ranks among the dense points.
        let hints = &self.dense[DENSE_POINTS..];
        minimisers.extend(hints.iter().map(|x| self.descend(f, x, t).0));
        let minimisers = Arc::new(minimisers);
        self.cache
            .lock()
            .expect("cache lock")
            .insert(k, minimisers.clone());
        minimisers
    }

    /// A bounded local descent of f(·, t) from `start`: the point and its value.
    fn descend(&self, f: &impl Fn(&[f64], f64) -> f64, start: &[f64], t: f64) -> (Vec<f64>, f64) {
        let lower = vec![0.0; self.dim];
        let upper = vec![1.0; self.dim];
        let options = BoundedOptions {
            max_iterations: 60,
            gradient_tolerance: 1e-9,
            ..BoundedOptions::default()
        };
        let result = minimize_bounded(
            |x| {
                let value = f(x, t);
                let mut gradient = vec![0.0; x.len()];
                let mut probe = x.to_vec();
                for i in 0..x.len() {
                    let h = 1e-7;
                    let (a, b) = ((x[i] - h).max(0.0), (x[i] + h).min(1.0));
                    probe[i] = b;
                    let up = f(&probe, t);
                    probe[i] = a;
                    let down = f(&probe, t);
                    probe[i] = x[i];
                    gradient[i] = (up - down) / (b - a);
                }
                (value, gradient)
            },
            start,
            &lower,
            &upper,
            &options,
        );
        let start_value = f(start, t);
        if result.value <= start_value {
            (result.x, result.value)
        } else {
            (start.to_vec(), start_value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each function's published global minimum, at the time its minimiser's last input
    /// corresponds to: the value at the minimiser, and the minimum the search finds.
    #[test]
    fn the_minimum_search_finds_the_published_minima() {
        for function in SyntheticFunction::ALL {
            let objective = SyntheticObjective::new(function, 600.0);
            let (minimum, z) = function.global_minimum();
            let (lo, hi) = function.bounds();
            let d = function.inputs() - 1;
            let t = objective.time_of(z[d]);
            let x: Vec<f64> = z[..d].iter().map(|v| (v - lo) / (hi - lo)).collect();
            let tolerance = 1e-4 * minimum.abs().max(1.0);
            let at_minimiser = objective.value(&x, t);
            assert!(
                (at_minimiser - minimum).abs() <= tolerance,
                "{}: f(x*, t*) = {at_minimiser}, published {minimum}",
                function.name()
            );
            let found = objective.optimum(t);
            assert!(
                (found - minimum).abs() <= tolerance,
                "{}: search found {found} at t = {t}, published minimum {minimum}",
                function.name()
            );
        }
    }

    /// Away from t*, the minimum over space is never above any value on a random probe
    /// set and never below the global minimum.
    #[test]
    fn the_minimum_search_bounds_every_probe() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for function in SyntheticFunction::ALL {
            let objective = SyntheticObjective::new(function, 600.0);
            let (global, _) = function.global_minimum();
            for _ in 0..3 {
                let t = rng.random::<f64>() * 600.0;
                let optimum = objective.optimum(t);
                assert!(optimum >= global - 1e-4 * global.abs().max(1.0));
                for _ in 0..2000 {
                    let x: Vec<f64> = (0..objective.dim()).map(|_| rng.random()).collect();
                    let value = objective.value(&x, t);
                    assert!(
                        optimum <= value + 1e-9,
                        "{}: optimum {optimum} above f = {value} at t = {t}",
                        function.name()
                    );
                }
            }
        }
    }

    #[test]
    fn time_maps_onto_the_last_input() {
        let objective = SyntheticObjective::new(SyntheticFunction::Powell, 600.0);
        assert_eq!(
            objective.inputs(&[0.0, 1.0, 0.5], 0.0),
            vec![-4.0, 5.0, 0.5, -4.0]
        );
        assert_eq!(objective.inputs(&[0.0, 1.0, 0.5], 600.0)[3], 5.0);
        assert!((objective.time_of(0.5) - 600.0 * 4.5 / 9.0).abs() < 1e-12);
    }
}
