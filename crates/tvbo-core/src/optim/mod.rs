//! Box-constrained smooth minimisation by projected L-BFGS: [`BoundedSearch`], a state
//! machine that asks for each value and gradient, and the drivers that answer it from a
//! function ([`minimize_bounded`], [`minimize_objective_bounded`]).

use std::collections::VecDeque;

/// Settings of [`minimize_bounded`].
#[derive(Clone, Debug, PartialEq)]
pub struct BoundedOptions {
    /// Maximum number of accepted steps (default 100).
    pub max_iterations: usize,
    /// Number of (s, y) correction pairs kept by L-BFGS (default 10).
    pub memory: usize,
    /// Stop when the infinity norm of the projected gradient falls to this (default 1e-6).
    pub gradient_tolerance: f64,
    /// Stop when one step decreases f, or the next full step promises to decrease it (to
    /// first order), by at most this fraction of max(|f|, 1) (default 1e-10).
    pub relative_tolerance: f64,
}

impl Default for BoundedOptions {
    fn default() -> Self {
        BoundedOptions {
            max_iterations: 100,
            memory: 10,
            gradient_tolerance: 1e-6,
            relative_tolerance: 1e-10,
        }
    }
}

/// Result of [`minimize_bounded`].
#[derive(Clone, Debug, PartialEq)]
pub struct Minimum {
    /// Best point found, inside the box.
    pub x: Vec<f64>,
    /// f at `x` (+∞ if f was not finite even at the start).
    pub value: f64,
    /// Number of accepted steps.
    pub iterations: usize,
    /// True when a tolerance was met (not when the iteration budget or the line search ran out).
    pub converged: bool,
}

const ARMIJO: f64 = 1e-4;
const MAX_BACKTRACKS: usize = 50;

fn project(x: &[f64], lower: &[f64], upper: &[f64]) -> Vec<f64> {
    x.iter()
        .zip(lower.iter().zip(upper))
        .map(|(&v, (&l, &u))| if v.is_nan() { l } else { v.clamp(l, u) })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

fn norm_inf(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// A function to minimise whose gradient may cost more than its value: the line search
/// asks for the value at each trial point and for the gradient only at the point it
/// accepts (a marginal-likelihood fit's value is one Cholesky factor, n³/3 flops; its
/// gradient needs the inverse too, 2n³/3 more).
pub trait Objective {
    /// f(x); a non-finite value is treated as +∞.
    fn value(&mut self, x: &[f64]) -> f64;
    /// ∇f at the point of the last [`Objective::value`] call, which returned a finite value;
    /// a non-finite entry is treated as a value of +∞ there.
    fn gradient(&mut self) -> Vec<f64>;
}

/// An [`Objective`] from a function that returns the value and the gradient together.
struct Joint<F> {
    f: F,
    gradient: Vec<f64>,
}

impl<F: FnMut(&[f64]) -> (f64, Vec<f64>)> Objective for Joint<F> {
    fn value(&mut self, x: &[f64]) -> f64 {
        let (value, gradient) = (self.f)(x);
        self.gradient = gradient;
        value
    }

    fn gradient(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.gradient)
    }
}

#[derive(Clone, Debug)]
struct Pair {
    s: Vec<f64>,
    y: Vec<f64>,
}

/// Two-loop recursion restricted to the free coordinates; returns the descent direction
/// −H g (zero on the fixed coordinates).
fn lbfgs_direction(g: &[f64], free: &[bool], memory: &VecDeque<Pair>) -> Vec<f64> {
    let masked = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .zip(free)
            .map(|(&a, &f)| if f { a } else { 0.0 })
            .collect()
    };
    let mut q = masked(g);
    let pairs: Vec<(Vec<f64>, Vec<f64>, f64)> = memory
        .iter()
        .filter_map(|p| {
            let s = masked(&p.s);
            let y = masked(&p.y);
            let sy = dot(&s, &y);
            (sy > f64::EPSILON * dot(&y, &y)).then(|| (s, y, 1.0 / sy))
        })
        .collect();
    let mut alphas = vec![0.0; pairs.len()];
    for (k, (s, y, rho)) in pairs.iter().enumerate().rev() {
        let a = rho * dot(s, &q);
        alphas[k] = a;
        q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
    }
    if let Some((s, y, _)) = pairs.last() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|qi| *qi *= gamma);
    }
    for (k, (s, y, rho)) in pairs.iter().enumerate() {
        let b = rho * dot(y, &q);
        let c = alphas[k] - b;
        q.iter_mut().zip(s).for_each(|(qi, si)| *qi += c * si);
    }
    q.iter_mut().for_each(|v| *v = -*v);
    q
}

