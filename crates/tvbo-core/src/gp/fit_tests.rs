//! Tests of the fit: the likelihood and its gradient against a dense formula and finite
//! differences, the fit against the truth and the guard of a warm start.

use super::*;
use crate::domain::hyperpriors::HyperpriorSet;
use crate::gp::categories::Categories;
use crate::gp::kernel::KernelKind;
use crate::gp::lengthscales::LengthscaleRatios;
use crate::gp::model::Gp;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn random_inputs(n: usize, dim: usize, rng: &mut ChaCha8Rng) -> (Vec<Vec<f64>>, Vec<f64>) {
    let xs = (0..n)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect();
    let ts = (0..n).map(|_| rng.random::<f64>() * 50.0).collect();
    (xs, ts)
}

#[test]
fn gradient_matches_finite_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let hyper = Hyperparameters {
        signal_variance: 1.3,
        spatial_lengthscale: 0.35,
        temporal_lengthscale: 12.0,
        noise_variance: 0.08,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    };
    let temporals = [
        None,
        Some(KernelKind::Matern12),
        Some(KernelKind::Matern32),
        Some(KernelKind::Matern52),
        Some(KernelKind::Rbf),
    ];
    let fixeds = [
        Fixed::default(),
        Fixed {
            temporal_lengthscale: Some(12.0),
            noise_variance: Some(0.08),
        },
    ];
    for spatial in KernelKind::ALL {
        for temporal in temporals {
            for fixed in fixeds {
                let spec = KernelSpec::new(spatial, temporal);
                let (xs, ts) = random_inputs(20, 2, &mut ChaCha8Rng::seed_from_u64(4));
                let ys: Vec<f64> = (0..20).map(|_| standard_normal(&mut rng)).collect();
                let (_, grad) =
                    log_marginal_likelihood(spec, &hyper, &fixed, &xs, &ts, &ys).unwrap();
                let layout = Layout::new(spec, &fixed, None, false);
                assert_eq!(grad.len(), layout.len());
                let theta = layout.to_log(&hyper);
                let h = 1e-6;
                for j in 0..theta.len() {
                    let lml_at = |delta: f64| {
                        let mut t = theta.clone();
                        t[j] += delta;
                        let hp = layout.hyper_from_log(&t, &hyper);
                        log_marginal_likelihood(spec, &hp, &fixed, &xs, &ts, &ys)
                            .unwrap()
                            .0
                    };
                    let fd = (lml_at(h) - lml_at(-h)) / (2.0 * h);
                    assert!(
                        (fd - grad[j]).abs() <= 1e-5 * fd.abs().max(1.0),
                        "{spec:?} {fixed:?} coordinate {j}: {fd} vs {}",
                        grad[j]
                    );
                }
            }
        }
    }
}

/// Inputs with a continuous coordinate, a categorical one of 3 choices, another
/// continuous one and a categorical one of 2 (cell centres).
fn mixed_inputs(n: usize, rng: &mut ChaCha8Rng) -> (Vec<Vec<f64>>, Vec<f64>) {
    let (mut xs, ts) = random_inputs(n, 4, rng);
    for x in &mut xs {
        x[1] = (rng.random_range(0..3) as f64 + 0.5) / 3.0;
        x[3] = (rng.random_range(0..2) as f64 + 0.5) / 2.0;
    }
    (xs, ts)
}

/// Hyperparameters of the tests over [`mixed_inputs`].
fn mixed_hyperparameters() -> Hyperparameters {
    Hyperparameters {
        signal_variance: 1.2,
        spatial_lengthscale: 0.4,
        temporal_lengthscale: 15.0,
        noise_variance: 0.05,
        categorical_lengthscale: 0.7,
        lengthscale_ratios: Default::default(),
        level: None,
    }
}

