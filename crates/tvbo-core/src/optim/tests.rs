//! Tests of the bounded search: minima found, evaluation counts, the box kept.

use super::*;

fn rosenbrock(x: &[f64]) -> (f64, Vec<f64>) {
    let (a, b) = (x[0], x[1]);
    let v = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
    let g = vec![
        -2.0 * (1.0 - a) - 400.0 * a * (b - a * a),
        200.0 * (b - a * a),
    ];
    (v, g)
}

#[test]
fn finds_rosenbrock_minimum() {
    let options = BoundedOptions {
        max_iterations: 500,
        ..BoundedOptions::default()
    };
    let m = minimize_bounded(
        rosenbrock,
        &[-1.2, 1.0],
        &[-5.0, -5.0],
        &[5.0, 5.0],
        &options,
    );
    assert!(
        (m.x[0] - 1.0).abs() < 1e-4 && (m.x[1] - 1.0).abs() < 1e-4,
        "{m:?}"
    );
    assert!(m.converged);
}

#[test]
fn stops_when_the_next_step_promises_less_than_the_rounding_of_f() {
    // A smooth convex function whose value is rounded to 1e-9, as a likelihood computed
    // through a Cholesky factor is, with its exact gradient. Near the optimum a step
    // that promises a decrease below the rounding fails the Armijo test however often
    // it is halved; the search must stop on the promise instead of evaluating it (it
    // used to spend 1–3 evaluations more on these starts: 9 for 6 steps from 0.9).
    for x0 in [0.9, 0.7, -0.5, -0.9] {
        let mut evaluations = 0;
        let f = |x: &[f64]| {
            evaluations += 1;
            let value: f64 = 100.0
                + x.iter()
                    .map(|a| (3.0 * (a - 0.3)).cosh() + (a - 0.3).powi(4))
                    .sum::<f64>();
            let gradient = x
                .iter()
                .map(|a| 3.0 * (3.0 * (a - 0.3)).sinh() + 4.0 * (a - 0.3).powi(3))
                .collect();
            ((value / 1e-9).round() * 1e-9, gradient)
        };
        let options = BoundedOptions {
            gradient_tolerance: 0.0,
            relative_tolerance: 1e-9,
            ..BoundedOptions::default()
        };
        let m = minimize_bounded(f, &[x0, -x0 / 2.0], &[-1.0; 2], &[1.0; 2], &options);
        assert!(m.converged, "{m:?}");
        assert!(m.x.iter().all(|a| (a - 0.3).abs() < 1e-3), "{m:?}");
        assert_eq!(evaluations, m.iterations + 1, "from {x0}: {m:?}");
    }
}

#[test]
fn a_step_made_too_long_by_a_bound_is_shrunk_by_interpolation() {
    // Rosenbrock in [−0.5, 0.5]²: once x₀ reaches its bound, L-BFGS's steps along the
    // face overshoot many times over. Halving took 21 evaluations to the optimum on
    // the face; interpolating the failed step takes 13.
    let mut evaluations = 0;
    let m = minimize_bounded(
        |x: &[f64]| {
            evaluations += 1;
            rosenbrock(x)
        },
        &[0.0, 0.0],
        &[-0.5; 2],
        &[0.5; 2],
        &BoundedOptions::default(),
    );
    assert!(m.converged, "{m:?}");
    assert_eq!(m.x[0], 0.5);
    assert!((m.x[1] - 0.25).abs() < 1e-6, "{m:?}");
    assert!(evaluations <= 15, "{evaluations} evaluations");
}

/// Rosenbrock as an [`Objective`] that counts its values and gradients.
struct CountedRosenbrock {
    at: Vec<f64>,
    values: usize,
    gradients: usize,
}

impl Objective for CountedRosenbrock {
    fn value(&mut self, x: &[f64]) -> f64 {
        self.values += 1;
        self.at = x.to_vec();
        rosenbrock(x).0
    }

    fn gradient(&mut self) -> Vec<f64> {
        self.gradients += 1;
        rosenbrock(&self.at).1
    }
}

