//! Upper-confidence-bound acquisition: exploration weights β and maximisation of
//! μ + √β σ over the unit box or over a finite arm set.

use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;

use crate::gp::{Categories, Gp};
use crate::optim::{BoundedOptions, BoundedSearch, Minimum, Request};

/// Settings of [`maximize_ucb`] and [`maximize_mean`].
#[derive(Clone, Debug, PartialEq)]
pub struct AcquisitionOptions {
    /// Scrambled Sobol points evaluated first (default 512; at least 1, at most 2^16 are used).
    pub raw_samples: usize,
    /// How many of the best raw points are refined by L-BFGS (default 20).
    pub restarts: usize,
    /// Settings of each refinement (default [`BoundedOptions::default`]).
    pub optimizer: BoundedOptions,
}

/// The threads a maximisation may run its pieces of work on (chunks of the raw samples,
/// groups of refinements), asked again before each piece a helper thread takes: a server
/// answers with the cores no job holds at that moment, so a job that starts meanwhile has
/// its core back within one piece. A number is a fixed answer. The result of a
/// maximisation does not depend on it.
pub trait Cores: Sync {
    /// Threads that may run now; the calling thread always runs.
    fn available(&self) -> usize;
}

impl Cores for usize {
    fn available(&self) -> usize {
        *self
    }
}

impl Default for AcquisitionOptions {
    fn default() -> Self {
        AcquisitionOptions {
            raw_samples: 512,
            restarts: 20,
            optimizer: BoundedOptions::default(),
        }
    }
}

/// W-DBO's exploration weight β = 0.2 · d · ln(2n), with the logarithm floored at ln 2
/// (so n = 0 behaves as n = 1).
pub fn beta_wdbo(dim: usize, n: usize) -> f64 {
    0.2 * dim as f64 * (2.0 * n as f64).ln().max(std::f64::consts::LN_2)
}

/// Srinivas et al. 2010 (paper 004), Theorem 1, for a finite domain D:
/// β_t = 2 ln(|D| t² π² / (6δ)), with t ≥ 1 the round (t = 0 is read as 1) and
/// δ ∈ (0, 1) the failure probability. Clamped at 0.
pub fn beta_srinivas_finite(arms: usize, t: usize, delta: f64) -> f64 {
    let t = t.max(1) as f64;
    let arms = arms.max(1) as f64;
    let pi2 = std::f64::consts::PI * std::f64::consts::PI;
    (2.0 * (arms * t * t * pi2 / (6.0 * delta)).ln()).max(0.0)
}

/// Default `a` of [`beta_srinivas_continuous`] (the sample-path derivative tail constant).
pub const SRINIVAS_DEFAULT_A: f64 = 1.0;
/// Default `b` of [`beta_srinivas_continuous`] (the sample-path derivative scale).
pub const SRINIVAS_DEFAULT_B: f64 = 1.0;
/// Default `r` of [`beta_srinivas_continuous`]: the domain is `[0, 1]^d`.
pub const SRINIVAS_DEFAULT_R: f64 = 1.0;
/// Default failure probability δ for the Srinivas schedules.
pub const SRINIVAS_DEFAULT_DELTA: f64 = 0.1;

/// Srinivas et al. 2010 (paper 004), Theorem 2, for a compact convex D ⊂ [0, r]^d whose
/// GP sample paths satisfy Pr{sup |∂f/∂x_j| > L} ≤ a e^{−(L/b)²}:
/// β_t = 2 ln(t² 2π² / (3δ)) + 2d ln(t² d b r √(ln(4da/δ))).
/// Inputs live in the unit cube, so [`SRINIVAS_DEFAULT_R`] = 1; a = b = 1
/// ([`SRINIVAS_DEFAULT_A`], [`SRINIVAS_DEFAULT_B`]) and δ = 0.1 are the suggested defaults.
/// t = 0 is read as 1; the result is clamped at 0.
pub fn beta_srinivas_continuous(dim: usize, t: usize, delta: f64, a: f64, b: f64, r: f64) -> f64 {
    let t = t.max(1) as f64;
    let d = dim as f64;
    let pi2 = std::f64::consts::PI * std::f64::consts::PI;
    let first = 2.0 * (t * t * 2.0 * pi2 / (3.0 * delta)).ln();
    let inner = (4.0 * d * a / delta).ln().max(0.0).sqrt();
    let second = if dim == 0 {
        0.0
    } else {
        2.0 * d * (t * t * d * b * r * inner).ln()
    };
    let beta = first + second;
    if beta.is_finite() { beta.max(0.0) } else { 0.0 }
}