/// Minimises f within the box [lower, upper] by projected L-BFGS: the two-loop recursion
/// on the free variables (those not held at a bound by their gradient), projection onto
/// the box, and a backtracking Armijo line search along the projected path, which shrinks
/// a failed step by quadratic interpolation (by a factor in [0.1, 0.5]). It stops when
/// the projected gradient is within `gradient_tolerance`, or when a step decreases f, or
/// the next full step promises to decrease it (to first order), by at most
/// `relative_tolerance` of max(|f|, 1).
///
/// `f` returns the value and the gradient. Guarantees: f is never evaluated outside the
/// box; the returned point is never worse than the projection of `x0`; non-finite values
/// (or gradients) are treated as +∞, so the line search backs off from them.
///
/// # Panics
/// If `x0`, `lower` and `upper` differ in length or some `lower[i] > upper[i]`.
pub fn minimize_bounded<F: FnMut(&[f64]) -> (f64, Vec<f64>)>(
    f: F,
    x0: &[f64],
    lower: &[f64],
    upper: &[f64],
    options: &BoundedOptions,
) -> Minimum {
    let mut joint = Joint {
        f,
        gradient: Vec::new(),
    };
    minimize_objective_bounded(&mut joint, x0, lower, upper, options)
}

/// [`minimize_bounded`] for an objective that computes the gradient apart from the value:
/// the same search, which asks for the gradient only at the start and at each accepted
/// step, never at a trial point the line search rejects.
///
/// # Panics
/// As [`minimize_bounded`].
pub fn minimize_objective_bounded<O: Objective>(
    objective: &mut O,
    x0: &[f64],
    lower: &[f64],
    upper: &[f64],
    options: &BoundedOptions,
) -> Minimum {
    let mut search = BoundedSearch::new(x0, lower, upper, options);
    loop {
        match search.request() {
            Request::Value(x) => {
                let value = objective.value(x);
                search.tell_value(value);
            }
            Request::Gradient => search.tell_gradient(objective.gradient()),
            Request::Done => return search.into_minimum(),
        }
    }
}

/// What a [`BoundedSearch`] needs next.
#[derive(Debug, PartialEq)]
pub enum Request<'a> {
    /// f at this point ([`BoundedSearch::tell_value`]).
    Value(&'a [f64]),
    /// ∇f at the point last valued ([`BoundedSearch::tell_gradient`]).
    Gradient,
    /// The search has ended ([`BoundedSearch::into_minimum`]).
    Done,
}

/// Where the search stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Waiting for f at the start.
    StartValue,
    /// Waiting for ∇f at the start.
    StartGradient,
    /// Waiting for f at the trial point.
    TrialValue,
    /// Waiting for ∇f at a trial point that passed the Armijo test.
    TrialGradient,
    Done,
}

/// The search of [`minimize_bounded`] as a state machine that asks for each value and
/// gradient ([`BoundedSearch::request`]) instead of calling f: a caller can step many
/// searches together and evaluate their points in one batch (UCB's restarts, whose
/// posterior variances are then one blocked triangular solve). Driven to the end it
/// takes exactly the steps of [`minimize_objective_bounded`], which drives it.
#[derive(Clone, Debug)]
pub struct BoundedSearch {
    lower: Vec<f64>,
    upper: Vec<f64>,
    options: BoundedOptions,
    phase: Phase,
    /// The current point, its value and gradient.
    x: Vec<f64>,
    fx: f64,
    g: Vec<f64>,
    memory: VecDeque<Pair>,
    iterations: usize,
    converged: bool,
    /// The line search: its direction, whether that is steepest descent, the step along
    /// it and the number of steps tried.
    direction: Vec<f64>,
    steepest: bool,
    step: f64,
    backtrack: usize,
    /// The trial point, its move from x, the first-order decrease g·moved and its value.
    trial: Vec<f64>,
    moved: Vec<f64>,
    decrease: f64,
    trial_value: f64,
}