/// With categorical inputs: the kernel is λ k_S(continuous distance / l_S) e^{−h/l_C}
/// k_T, positive definite; the likelihood matches the dense formula, and its gradient
/// (ln l_C included) finite differences, the log posterior's too.
#[test]
fn mixed_inputs_likelihood_and_gradient_match_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let categories = Categories::new(&[0, 3, 0, 2]);
    let hyper = mixed_hyperparameters();
    for temporal in [None, Some(KernelKind::Matern32)] {
        let spec = KernelSpec::new(KernelKind::Matern52, temporal).with_categories(categories);
        let (xs, ts) = mixed_inputs(24, &mut rng);
        let ys: Vec<f64> = (0..24).map(|_| standard_normal(&mut rng)).collect();
        let gp = Gp::new(spec, hyper, 4, xs.clone(), ts.clone(), ys.clone()).unwrap();
        let explicit = |i: usize, j: usize| {
            let (a, b) = (&xs[i], &xs[j]);
            let r = ((a[0] - b[0]).powi(2) + (a[2] - b[2]).powi(2)).sqrt() / 0.4;
            let h = f64::from(u8::from(a[1] != b[1]) + u8::from(a[3] != b[3]));
            let time = temporal.map_or(1.0, |k| k.correlation((ts[i] - ts[j]).abs() / 15.0));
            1.2 * KernelKind::Matern52.correlation(r) * (-h / 0.7).exp() * time
        };
        let k = DMatrix::from_fn(24, 24, |i, j| {
            assert!((gp.kernel(&xs[i], ts[i], &xs[j], ts[j]) - explicit(i, j)).abs() < 1e-12);
            explicit(i, j) + if i == j { hyper.noise_variance } else { 0.0 }
        });
        assert!(k.clone().symmetric_eigenvalues().min() > 0.0);
        let (lml, grad) =
            log_marginal_likelihood(spec, &hyper, &Fixed::default(), &xs, &ts, &ys).unwrap();
        let y = nalgebra::DVector::from_vec(ys.clone());
        let expected = -0.5 * y.dot(&(k.clone().try_inverse().unwrap() * &y))
            - 0.5 * k.determinant().ln()
            - 12.0 * (2.0 * std::f64::consts::PI).ln();
        assert!((lml - expected).abs() < 1e-9, "{lml} vs {expected}");
        let layout = Layout::new(spec, &Fixed::default(), None, false);
        assert!(layout.categorical && grad.len() == layout.len());
        let theta = layout.to_log(&hyper);
        let pairs = Pairs::new(spec, layout, &xs, &ts);
        let priors = HyperpriorSet::robust(2, true, ts.iter().copied());
        assert!(priors.categorical_lengthscale.is_some());
        let mut objective = NegativeLogPosterior {
            spec,
            layout,
            pairs: &pairs,
            ys: &ys,
            base: hyper,
            priors: layout.priors(&priors),
            workspace: Workspace::new(&pairs, layout),
            valued: None,
        };
        objective.value(&theta);
        let posterior_gradient = objective.gradient();
        for j in 0..theta.len() {
            let at = |delta: f64, objective: &mut NegativeLogPosterior<'_>| {
                let mut t = theta.clone();
                t[j] += delta;
                let hp = layout.hyper_from_log(&t, &hyper);
                let lml = log_marginal_likelihood(spec, &hp, &Fixed::default(), &xs, &ts, &ys)
                    .unwrap()
                    .0;
                (lml, objective.value(&t))
            };
            let ((l1, p1), (l0, p0)) = (at(1e-6, &mut objective), at(-1e-6, &mut objective));
            let (fd, fd_posterior) = ((l1 - l0) / 2e-6, (p1 - p0) / 2e-6);
            assert!(
                (fd - grad[j]).abs() <= 1e-5 * fd.abs().max(1.0),
                "{j}: {fd} vs {}",
                grad[j]
            );
            assert!(
                (fd_posterior - posterior_gradient[j]).abs() <= 1e-5 * fd_posterior.abs().max(1.0),
                "{j}: {fd_posterior} vs {}",
                posterior_gradient[j]
            );
        }
    }
}