fn sobol_points<R: Rng + ?Sized>(count: usize, dim: usize, rng: &mut R) -> Vec<Vec<f64>> {
    let seed = rng.next_u32();
    (0..count.clamp(1, 1 << 16))
        .map(|i| {
            (0..dim)
                .map(|j| {
                    // Beyond the 256 tabulated dimensions, reuse them under a different scramble.
                    let block = (j / 256) as u32;
                    let s = seed.wrapping_add(block.wrapping_mul(0x9E37_79B9));
                    f64::from(sobol_burley::sample(i as u32, (j % 256) as u32, s))
                })
                .collect()
        })
        .collect()
}

/// Sets the coordinates of `point` that `fixed` (index, value) names to their values.
pub fn hold(point: &mut [f64], fixed: &[(usize, f64)]) {
    for &(i, value) in fixed {
        point[i] = value;
    }
}

fn ucb_value(mean: f64, variance: f64, sqrt_beta: f64) -> f64 {
    let v = mean + sqrt_beta * variance.max(0.0).sqrt();
    if v.is_nan() { f64::NEG_INFINITY } else { v }
}

/// Negated UCB and its gradient at each of `xs`, for minimisation: one batched prediction
/// (with β = 0 the mean alone, O(n·d) per point).
fn negated_ucb_many(gp: &Gp, xs: &[Vec<f64>], t: f64, sqrt_beta: f64) -> Vec<(f64, Vec<f64>)> {
    if sqrt_beta == 0.0 {
        return xs
            .iter()
            .map(|x| {
                let (mean, grad) = gp.predict_mean_with_gradient(x, t);
                (-mean, grad.into_iter().map(|g| -g).collect())
            })
            .collect();
    }
    gp.predict_with_gradient_many(xs, t)
        .into_iter()
        .map(|p| {
            let sigma = p.variance.sqrt();
            let value = p.mean + sqrt_beta * sigma;
            // dσ/dx = dvar/dx / (2σ) blows up as σ → 0; there the mean term dominates.
            let sigma_scale = if sigma > 1e-12 {
                sqrt_beta / (2.0 * sigma)
            } else {
                0.0
            };
            let grad = p
                .mean_gradient
                .iter()
                .zip(&p.variance_gradient)
                .map(|(gm, gv)| -(gm + sigma_scale * gv))
                .collect();
            (-value, grad)
        })
        .collect()
}

/// Raw samples evaluated together, one chunk per thread: the default 512 make two.
const RAW_SAMPLE_CHUNK: usize = 256;

/// Refinements stepped together: each round evaluates the points of all the group's
/// searches still running in one batch. Ten make the 20 default restarts two groups, one
/// per core of a 2-core machine, and at n = 400 a batch of ten takes a third of the time
/// per point of a point alone (`Gp::predict_with_gradient_many`).
const REFINEMENT_GROUP: usize = 10;