impl BoundedSearch {
    /// A search from the projection of `x0` into the box.
    ///
    /// # Panics
    /// As [`minimize_bounded`].
    pub fn new(x0: &[f64], lower: &[f64], upper: &[f64], options: &BoundedOptions) -> Self {
        assert!(x0.len() == lower.len() && x0.len() == upper.len());
        assert!(lower.iter().zip(upper).all(|(l, u)| l <= u));
        BoundedSearch {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
            options: options.clone(),
            phase: Phase::StartValue,
            x: project(x0, lower, upper),
            fx: f64::INFINITY,
            g: Vec::new(),
            memory: VecDeque::with_capacity(options.memory),
            iterations: 0,
            converged: false,
            direction: Vec::new(),
            steepest: true,
            step: 1.0,
            backtrack: 0,
            trial: Vec::new(),
            moved: Vec::new(),
            decrease: 0.0,
            trial_value: f64::INFINITY,
        }
    }

    /// What the search needs next.
    pub fn request(&self) -> Request<'_> {
        match self.phase {
            Phase::StartValue => Request::Value(&self.x),
            Phase::TrialValue => Request::Value(&self.trial),
            Phase::StartGradient | Phase::TrialGradient => Request::Gradient,
            Phase::Done => Request::Done,
        }
    }

    /// f at the point of [`Request::Value`]; a non-finite value counts as +∞.
    ///
    /// # Panics
    /// If the search did not ask for a value.
    pub fn tell_value(&mut self, value: f64) {
        let value = if value.is_finite() {
            value
        } else {
            f64::INFINITY
        };
        match self.phase {
            Phase::StartValue if value.is_finite() => {
                self.fx = value;
                self.phase = Phase::StartGradient;
            }
            Phase::StartValue => self.phase = Phase::Done,
            Phase::TrialValue if value <= self.fx + ARMIJO * self.decrease => {
                self.trial_value = value;
                self.phase = Phase::TrialGradient;
            }
            Phase::TrialValue => {
                // The next step is the minimum of the parabola through f(x), the slope
                // and f(trial), kept within [0.1, 0.5] of this one (safeguarded quadratic
                // backtracking; Nocedal & Wright, Numerical Optimization, §3.5): a step
                // 30 times too long, as L-BFGS takes after a bound becomes active, costs
                // two or three evaluations instead of five halvings. The curvature is
                // positive since the Armijo test failed.
                let shrink = if value.is_finite() {
                    let curvature = value - self.fx - self.decrease;
                    (-self.decrease / (2.0 * curvature)).clamp(0.1, 0.5)
                } else {
                    0.5
                };
                self.retry(shrink);
            }
            phase => panic!("a value was told in phase {phase:?}"),
        }
    }

    /// ∇f at the point last valued, after [`Request::Gradient`]; a non-finite entry (or a
    /// wrong length) counts as a value of +∞ there.
    ///
    /// # Panics
    /// If the search did not ask for a gradient.
    pub fn tell_gradient(&mut self, gradient: Vec<f64>) {
        let valid = gradient.len() == self.x.len() && gradient.iter().all(|d| d.is_finite());
        match self.phase {
            Phase::StartGradient if valid => {
                self.g = gradient;
                self.next_iteration();
            }
            Phase::StartGradient => {
                self.fx = f64::INFINITY;
                self.phase = Phase::Done;
            }
            Phase::TrialGradient if valid => self.accept(gradient),
            Phase::TrialGradient => self.retry(0.5),
            phase => panic!("a gradient was told in phase {phase:?}"),
        }
    }

    /// The best point found (the current one).
    pub fn into_minimum(self) -> Minimum {
        Minimum {
            x: self.x,
            value: self.fx,
            iterations: self.iterations,
            converged: self.converged,
        }
    }

    fn finish(&mut self, converged: bool) {
        self.converged = converged;
        self.phase = Phase::Done;
    }

    /// Starts an iteration at x: stops on the budget or a small projected gradient, else
    /// chooses the direction and tries its first step.
    fn next_iteration(&mut self) {
        if self.iterations >= self.options.max_iterations {
            return self.finish(false);
        }
        let (x, g, lower, upper) = (&self.x, &self.g, &self.lower, &self.upper);
        let n = x.len();
        // A coordinate is held when it sits on a bound and −g points out of the box.
        let free: Vec<bool> = (0..n)
            .map(|i| {
                !((x[i] <= lower[i] && g[i] > 0.0) || (x[i] >= upper[i] && g[i] < 0.0))
                    && lower[i] < upper[i]
            })
            .collect();
        let projected_gradient: Vec<f64> = g
            .iter()
            .zip(&free)
            .map(|(&gi, &fr)| if fr { gi } else { 0.0 })
            .collect();
        if norm_inf(&projected_gradient) <= self.options.gradient_tolerance {
            return self.finish(true);
        }
        let mut d = lbfgs_direction(g, &free, &self.memory);
        for i in 0..n {
            if (x[i] <= lower[i] && d[i] < 0.0) || (x[i] >= upper[i] && d[i] > 0.0) {
                d[i] = 0.0;
            }
        }
        self.steepest = self.memory.is_empty();
        let slope = dot(&d, g);
        if !(slope < 0.0 && slope.is_finite()) {
            d = projected_gradient.iter().map(|v| -v).collect();
            self.memory.clear();
            self.steepest = true;
        }
        self.step = if self.steepest {
            (1.0 / norm_inf(&d)).min(1.0)
        } else {
            1.0
        };
        self.direction = d;
        self.backtrack = 0;
        self.try_step();
    }

    /// Shrinks the step after a failed trial and tries again.
    fn retry(&mut self, shrink: f64) {
        self.step *= shrink;
        self.backtrack += 1;
        self.try_step();
    }

    /// Tries the current step: asks for the trial point's value, or ends the line search
    /// when there is nothing left to try.
    fn try_step(&mut self) {
        while self.backtrack < MAX_BACKTRACKS {
            let trial: Vec<f64> = self
                .x
                .iter()
                .zip(&self.direction)
                .map(|(xi, di)| xi + self.step * di)
                .collect();
            let trial = project(&trial, &self.lower, &self.upper);
            let moved: Vec<f64> = trial.iter().zip(&self.x).map(|(a, b)| a - b).collect();
            if moved.iter().all(|&m| m == 0.0) {
                break;
            }
            let decrease = dot(&self.g, &moved);
            // The full step promises, to first order, no more than the relative tolerance:
            // the stop below would end the search right after it, and near the optimum
            // such a step is lost in f's rounding, where the Armijo test fails however
            // often it is shrunk (a likelihood fit at n = 200 spent 9 of its 34
            // evaluations so). Stop before evaluating it.
            if self.backtrack == 0
                && decrease < 0.0
                && -decrease <= self.options.relative_tolerance * self.fx.abs().max(1.0)
            {
                return self.finish(true);
            }
            if decrease < 0.0 {
                self.trial = trial;
                self.moved = moved;
                self.decrease = decrease;
                self.phase = Phase::TrialValue;
                return;
            }
            self.step *= 0.5;
            self.backtrack += 1;
        }
        // The line search failed: after steepest descent the search ends; else it starts
        // over from steepest descent.
        if self.steepest {
            return self.finish(false);
        }
        self.memory.clear();
        self.next_iteration();
    }

    /// Moves to the trial point, whose value passed the Armijo test, with its gradient.
    fn accept(&mut self, gt: Vec<f64>) {
        self.iterations += 1;
        let (ft, fx) = (self.trial_value, self.fx);
        let s = std::mem::take(&mut self.moved);
        let y: Vec<f64> = gt.iter().zip(&self.g).map(|(a, b)| a - b).collect();
        if dot(&s, &y) > f64::EPSILON * dot(&y, &y) && self.options.memory > 0 {
            if self.memory.len() == self.options.memory {
                self.memory.pop_front();
            }
            self.memory.push_back(Pair { s, y });
        }
        let small_decrease =
            fx - ft <= self.options.relative_tolerance * fx.abs().max(ft.abs()).max(1.0);
        self.x = std::mem::take(&mut self.trial);
        self.fx = ft;
        self.g = gt;
        if small_decrease {
            return self.finish(true);
        }
        self.next_iteration();
    }
}

#[cfg(test)]
mod tests;