#[test]
fn likelihood_matches_dense_formula() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let spec = KernelSpec::default();
    let hyper = Hyperparameters::default();
    let (xs, ts) = random_inputs(15, 3, &mut rng);
    let ys: Vec<f64> = (0..15).map(|_| standard_normal(&mut rng)).collect();
    let (lml, _) = log_marginal_likelihood(spec, &hyper, &Fixed::default(), &xs, &ts, &ys).unwrap();
    let gp = Gp::new(spec, hyper, 3, xs.clone(), ts.clone(), ys.clone()).unwrap();
    let k = DMatrix::from_fn(15, 15, |i, j| {
        gp.kernel(&xs[i], ts[i], &xs[j], ts[j]) + if i == j { hyper.noise_variance } else { 0.0 }
    });
    let y = nalgebra::DVector::from_vec(ys);
    let expected = -0.5 * y.dot(&(k.clone().try_inverse().unwrap() * &y))
        - 0.5 * k.determinant().ln()
        - 7.5 * (2.0 * std::f64::consts::PI).ln();
    assert!((lml - expected).abs() < 1e-9, "{lml} vs {expected}");
}

fn sample_gp(
    spec: KernelSpec,
    truth: &Hyperparameters,
    n: usize,
    dim: usize,
    rng: &mut ChaCha8Rng,
) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let (xs, ts) = random_inputs(n, dim, rng);
    let gp = Gp::new(spec, *truth, dim, xs.clone(), ts.clone(), vec![0.0; n]).unwrap();
    let l = gp.cholesky_factor();
    let z = nalgebra::DVector::from_iterator(n, (0..n).map(|_| standard_normal(rng)));
    let ys = (l * z).iter().copied().collect();
    (xs, ts, ys)
}

#[test]
fn fit_beats_true_hyperparameters() {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let truth = Hyperparameters {
        signal_variance: 1.0,
        spatial_lengthscale: 0.25,
        temporal_lengthscale: 20.0,
        noise_variance: 0.01,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    };
    for spec in [
        KernelSpec::default(),
        KernelSpec::new(KernelKind::Rbf, None),
    ] {
        let (xs, ts, ys) = sample_gp(spec, &truth, 60, 2, &mut rng);
        // The global search: the default start plus quasi-random restarts.
        let options = FitOptions {
            restarts: 3,
            ..FitOptions::default()
        };
        let fitted =
            fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::Default, &options).unwrap();
        let none = Fixed::default();
        let lml_fit = log_marginal_likelihood(spec, &fitted, &none, &xs, &ts, &ys)
            .unwrap()
            .0;
        let lml_true = log_marginal_likelihood(spec, &truth, &none, &xs, &ts, &ys)
            .unwrap()
            .0;
        assert!(
            lml_fit >= lml_true - 1e-9,
            "{spec:?}: {lml_fit} < {lml_true}"
        );
        let b = HyperBounds::default();
        assert!(fitted.signal_variance >= b.signal_variance.0);
        assert!(fitted.noise_variance >= b.noise_variance.0);
        assert!(fitted.spatial_lengthscale <= b.spatial_lengthscale.1);
    }
}

/// n points (d = 2) of a GP with moderate hyperparameters, the data of the start tests.
fn moderate_sample(n: usize) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let truth = Hyperparameters {
        signal_variance: 1.0,
        spatial_lengthscale: 0.3,
        temporal_lengthscale: 40.0,
        noise_variance: 0.02,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    };
    let spec = KernelSpec::default();
    sample_gp(spec, &truth, n, 2, &mut ChaCha8Rng::seed_from_u64(5))
}

/// The log marginal likelihood of the data at h, nothing fixed.
fn lml_of<'a>(
    spec: KernelSpec,
    xs: &'a [Vec<f64>],
    ts: &'a [f64],
    ys: &'a [f64],
) -> impl Fn(&Hyperparameters) -> f64 + 'a {
    move |h| {
        log_marginal_likelihood(spec, h, &Fixed::default(), xs, ts, ys)
            .unwrap()
            .0
    }
}