#[test]
fn the_gradient_is_asked_only_at_the_start_and_at_accepted_steps() {
    // The same search as with value and gradient together (the same points, bit for
    // bit), with one gradient per accepted step plus the start's, and none at the
    // trial points the line search rejects.
    for (x0, lower, upper) in [
        ([-1.2, 1.0], [-5.0; 2], [5.0; 2]),
        ([0.0, 0.0], [-0.5; 2], [0.5; 2]),
    ] {
        let mut counted = CountedRosenbrock {
            at: Vec::new(),
            values: 0,
            gradients: 0,
        };
        let options = BoundedOptions {
            max_iterations: 500,
            ..BoundedOptions::default()
        };
        let lazy = minimize_objective_bounded(&mut counted, &x0, &lower, &upper, &options);
        let joint = minimize_bounded(rosenbrock, &x0, &lower, &upper, &options);
        assert_eq!(lazy, joint);
        assert!(lazy.converged, "{lazy:?}");
        assert_eq!(counted.gradients, lazy.iterations + 1, "{lazy:?}");
        assert!(counted.values > counted.gradients, "no step was rejected");
    }
}

#[test]
fn quadratic_with_optimum_outside_ends_on_face() {
    // Minimum at (2, 0.3, −4); box [0,1]^3 → (1, 0.3, 0) with gradients pointing out.
    let centre = [2.0, 0.3, -4.0];
    let f = |x: &[f64]| {
        let v = x.iter().zip(&centre).map(|(a, c)| (a - c).powi(2)).sum();
        let g = x.iter().zip(&centre).map(|(a, c)| 2.0 * (a - c)).collect();
        (v, g)
    };
    let m = minimize_bounded(
        f,
        &[0.5, 0.5, 0.5],
        &[0.0; 3],
        &[1.0; 3],
        &BoundedOptions::default(),
    );
    assert_eq!(m.x[0], 1.0);
    assert!((m.x[1] - 0.3).abs() < 1e-6);
    assert_eq!(m.x[2], 0.0);
    let (_, g) = f(&m.x);
    assert!(g[0] < 0.0 && g[1].abs() < 1e-6 && g[2] > 0.0);
}

#[test]
fn iterates_never_leave_the_box() {
    let lower = [-0.5, 0.2, 0.0];
    let upper = [0.5, 0.9, 0.0];
    let mut seen = Vec::new();
    let f = |x: &[f64]| {
        seen.push(x.to_vec());
        let v = (x[0] + 3.0).powi(4) + (x[1] * 5.0).sin() * 3.0 + x[2];
        (
            v,
            vec![4.0 * (x[0] + 3.0).powi(3), 15.0 * (x[1] * 5.0).cos(), 1.0],
        )
    };
    let m = minimize_bounded(
        f,
        &[7.0, -3.0, 2.0],
        &lower,
        &upper,
        &BoundedOptions::default(),
    );
    assert!(!seen.is_empty());
    for p in &seen {
        for i in 0..3 {
            assert!(p[i] >= lower[i] && p[i] <= upper[i], "{p:?}");
        }
    }
    assert_eq!(m.x[0], -0.5);
}

#[test]
fn never_worse_than_start_and_backs_off_from_nan() {
    let f = |x: &[f64]| {
        if x[0] > 0.3 {
            (f64::NAN, vec![f64::NAN])
        } else {
            (-x[0], vec![-1.0])
        }
    };
    let m = minimize_bounded(f, &[0.0], &[0.0], &[1.0], &BoundedOptions::default());
    assert!(m.value <= 0.0);
    assert!(m.x[0] <= 0.3 && m.x[0] > 0.2, "{m:?}");
    let start_inf = minimize_bounded(
        |_: &[f64]| (f64::INFINITY, vec![0.0]),
        &[2.0],
        &[0.0],
        &[1.0],
        &BoundedOptions::default(),
    );
    assert_eq!(start_inf.x, vec![1.0]);
    assert!(!start_inf.converged);
}

#[test]
fn empty_problem_converges() {
    let m = minimize_bounded(
        |_: &[f64]| (1.0, vec![]),
        &[],
        &[],
        &[],
        &BoundedOptions::default(),
    );
    assert!(m.converged && m.x.is_empty() && m.value == 1.0);
}
