//! Tests of the acquisition: β schedules, the UCB maximiser (against raw samples and brute
//! force, with fixed and categorical coordinates), the parallel pieces.

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
        lengthscale_ratios: Default::default(),
        level: None,
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

/// Work run beside the refinements runs once, on any number of threads, and leaves the
/// maximiser as it is without it.
#[test]
fn work_beside_the_refinements_runs_once_and_changes_nothing() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let gp = random_gp(60, 3, &mut rng);
    let options = AcquisitionOptions::default();
    let alone = maximize_ucb_on(
        &gp,
        2.0,
        25.0,
        &options,
        &[],
        &1,
        &mut ChaCha8Rng::seed_from_u64(4),
    );
    for threads in [1, 2, 3] {
        let runs = AtomicUsize::new(0);
        let beside = || {
            runs.fetch_add(1, Ordering::Relaxed);
        };
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let found = maximize_ucb_beside(
            &gp,
            2.0,
            25.0,
            &options,
            &[],
            &threads,
            &mut rng,
            Some(&beside),
        );
        assert_eq!(found, alone);
        assert_eq!(runs.load(Ordering::Relaxed), 1);
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
        lengthscale_ratios: Default::default(),
        level: None,
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