#[test]
fn the_default_fit_is_a_local_search_from_the_default_start() {
    let spec = KernelSpec::default();
    let (xs, ts, ys) = moderate_sample(40);
    let fitted = fit_hyperparameters(
        spec,
        &xs,
        &ts,
        &ys,
        SearchStart::Default,
        &FitOptions::default(),
    )
    .expect("fit");
    let start = default_start(&ts, &HyperBounds::default());
    assert_eq!(
        fitted,
        fit_hyperparameters(
            spec,
            &xs,
            &ts,
            &ys,
            SearchStart::At(&start),
            &FitOptions::default()
        )
        .unwrap(),
        "no start given means the default start"
    );
    let lml = lml_of(spec, &xs, &ts, &ys);
    assert!(lml(&fitted) > lml(&start));
    // A local maximum within the box: no coordinate step in log space that stays in
    // the box improves the likelihood by more than the optimiser's tolerance allows.
    let layout = Layout::new(spec, &Fixed::default(), None, false);
    let theta = layout.to_log(&fitted);
    let (lower, upper) = layout.log_bounds(&HyperBounds::default());
    for k in 0..theta.len() {
        for step in [-1e-3, 1e-3] {
            let mut moved = theta.clone();
            moved[k] += step;
            if moved[k] < lower[k] || moved[k] > upper[k] {
                continue;
            }
            let h = layout.hyper_from_log(&moved, &fitted);
            assert!(
                lml(&h) <= lml(&fitted) + 1e-6,
                "coordinate {k}, step {step}: {} > {}",
                lml(&h),
                lml(&fitted)
            );
        }
    }
}

#[test]
fn a_warm_start_is_kept_when_at_least_as_likely_as_the_default_start() {
    let spec = KernelSpec::default();
    let (xs, ts, ys) = moderate_sample(41);
    let options = FitOptions::default();
    // The fit of the first 40 points, as a session's previous suggest left it.
    let previous = fit_hyperparameters(
        spec,
        &xs[..40],
        &ts[..40],
        &ys[..40],
        SearchStart::Default,
        &options,
    )
    .unwrap();
    let warm = fit_hyperparameters(
        spec,
        &xs,
        &ts,
        &ys,
        SearchStart::Previous(&previous),
        &options,
    )
    .unwrap();
    let at_previous =
        fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::At(&previous), &options).unwrap();
    assert_eq!(warm, at_previous, "the guard keeps the warm search");
    let lml = lml_of(spec, &xs, &ts, &ys);
    let fresh = fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::Default, &options).unwrap();
    assert_ne!(
        at_previous, fresh,
        "the two searches must end apart to be told apart"
    );
    let start = default_start(&ts, &HyperBounds::default());
    assert!(lml(&warm) >= lml(&start));
    // One more point moves the maximum a little: both searches find the same one.
    assert!((lml(&warm) - lml(&fresh)).abs() < 1e-6 * lml(&fresh).abs().max(1.0));
}

#[test]
fn a_warm_start_less_likely_than_the_default_start_is_refitted_from_it() {
    let spec = KernelSpec::default();
    let (xs, ts, ys) = moderate_sample(40);
    let options = FitOptions {
        max_iterations: 2,
        ..FitOptions::default()
    };
    // A stale start far from the data's maximum, and a search too short to leave it:
    // its end is less likely than the default start.
    let stale = Hyperparameters {
        signal_variance: 0.05,
        spatial_lengthscale: 8.0,
        temporal_lengthscale: 0.2,
        noise_variance: 1e-4,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    };
    let lml = lml_of(spec, &xs, &ts, &ys);
    let from_stale =
        fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::At(&stale), &options).unwrap();
    let start = default_start(&ts, &HyperBounds::default());
    assert!(lml(&from_stale) < lml(&start), "the case this test needs");
    let guarded =
        fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::Previous(&stale), &options).unwrap();
    let fresh = fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::Default, &options).unwrap();
    assert_eq!(guarded, fresh);
}

#[test]
fn fit_is_deterministic_and_respects_fixed() {
    let truth = Hyperparameters {
        signal_variance: 2.0,
        spatial_lengthscale: 0.4,
        temporal_lengthscale: 30.0,
        noise_variance: 0.05,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    };
    let spec = KernelSpec::default();
    let (xs, ts, ys) = sample_gp(spec, &truth, 30, 3, &mut ChaCha8Rng::seed_from_u64(2));
    let fit = |restart_seed| {
        let options = FitOptions {
            restarts: 3,
            restart_seed,
            fixed: Fixed {
                temporal_lengthscale: Some(17.0),
                noise_variance: None,
            },
            ..FitOptions::default()
        };
        fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::At(&truth), &options).unwrap()
    };
    let a = fit(1);
    assert_eq!(a, fit(1));
    assert_eq!(a.temporal_lengthscale, 17.0);
}

