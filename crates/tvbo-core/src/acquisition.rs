//! Upper-confidence-bound acquisition: exploration weights β and maximisation of
//! μ + √β σ over the unit box or over a finite arm set.

use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;

use crate::domain::space::{choice_at, choice_centre};
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
    maximize_ucb_beside(gp, beta, t, options, fixed, cores, rng, None)
}

/// [`maximize_ucb_on`], running `beside` (other work of the same job, on one thread) as
/// one more piece of the refinements' round: first, so that a second thread takes the
/// refinements meanwhile. The refinements of two groups gain little from a second
/// thread (one group takes most of the time), which leaves a core idle for about what
/// the search of a model's posterior mean takes. With one thread, `beside` runs before
/// them. The maximisation is the same whatever `beside` does.
#[allow(clippy::too_many_arguments)]
pub fn maximize_ucb_beside<R: Rng + ?Sized>(
    gp: &Gp,
    beta: f64,
    t: f64,
    options: &AcquisitionOptions,
    fixed: &[(usize, f64)],
    cores: &dyn Cores,
    rng: &mut R,
    beside: Option<&(dyn Fn() + Sync)>,
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
    let pieces: Vec<Option<&[&[f64]]>> = beside
        .map(|_| None)
        .into_iter()
        .chain(starts.chunks(REFINEMENT_GROUP).map(Some))
        .collect();
    let refined = in_parallel(&pieces, cores, |piece| match piece {
        Some(group) => refine_together(gp, group, t, sqrt_beta, fixed, &options.optimizer),
        None => {
            if let Some(work) = beside {
                work();
            }
            Vec::new()
        }
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
        let k = categories.choices(i);
        point[i] = choice_centre(choice_at(point[i], k), k);
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
                let u = choice_centre(choice, k);
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
#[path = "acquisition/tests.rs"]
mod tests;