/// Minimises −UCB from each start by [`BoundedSearch`], the searches stepped together (the
/// same steps each would take alone, on the batch's values).
fn refine_together(
    gp: &Gp,
    starts: &[&[f64]],
    t: f64,
    sqrt_beta: f64,
    fixed: &[(usize, f64)],
    options: &BoundedOptions,
) -> Vec<Minimum> {
    let dim = gp.dim();
    // A fixed coordinate's bounds are its value, and so are a categorical coordinate's
    // (each start keeps its choices): the projected search never moves them.
    let (mut lower, mut upper) = (vec![0.0; dim], vec![1.0; dim]);
    hold(&mut lower, fixed);
    hold(&mut upper, fixed);
    let categories = gp.spec().categories;
    let mut searches: Vec<BoundedSearch> = starts
        .iter()
        .map(|x0| {
            let (mut lower, mut upper) = (lower.clone(), upper.clone());
            for i in categories.categorical(dim) {
                (lower[i], upper[i]) = (x0[i], x0[i]);
            }
            BoundedSearch::new(x0, &lower, &upper, options)
        })
        .collect();
    // Each search's gradient at its last valued point, evaluated with the value.
    let mut gradients: Vec<Vec<f64>> = vec![Vec::new(); searches.len()];
    loop {
        let mut waiting = Vec::new();
        let mut points = Vec::new();
        for (i, search) in searches.iter_mut().enumerate() {
            if search.request() == Request::Gradient {
                search.tell_gradient(std::mem::take(&mut gradients[i]));
            }
            if let Request::Value(x) = search.request() {
                waiting.push(i);
                points.push(x.to_vec());
            }
        }
        if waiting.is_empty() {
            break;
        }
        let evaluated = negated_ucb_many(gp, &points, t, sqrt_beta);
        for (i, (value, gradient)) in waiting.into_iter().zip(evaluated) {
            gradients[i] = gradient;
            searches[i].tell_value(value);
        }
    }
    searches
        .into_iter()
        .map(BoundedSearch::into_minimum)
        .collect()
}

/// `work` of every item, on the calling thread and on helpers while `cores` has room for
/// them (helper k takes a next item only while more than k threads are available), each
/// thread taking the next item not yet taken; the results in the items' order.
fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    cores: &dyn Cores,
    work: impl Fn(&I) -> T + Sync,
) -> Vec<T> {
    let threads = cores.available().clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let run = |helper: usize| {
        let mut done = Vec::new();
        loop {
            if helper > 0 && cores.available() <= helper {
                return done;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, work(item)));
        }
    };
    let mut results: Vec<Option<T>> = items.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            .map(|helper| scope.spawn(move || run(helper)))
            .collect();
        let mut parts = vec![run(0)];
        parts.extend(
            helpers
                .into_iter()
                .map(|h| h.join().expect("a refinement panicked")),
        );
        for (i, result) in parts.into_iter().flatten() {
            results[i] = Some(result);
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every item was taken"))
        .collect()
}

/// Maximises UCB μ + √β σ (latent σ) at time t over `[0,1]^dim`: evaluates
/// `raw_samples` scrambled Sobol points (scramble seed drawn from `rng`), refines the best
/// `restarts` of them by the projected L-BFGS search of [`crate::optim::minimize_bounded`]
/// with analytic gradients (the searches stepped together in groups, each round of a
/// group one batched prediction; the same steps as one by one), and returns the
/// best point and its UCB value. The point is always inside the box and never NaN; its
/// value is at least the best raw value. Deterministic given the rng state, including
/// for an empty GP (where every point is equally good and the first Sobol point wins).
/// A non-positive or non-finite β is treated as 0.
pub fn maximize_ucb<R: Rng + ?Sized>(
    gp: &Gp,
    beta: f64,
    t: f64,
    options: &AcquisitionOptions,
    rng: &mut R,
) -> (Vec<f64>, f64) {
    maximize_ucb_on(gp, beta, t, options, &[], &1, rng)
}