#[test]
fn tiny_datasets_return_the_start() {
    let spec = KernelSpec::default();
    let start = Hyperparameters::default();
    let out = fit_hyperparameters(
        spec,
        &[vec![0.5]],
        &[0.0],
        &[1.0],
        SearchStart::At(&start),
        &FitOptions::default(),
    )
    .unwrap();
    assert_eq!(out, start);
    let out = fit_hyperparameters(
        spec,
        &[],
        &[],
        &[],
        SearchStart::Default,
        &FitOptions::default(),
    )
    .unwrap();
    assert_eq!(out.temporal_lengthscale, 1.0);
    assert!(
        fit_hyperparameters(
            spec,
            &[vec![0.5]],
            &[],
            &[1.0],
            SearchStart::Default,
            &FitOptions::default()
        )
        .is_err()
    );
}

/// The log posterior's gradient (the LML's plus the priors' slopes) against central
/// differences of its value, for every layout of free hyperparameters.
#[test]
fn log_posterior_gradient_matches_finite_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let hyper = Hyperparameters {
        signal_variance: 0.7,
        spatial_lengthscale: 0.6,
        temporal_lengthscale: 30.0,
        noise_variance: 0.02,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    };
    let priors = HyperpriorSet::robust(3, false, [0.0, 50.0]);
    let fixeds = [
        Fixed::default(),
        Fixed {
            temporal_lengthscale: Some(30.0),
            noise_variance: None,
        },
        Fixed {
            temporal_lengthscale: None,
            noise_variance: Some(0.02),
        },
    ];
    for temporal in [None, Some(KernelKind::Matern32)] {
        for fixed in fixeds {
            let spec = KernelSpec::new(KernelKind::Matern52, temporal);
            let (xs, ts) = random_inputs(25, 3, &mut rng);
            let ys: Vec<f64> = (0..25).map(|_| standard_normal(&mut rng)).collect();
            let layout = Layout::new(spec, &fixed, None, false);
            let pairs = Pairs::new(spec, layout, &xs, &ts);
            let base = apply_fixed(spec, &hyper, &fixed);
            let mut objective = NegativeLogPosterior {
                spec,
                layout,
                pairs: &pairs,
                ys: &ys,
                base,
                priors: layout.priors(&priors),
                workspace: Workspace::new(&pairs, layout),
                valued: None,
            };
            let theta = layout.to_log(&base);
            let value = objective.value(&theta);
            let grad = objective.gradient();
            assert_eq!(grad.len(), layout.len());
            // The value is −LML minus the priors' log densities.
            let (lml, _) = log_marginal_likelihood(spec, &base, &fixed, &xs, &ts, &ys).unwrap();
            let log_prior: f64 = layout
                .priors(&priors)
                .iter()
                .zip(&theta)
                .map(|(p, &u)| p.map_or(0.0, |p| p.log_density(u)))
                .sum();
            assert!((value - (-lml - log_prior)).abs() < 1e-9);
            for j in 0..theta.len() {
                let mut at = |delta: f64| {
                    let mut t = theta.clone();
                    t[j] += delta;
                    objective.value(&t)
                };
                let fd = (at(1e-6) - at(-1e-6)) / 2e-6;
                assert!(
                    (fd - grad[j]).abs() <= 1e-5 * fd.abs().max(1.0),
                    "{temporal:?} {fixed:?} coordinate {j}: {fd} vs {}",
                    grad[j]
                );
            }
        }
    }
}

/// 80 points within 0.01 of a corner of the 5-d cube whose standardised values vary
/// with time alone (sin(t/8) plus noise), t = 0, 1, …, 79: the data say nothing about
/// the spatial lengthscale.
fn corner_data(seed: u64) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let xs: Vec<Vec<f64>> = (0..80)
        .map(|_| (0..5).map(|_| 0.01 * rng.random::<f64>()).collect())
        .collect();
    let ts: Vec<f64> = (0..80).map(f64::from).collect();
    let raw: Vec<f64> = ts
        .iter()
        .map(|t| (t / 8.0).sin() + 0.05 * standard_normal(&mut rng))
        .collect();
    let mean = raw.iter().sum::<f64>() / 80.0;
    let sd = (raw.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / 80.0).sqrt();
    let ys = raw.iter().map(|y| (y - mean) / sd).collect();
    (xs, ts, ys)
}