/// [`maximize_ucb`] with its raw samples and refinements on the threads `cores` allows
/// (the same result), over the points whose coordinates `fixed` (index, value) holds
/// at their values: the best setting of the others given them (a suggest's `fixed`).
pub fn maximize_ucb_on<R: Rng + ?Sized>(
    gp: &Gp,
    beta: f64,
    t: f64,
    options: &AcquisitionOptions,
    fixed: &[(usize, f64)],
    cores: &dyn Cores,
    rng: &mut R,
) -> (Vec<f64>, f64) {
    let dim = gp.dim();
    let sqrt_beta = if beta > 0.0 && beta.is_finite() {
        beta.sqrt()
    } else {
        0.0
    };
    let categories = gp.spec().categories;
    let mut raw = sobol_points(options.raw_samples, dim, rng);
    for point in &mut raw {
        to_choices(point, &categories);
        hold(point, fixed);
    }
    // With β = 0 (the posterior mean alone) the variances, an O(n²) solve per point, are
    // not needed.
    let value_of = |chunk: &&[Vec<f64>]| -> Vec<f64> {
        if sqrt_beta == 0.0 {
            gp.predict_mean_many(chunk, t)
                .into_iter()
                .map(|m| ucb_value(m, 0.0, 0.0))
                .collect()
        } else {
            gp.predict_many(chunk, t)
                .into_iter()
                .map(|(m, v)| ucb_value(m, v, sqrt_beta))
                .collect()
        }
    };
    let chunks: Vec<&[Vec<f64>]> = raw.chunks(RAW_SAMPLE_CHUNK).collect();
    let values: Vec<f64> = in_parallel(&chunks, cores, value_of)
        .into_iter()
        .flatten()
        .collect();
    let mut order: Vec<usize> = (0..raw.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let mut best = raw[order[0]].clone();
    let mut best_value = values[order[0]];
    let starts: Vec<&[f64]> = refinement_starts(&raw, &order, &categories, options.restarts)
        .into_iter()
        .map(|i| raw[i].as_slice())
        .collect();
    let groups: Vec<&[&[f64]]> = starts.chunks(REFINEMENT_GROUP).collect();
    let refined = in_parallel(&groups, cores, |group| {
        refine_together(gp, group, t, sqrt_beta, fixed, &options.optimizer)
    });
    for m in refined.into_iter().flatten() {
        let value = -m.value;
        if value > best_value && m.x.iter().all(|v| (0.0..=1.0).contains(v)) {
            best = m.x;
            best_value = value;
        }
    }
    if !categories.is_empty() {
        (best, best_value) = search_choices(gp, best, best_value, t, sqrt_beta, fixed, options);
    }
    (best, best_value)
}

/// Most combinations of choices for which every one gets a refinement start of its own
/// (while the restarts allow): fewer are enumerated, more are sampled and then searched
/// locally ([`search_choices`]).
const ENUMERATED_COMBINATIONS: usize = 32;

/// Most rounds of [`search_choices`]: each changes one choice and refines the rest again.
const CHOICE_SEARCH_ROUNDS: usize = 8;

/// Moves every categorical coordinate of `point` to the centre of the choice's cell,
/// (⌊u·K⌋ + ½)/K, so that uniform points give uniform choices.
fn to_choices(point: &mut [f64], categories: &Categories) {
    for i in categories.categorical(point.len()) {
        let k = categories.choices(i) as f64;
        point[i] = ((point[i] * k).floor().min(k - 1.0) + 0.5) / k;
    }
}

/// The raw points (indices, best first in `order`) that the refinements start from:
/// the `restarts` best, except that with categorical inputs of at most
/// [`ENUMERATED_COMBINATIONS`] combinations each combination's best point comes first,
/// so that the continuous coordinates are refined under every combination of choices.
fn refinement_starts(
    raw: &[Vec<f64>],
    order: &[usize],
    categories: &Categories,
    restarts: usize,
) -> Vec<usize> {
    let mut starts = Vec::with_capacity(restarts);
    if !categories.is_empty() {
        let dim = raw.first().map_or(0, Vec::len);
        let combinations: usize = categories
            .categorical(dim)
            .map(|i| categories.choices(i))
            .product();
        if combinations <= ENUMERATED_COMBINATIONS.min(restarts) {
            let mut seen: Vec<Vec<u64>> = Vec::new();
            for &i in order {
                let key: Vec<u64> = categories
                    .categorical(dim)
                    .map(|c| raw[i][c].to_bits())
                    .collect();
                if !seen.contains(&key) {
                    seen.push(key);
                    starts.push(i);
                }
            }
        }
    }
    for &i in order {
        if starts.len() >= restarts {
            break;
        }
        if !starts.contains(&i) {
            starts.push(i);
        }
    }
    starts.truncate(restarts.max(1));
    starts
}

/// A local search over the choices of `best` (its UCB `best_value`): each round tries
/// every other choice of every categorical coordinate not in `fixed` with the
/// continuous coordinates as they are, takes the best that improves, and refines the
/// continuous coordinates under it; it stops when no change improves, or after
/// [`CHOICE_SEARCH_ROUNDS`] rounds.
fn search_choices(
    gp: &Gp,
    mut best: Vec<f64>,
    mut best_value: f64,
    t: f64,
    sqrt_beta: f64,
    fixed: &[(usize, f64)],
    options: &AcquisitionOptions,
) -> (Vec<f64>, f64) {
    let categories = gp.spec().categories;
    for _ in 0..CHOICE_SEARCH_ROUNDS {
        let mut neighbours = Vec::new();
        for i in categories.categorical(best.len()) {
            if fixed.iter().any(|&(f, _)| f == i) {
                continue;
            }
            let k = categories.choices(i);
            for choice in 0..k {
                let u = (choice as f64 + 0.5) / k as f64;
                if (u - best[i]).abs() > 1e-12 {
                    let mut x = best.clone();
                    x[i] = u;
                    neighbours.push(x);
                }
            }
        }
        let values: Vec<f64> = gp
            .predict_many(&neighbours, t)
            .into_iter()
            .map(|(m, v)| ucb_value(m, v, sqrt_beta))
            .collect();
        let Some((index, &value)) = values
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .filter(|(_, v)| **v > best_value)
        else {
            break;
        };
        best = neighbours.swap_remove(index);
        best_value = value;
        let start = [best.as_slice()];
        if let Some(m) = refine_together(gp, &start, t, sqrt_beta, fixed, &options.optimizer)
            .into_iter()
            .next()
            .filter(|m| -m.value > best_value && m.x.iter().all(|v| (0.0..=1.0).contains(v)))
        {
            best_value = -m.value;
            best = m.x;
        }
    }
    (best, best_value)
}

/// Finite arm set: the index of the arm with the highest UCB at time t and that value;
/// ties go to the lowest index, NaN values rank lowest. An empty arm set gives
/// (0, −∞), which the caller must not index with.
pub fn best_arm_ucb(gp: &Gp, beta: f64, t: f64, arms: &[Vec<f64>]) -> (usize, f64) {
    let sqrt_beta = if beta > 0.0 && beta.is_finite() {
        beta.sqrt()
    } else {
        0.0
    };
    let mut best = (0, f64::NEG_INFINITY);
    for (i, (m, v)) in gp.predict_many(arms, t).into_iter().enumerate() {
        let value = ucb_value(m, v, sqrt_beta);
        if value > best.1 {
            best = (i, value);
        }
    }
    best
}

/// Maximiser of the posterior mean at time t over `[0,1]^dim` (the same machinery as
/// [`maximize_ucb_on`] with β = 0), for the "best so far" recommendation.
pub fn maximize_mean<R: Rng + ?Sized>(
    gp: &Gp,
    t: f64,
    options: &AcquisitionOptions,
    fixed: &[(usize, f64)],
    cores: &dyn Cores,
    rng: &mut R,
) -> (Vec<f64>, f64) {
    maximize_ucb_on(gp, 0.0, t, options, fixed, cores, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::{Categories, Hyperparameters, KernelKind, KernelSpec};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn results_keep_the_order_of_the_items_on_any_number_of_threads() {
        let items: Vec<u64> = (0..37).collect();
        let square = |x: &u64| x * x;
        let one = in_parallel(&items, &1, square);
        for threads in [0, 2, 3, 8, 100] {
            assert_eq!(in_parallel(&items, &threads, square), one);
        }
        assert!(in_parallel(&[] as &[u64], &4, square).is_empty());
        // Cores that are taken back part-way: the helper stops, the caller finishes.
        struct Shrinking(AtomicUsize);
        impl Cores for Shrinking {
            fn available(&self) -> usize {
                if self.0.fetch_add(1, Ordering::Relaxed) < 5 {
                    2
                } else {
                    1
                }
            }
        }
        assert_eq!(
            in_parallel(&items, &Shrinking(AtomicUsize::new(0)), square),
            one
        );
    }

    fn random_gp(n: usize, dim: usize, rng: &mut ChaCha8Rng) -> Gp {
        let kinds = KernelKind::ALL;
        let spec = KernelSpec::new(
            kinds[rng.random_range(0..4)],
            if rng.random::<bool>() {
                Some(kinds[rng.random_range(0..4)])
            } else {
                None
            },
        );
        let hyper = Hyperparameters {
            signal_variance: 0.1 + 3.0 * rng.random::<f64>(),
            spatial_lengthscale: 0.03 + rng.random::<f64>(),
            temporal_lengthscale: 1.0 + 50.0 * rng.random::<f64>(),
            noise_variance: 1e-4 + 0.1 * rng.random::<f64>(),
            categorical_lengthscale: 1.0,
        };
        let xs = (0..n)
            .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
            .collect();
        let ts = (0..n).map(|_| 100.0 * rng.random::<f64>()).collect();
        let ys = (0..n).map(|_| rng.random::<f64>() * 4.0 - 2.0).collect();
        Gp::new(spec, hyper, dim, xs, ts, ys).unwrap()
    }

    fn small_options() -> AcquisitionOptions {
        AcquisitionOptions {
            raw_samples: 64,
            restarts: 4,
            ..AcquisitionOptions::default()
        }
    }

    #[test]
    fn beta_schedules() {
        assert!((beta_wdbo(3, 10) - 0.6 * 20f64.ln()).abs() < 1e-12);
        assert_eq!(beta_wdbo(2, 0), beta_wdbo(2, 1));
        assert!((beta_wdbo(2, 1) - 0.4 * 2f64.ln()).abs() < 1e-12);
        let pi2 = std::f64::consts::PI.powi(2);
        assert!(
            (beta_srinivas_finite(10, 5, 0.1) - 2.0 * (10.0 * 25.0 * pi2 / 0.6).ln()).abs() < 1e-12
        );
        assert!(beta_srinivas_finite(10, 6, 0.1) > beta_srinivas_finite(10, 5, 0.1));
        let expected =
            2.0 * (16.0 * 2.0 * pi2 / 0.3).ln() + 6.0 * (16.0 * 3.0 * (120f64).ln().sqrt()).ln();
        assert!((beta_srinivas_continuous(3, 4, 0.1, 1.0, 1.0, 1.0) - expected).abs() < 1e-12);
        assert!(beta_srinivas_continuous(3, 0, 0.1, 1.0, 1.0, 1.0) >= 0.0);
    }

    /// A GP over one continuous input and categorical ones with `choices` each, on
    /// random data whose categorical coordinates are cell centres.
    fn mixed_gp(n: usize, choices: &[usize], rng: &mut ChaCha8Rng) -> Gp {
        let counts: Vec<usize> = std::iter::once(0).chain(choices.iter().copied()).collect();
        let spec =
            KernelSpec::new(KernelKind::Matern52, None).with_categories(Categories::new(&counts));
        let hyper = Hyperparameters {
            signal_variance: 1.0,
            spatial_lengthscale: 0.15,
            categorical_lengthscale: 0.2 + rng.random::<f64>(),
            noise_variance: 1e-3,
            ..Hyperparameters::default()
        };
        let xs: Vec<Vec<f64>> = (0..n)
            .map(|_| {
                counts
                    .iter()
                    .map(|&k| match k {
                        0 => rng.random::<f64>(),
                        k => (rng.random_range(0..k) as f64 + 0.5) / k as f64,
                    })
                    .collect()
            })
            .collect();
        let ys = (0..n).map(|_| rng.random::<f64>() * 4.0 - 2.0).collect();
        Gp::new(spec, hyper, counts.len(), xs, vec![0.0; n], ys).unwrap()
    }

    /// Over one continuous and categorical inputs, the maximiser holds choices (cell
    /// centres) and is as good as a brute force over every combination of choices × a
    /// dense grid of the continuous coordinate: with few combinations (enumerated) and
    /// with many (sampled, then searched locally).
    #[test]
    fn mixed_inputs_are_maximised_over_every_combination_of_choices() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        // The service's settings: 512 raw samples, 20 restarts.
        let options = AcquisitionOptions::default();
        for (trial, choices) in [vec![3], vec![2, 4], vec![2; 6]].into_iter().enumerate() {
            for _ in 0..4 {
                let gp = mixed_gp(25, &choices, &mut rng);
                let (x, value) = maximize_ucb_on(&gp, 2.0, 0.0, &options, &[], &1, &mut rng);
                for (i, &k) in choices.iter().enumerate() {
                    let cell = x[i + 1] * k as f64 - 0.5;
                    assert!((cell - cell.round()).abs() < 1e-12, "{x:?}");
                }
                let ucb = |p: &[f64]| {
                    let (m, v) = gp.predict(p, 0.0);
                    m + 2f64.sqrt() * v.sqrt()
                };
                let combinations: usize = choices.iter().product();
                let mut brute = f64::NEG_INFINITY;
                for c in 0..combinations {
                    let mut rest = c;
                    let mut p: Vec<f64> = vec![0.0];
                    for &k in &choices {
                        p.push(((rest % k) as f64 + 0.5) / k as f64);
                        rest /= k;
                    }
                    for g in 0..=400 {
                        p[0] = g as f64 / 400.0;
                        brute = brute.max(ucb(&p));
                    }
                }
                assert!((ucb(&x) - value).abs() < 1e-9);
                assert!(value >= brute - 1e-3, "trial {trial}: {value} < {brute}");
            }
        }
    }

    /// With a coordinate held, the maximiser keeps it exactly and is as good as the
    /// best of a dense grid over the free coordinate (brute force, in two dimensions).
    #[test]
    fn a_fixed_coordinate_is_held_and_the_others_maximised_given_it() {
        let mut rng = ChaCha8Rng::seed_from_u64(23);
        let options = small_options();
        for trial in 0..10 {
            let gp = random_gp(12 + trial, 2, &mut rng);
            let (held, t, beta) = (rng.random::<f64>(), 50.0 * rng.random::<f64>(), 2.0);
            for index in [0, 1] {
                let fixed = [(index, held)];
                let (x, value) = maximize_ucb_on(&gp, beta, t, &options, &fixed, &1, &mut rng);
                assert_eq!(x[index], held, "trial {trial}: {x:?}");
                let ucb = |p: &[f64]| {
                    let (m, v) = gp.predict(p, t);
                    m + beta.sqrt() * v.sqrt()
                };
                let grid_best = (0..=2000)
                    .map(|k| {
                        let mut p = [k as f64 / 2000.0; 2];
                        p[index] = held;
                        ucb(&p)
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    value >= grid_best - 1e-4,
                    "trial {trial}: {value} < {grid_best}"
                );
                assert!((ucb(&x) - value).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn suggestions_stay_in_the_box_and_beat_raw_samples() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let options = small_options();
        for trial in 0..40 {
            let dim = 1 + trial % 5;
            let n = rng.random_range(0..30);
            let gp = random_gp(n, dim, &mut rng);
            let beta = 3.0 * rng.random::<f64>();
            let t = 100.0 * rng.random::<f64>();
            let state = rng.clone();
            let (x, value) = maximize_ucb(&gp, beta, t, &options, &mut rng);
            assert_eq!(x.len(), dim);
            assert!(x.iter().all(|v| (0.0..=1.0).contains(v)), "{x:?}");
            assert!(value.is_finite());
            let (m, v) = gp.predict(&x, t);
            assert!((m + beta.sqrt() * v.sqrt() - value).abs() < 1e-9);
            let raw = sobol_points(options.raw_samples, dim, &mut state.clone());
            let best_raw = raw
                .iter()
                .map(|p| {
                    let (m, v) = gp.predict(p, t);
                    m + beta.sqrt() * v.sqrt()
                })
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(value >= best_raw - 1e-12, "{value} < {best_raw}");
            let (again, _) = maximize_ucb(&gp, beta, t, &options, &mut state.clone());
            assert_eq!(again, x);
        }
    }

    #[test]
    fn the_maximiser_is_the_same_on_one_thread_or_several() {
        let mut rng = ChaCha8Rng::seed_from_u64(29);
        for _ in 0..5 {
            let gp = random_gp(60, 3, &mut rng);
            let seed = rng.random::<u64>();
            let run = |threads: usize| {
                let options = AcquisitionOptions::default();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                maximize_ucb_on(&gp, 2.0, 25.0, &options, &[], &threads, &mut rng)
            };
            let one = run(1);
            assert_eq!(run(2), one);
            assert_eq!(run(3), one);
        }
    }

    #[test]
    fn searches_stepped_together_end_where_each_would_alone() {
        // The batch's values equal a lone point's to rounding, so each search takes the
        // same steps and ends at the same point, to the search's tolerance.
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        let options = BoundedOptions::default();
        for _ in 0..4 {
            let gp = random_gp(80, 3, &mut rng);
            let starts: Vec<Vec<f64>> = (0..7)
                .map(|_| (0..3).map(|_| rng.random::<f64>()).collect())
                .collect();
            let borrowed: Vec<&[f64]> = starts.iter().map(Vec::as_slice).collect();
            for sqrt_beta in [0.0, 1.5] {
                let together = refine_together(&gp, &borrowed, 30.0, sqrt_beta, &[], &options);
                for (x0, m) in starts.iter().zip(&together) {
                    let alone = crate::optim::minimize_bounded(
                        |x: &[f64]| {
                            let mut one = negated_ucb_many(&gp, &[x.to_vec()], 30.0, sqrt_beta);
                            one.pop().unwrap()
                        },
                        x0,
                        &[0.0; 3],
                        &[1.0; 3],
                        &options,
                    );
                    assert!((m.value - alone.value).abs() <= 1e-9 * (1.0 + alone.value.abs()));
                    let apart = m.x.iter().zip(&alone.x).map(|(a, b)| (a - b).abs());
                    assert!(apart.fold(0.0, f64::max) < 1e-4, "{m:?} {alone:?}");
                }
            }
        }
    }

    #[test]
    fn empty_gp_is_deterministic() {
        let gp = Gp::new(
            KernelSpec::default(),
            Hyperparameters::default(),
            3,
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
        let a = maximize_ucb(
            &gp,
            2.0,
            0.0,
            &small_options(),
            &mut ChaCha8Rng::seed_from_u64(1),
        );
        let b = maximize_ucb(
            &gp,
            2.0,
            0.0,
            &small_options(),
            &mut ChaCha8Rng::seed_from_u64(1),
        );
        assert_eq!(a, b);
        assert!((a.1 - 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn maximize_mean_finds_the_peak() {
        let xs: Vec<Vec<f64>> = (0..11).map(|i| vec![i as f64 / 10.0]).collect();
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| -(x[0] - 0.63f64).powi(2) * 10.0)
            .collect();
        let spec = KernelSpec::new(KernelKind::Rbf, None);
        let hyper = Hyperparameters {
            signal_variance: 1.0,
            spatial_lengthscale: 0.3,
            temporal_lengthscale: 1.0,
            noise_variance: 1e-4,
            categorical_lengthscale: 1.0,
        };
        let gp = Gp::new(spec, hyper, 1, xs, vec![0.0; 11], ys).unwrap();
        let (x, value) = maximize_mean(
            &gp,
            0.0,
            &small_options(),
            &[],
            &1,
            &mut ChaCha8Rng::seed_from_u64(4),
        );
        assert!((x[0] - 0.63).abs() < 0.02, "{x:?}");
        assert!((gp.predict(&x, 0.0).0 - value).abs() < 1e-12);
    }

    #[test]
    fn best_arm_matches_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(23);
        for _ in 0..30 {
            let dim = rng.random_range(1..4);
            let gp = random_gp(rng.random_range(0..20), dim, &mut rng);
            let arms: Vec<Vec<f64>> = (0..rng.random_range(1..40))
                .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
                .collect();
            let beta = 2.0 * rng.random::<f64>();
            let (idx, value) = best_arm_ucb(&gp, beta, 5.0, &arms);
            let mut expected = (0, f64::NEG_INFINITY);
            for (i, a) in arms.iter().enumerate() {
                let (m, v) = gp.predict(a, 5.0);
                let u = m + beta.sqrt() * v.sqrt();
                if u > expected.1 + 1e-12 {
                    expected = (i, u);
                }
            }
            assert_eq!(idx, expected.0);
            assert!((value - expected.1).abs() < 1e-10);
        }
        let gp = random_gp(0, 2, &mut rng);
        assert_eq!(
            best_arm_ucb(&gp, 1.0, 0.0, &[vec![0.1, 0.1], vec![0.9, 0.9]]).0,
            0
        );
        assert_eq!(best_arm_ucb(&gp, 1.0, 0.0, &[]), (0, f64::NEG_INFINITY));
    }
}