/// The corner case of the lengthscale-at-bound loop, at the fit: the exact likelihood
/// puts l_S at its upper bound on some seeds (the model goes flat in space), the
/// posterior under the robust priors on none, and its l_S is then near the prior's mode,
/// not at the top.
#[test]
fn the_robust_fit_keeps_the_spatial_lengthscale_off_its_bounds_on_clustered_data() {
    let spec = KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32));
    let top = SPATIAL_LENGTHSCALE_BOUNDS.1;
    let mut exact_at_top = 0;
    for seed in 0..10 {
        let (xs, ts, ys) = corner_data(seed);
        let exact = fit_with_report(
            spec,
            &xs,
            &ts,
            &ys,
            SearchStart::Default,
            &FitOptions::default(),
        )
        .unwrap();
        if exact.0.spatial_lengthscale >= top * (1.0 - 1e-6) {
            exact_at_top += 1;
            assert!(exact.1.flat_in_space(), "seed {seed}: {:?}", exact.1);
        }
        let options = FitOptions {
            priors: Some(HyperpriorSet::robust(5, false, [0.0, 79.0])),
            guard: true,
            ..FitOptions::default()
        };
        let (robust, report) =
            fit_with_report(spec, &xs, &ts, &ys, SearchStart::Default, &options).unwrap();
        assert!(
            report.at_bound.is_empty(),
            "seed {seed}: {robust:?} {report:?}"
        );
        assert!(
            robust.spatial_lengthscale < 2.0,
            "seed {seed}: l_S {}",
            robust.spatial_lengthscale
        );
    }
    assert!(
        exact_at_top >= 3,
        "exact fits at the top: {exact_at_top} of 10"
    );
}

/// The guard: a fit that ends at a bound searches again from the second start and keeps
/// the better end; without priors and guard nothing of this runs (the report says only
/// where the search ended).
#[test]
fn the_guard_searches_again_only_from_a_fit_at_a_bound() {
    let spec = KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32));
    let (xs, ts, ys) = corner_data(1);
    let unguarded = fit_with_report(
        spec,
        &xs,
        &ts,
        &ys,
        SearchStart::Default,
        &FitOptions::default(),
    )
    .unwrap();
    assert!(!unguarded.1.second_start);
    let guarded_options = FitOptions {
        guard: true,
        ..FitOptions::default()
    };
    let guarded =
        fit_with_report(spec, &xs, &ts, &ys, SearchStart::Default, &guarded_options).unwrap();
    assert_eq!(
        guarded.1.second_start,
        unguarded.1.at_bound.iter().any(|b| b.is_lengthscale())
    );
    let lml = |h: &Hyperparameters| {
        log_marginal_likelihood(spec, h, &Fixed::default(), &xs, &ts, &ys)
            .unwrap()
            .0
    };
    assert!(lml(&guarded.0) >= lml(&unguarded.0) - 1e-9);
    // Spread-out data: no bound, no second search.
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (xs, ts) = random_inputs(30, 2, &mut rng);
    let ys: Vec<f64> = xs
        .iter()
        .zip(&ts)
        .map(|(x, t)| (6.0 * x[0]).sin() + x[1] + 0.02 * t + 0.1 * standard_normal(&mut rng))
        .collect();
    let (_, report) =
        fit_with_report(spec, &xs, &ts, &ys, SearchStart::Default, &guarded_options).unwrap();
    assert!(
        !report.second_start && report.at_bound.is_empty(),
        "{report:?}"
    );
}

/// The kernel matrix and its derivatives, filled for the widest vectors this CPU has,
/// are the portable build's bit for bit (every kind, with time and with categories).
#[test]
fn every_compiled_variant_of_the_kernel_fill_gives_the_same_bits() {
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let hyper = mixed_hyperparameters();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for spatial in KernelKind::ALL {
        for temporal in [None, Some(spatial)] {
            for categories in [Categories::default(), Categories::new(&[0, 3, 0, 2])] {
                let spec = KernelSpec::new(spatial, temporal).with_categories(categories);
                let (xs, ts) = mixed_inputs(37, &mut rng);
                let layout = Layout::new(spec, &Fixed::default(), None, false);
                let pairs = Pairs::new(spec, layout, &xs, &ts);
                let mut dispatched = Workspace::new(&pairs, layout);
                let mut portable = Workspace::new(&pairs, layout);
                let spatial = (&pairs.spatial[..], 1.0 / hyper.spatial_lengthscale);
                fill_kernel(&mut dispatched, spec, &hyper, layout, &pairs, spatial);
                fill_kernel_loops(&mut portable, spec, &hyper, layout, &pairs, spatial);
                assert_eq!(bits(dispatched.k.as_slice()), bits(portable.k.as_slice()));
                assert_eq!(bits(&dispatched.d_ls), bits(&portable.d_ls), "{spec:?}");
                assert_eq!(bits(&dispatched.d_lt), bits(&portable.d_lt), "{spec:?}");
                assert_eq!(bits(&dispatched.d_lc), bits(&portable.d_lc), "{spec:?}");
            }
        }
    }
}

/// With a lengthscale per coordinate, l_d = l_S ρ_d: the likelihood matches the dense
/// formula with r² = Σ_d ((x_d − x'_d)/l_d)² written out, and its gradient (ln λ, each
/// ln l_d, ln l_T, ln l_C, ln σ²) and the log posterior's match finite differences; with
/// and without categorical coordinates and time.
#[test]
fn per_coordinate_likelihood_and_gradient_match_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(47);
    let ratios = LengthscaleRatios::new(&[0.6, 1.0, 2.2, 1.0]).unwrap();
    let hyper = Hyperparameters {
        lengthscale_ratios: ratios,
        ..mixed_hyperparameters()
    };
    for categories in [Categories::default(), Categories::new(&[0, 3, 0, 2])] {
        for temporal in [None, Some(KernelKind::Matern32)] {
            let spec = KernelSpec::new(KernelKind::Matern52, temporal).with_categories(categories);
            let (xs, ts) = mixed_inputs(22, &mut rng);
            let ys: Vec<f64> = (0..22).map(|_| standard_normal(&mut rng)).collect();
            let explicit = |i: usize, j: usize| {
                let (a, b) = (&xs[i], &xs[j]);
                let (mut r2, mut h) = (0.0, 0.0);
                for d in 0..4 {
                    if categories.choices(d) > 0 {
                        h += f64::from(u8::from(a[d] != b[d]));
                    } else {
                        r2 += ((a[d] - b[d]) / (0.4 * ratios.get(d))).powi(2);
                    }
                }
                let time = temporal.map_or(1.0, |k| k.correlation((ts[i] - ts[j]).abs() / 15.0));
                1.2 * KernelKind::Matern52.correlation(r2.sqrt()) * (-h / 0.7).exp() * time
            };
            let k = DMatrix::from_fn(22, 22, |i, j| {
                explicit(i, j) + if i == j { hyper.noise_variance } else { 0.0 }
            });
            let (lml, grad) =
                log_marginal_likelihood(spec, &hyper, &Fixed::default(), &xs, &ts, &ys).unwrap();
            let y = nalgebra::DVector::from_vec(ys.clone());
            let expected = -0.5 * y.dot(&(k.clone().try_inverse().unwrap() * &y))
                - 0.5 * k.determinant().ln()
                - 11.0 * (2.0 * std::f64::consts::PI).ln();
            assert!((lml - expected).abs() < 1e-9, "{lml} vs {expected}");
            let layout = Layout::new(spec, &Fixed::default(), Some(4), false);
            let continuous = categories.continuous_dim(4);
            assert_eq!(layout.spatial(), continuous);
            assert_eq!(grad.len(), layout.len());
            let theta = layout.to_log(&hyper);
            let back = layout.hyper_from_log(&theta, &hyper);
            for d in 0..4 {
                let (l, l_back) = (
                    hyper.spatial_lengthscale * ratios.get(d),
                    back.spatial_lengthscale * back.lengthscale_ratios.get(d),
                );
                if categories.choices(d) == 0 {
                    assert!(
                        (l - l_back).abs() < 1e-12,
                        "coordinate {d}: {l} vs {l_back}"
                    );
                }
            }
            let pairs = Pairs::new(spec, layout, &xs, &ts);
            let priors =
                HyperpriorSet::robust(continuous, !categories.is_empty(), ts.iter().copied());
            let mut objective = NegativeLogPosterior {
                spec,
                layout,
                pairs: &pairs,
                ys: &ys,
                base: hyper,
                priors: layout.priors(&priors),
                workspace: Workspace::new(&pairs, layout),
                valued: None,
            };
            objective.value(&theta);
            let posterior_gradient = objective.gradient();
            for j in 0..theta.len() {
                let at = |delta: f64, objective: &mut NegativeLogPosterior<'_>| {
                    let mut t = theta.clone();
                    t[j] += delta;
                    let hp = layout.hyper_from_log(&t, &hyper);
                    let lml = log_marginal_likelihood(spec, &hp, &Fixed::default(), &xs, &ts, &ys)
                        .unwrap()
                        .0;
                    (lml, objective.value(&t))
                };
                let ((l1, p1), (l0, p0)) = (at(1e-6, &mut objective), at(-1e-6, &mut objective));
                let (fd, fd_posterior) = ((l1 - l0) / 2e-6, (p1 - p0) / 2e-6);
                assert!(
                    (fd - grad[j]).abs() <= 1e-5 * fd.abs().max(1.0),
                    "{spec:?} {j}: {fd} vs {}",
                    grad[j]
                );
                assert!(
                    (fd_posterior - posterior_gradient[j]).abs()
                        <= 1e-5 * fd_posterior.abs().max(1.0),
                    "{spec:?} {j}: {fd_posterior} vs {}",
                    posterior_gradient[j]
                );
            }
        }
    }
}

/// Five coordinates of which two matter (the value is a function of x_0 and x_1 alone):
/// the robust fit with a lengthscale per coordinate gives each of the three others one
/// at least three times the longer of the two that matter, and reports no bound hit
/// for them (a coordinate that does not matter is an answer, not a degenerate fit).
#[test]
fn per_coordinate_lengthscales_find_the_coordinates_that_matter() {
    for seed in 0..3 {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        let (xs, ts) = random_inputs(40, 5, &mut rng);
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| {
                (6.0 * x[0]).sin() + (x[1] - 0.4).powi(2) * 4.0 + 0.05 * standard_normal(&mut rng)
            })
            .collect();
        let mean = ys.iter().sum::<f64>() / 40.0;
        let sd = (ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / 40.0).sqrt();
        let ys: Vec<f64> = ys.iter().map(|y| (y - mean) / sd).collect();
        let spec = KernelSpec::new(KernelKind::Matern52, None);
        let options = FitOptions {
            priors: Some(HyperpriorSet::robust(5, false, ts.iter().copied())),
            guard: true,
            per_coordinate_lengthscales: true,
            ..FitOptions::default()
        };
        let (h, report) =
            fit_with_report(spec, &xs, &ts, &ys, SearchStart::Default, &options).unwrap();
        let l: Vec<f64> = (0..5)
            .map(|d| h.spatial_lengthscale * h.lengthscale_ratios.get(d))
            .collect();
        let matter = l[0].max(l[1]);
        for (d, &ld) in l.iter().enumerate().skip(2) {
            assert!(ld >= 3.0 * matter, "seed {seed}: l = {l:?}, coordinate {d}");
        }
        assert!(!report.flat_in_space(), "seed {seed}: {report:?} {l:?}");
        let isotropic = fit_with_report(
            spec,
            &xs,
            &ts,
            &ys,
            SearchStart::Default,
            &FitOptions {
                per_coordinate_lengthscales: false,
                ..options.clone()
            },
        )
        .unwrap()
        .0;
        assert!(isotropic.lengthscale_ratios.is_isotropic());
    }
}
