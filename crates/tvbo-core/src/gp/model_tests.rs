//! Tests of the GP: the posterior against a dense solve, the O(n²) updates against a
//! fresh factorisation, the input gradients against finite differences.

use super::*;
use crate::gp::Categories;
use crate::gp::kernel::KernelKind;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Every kind in space, with and without every kind in time, and two with a
/// categorical second coordinate of three choices.
fn specs() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for spatial in KernelKind::ALL {
        out.push(KernelSpec::new(spatial, None));
        for temporal in KernelKind::ALL {
            out.push(KernelSpec::new(spatial, Some(temporal)));
        }
    }
    let categories = crate::gp::Categories::new(&[0, 3]);
    out.push(KernelSpec::default().with_categories(categories));
    out.push(KernelSpec::new(KernelKind::Rbf, None).with_categories(categories));
    out
}

fn hyper() -> Hyperparameters {
    Hyperparameters {
        signal_variance: 1.7,
        spatial_lengthscale: 0.4,
        temporal_lengthscale: 5.0,
        noise_variance: 0.05,
        categorical_lengthscale: 1.0,
        lengthscale_ratios: Default::default(),
        level: None,
    }
}

/// [`hyper`] with a lengthscale per coordinate: l_d = 0.4 · (0.5, 1, 2.5).
fn per_coordinate() -> Hyperparameters {
    Hyperparameters {
        lengthscale_ratios: LengthscaleRatios::new(&[0.5, 1.0, 2.5]).unwrap(),
        ..hyper()
    }
}

type Data = (Vec<Vec<f64>>, Vec<f64>, Vec<f64>);

fn random_data(n: usize, dim: usize, rng: &mut ChaCha8Rng) -> Data {
    let xs: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
        .collect();
    let ts: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 20.0).collect();
    let ys: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
    (xs, ts, ys)
}

fn dense_kernel(gp: &Gp) -> DMatrix<f64> {
    let n = gp.len();
    DMatrix::from_fn(n, n, |i, j| {
        gp.kernel(&gp.xs()[i], gp.ts()[i], &gp.xs()[j], gp.ts()[j])
            + if i == j {
                gp.hyperparameters().noise_variance
            } else {
                0.0
            }
    })
}

#[test]
fn posterior_matches_dense_solve() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for spec in specs() {
        let dim = 3;
        // One case larger than the factorisation block size.
        let n = if spec == KernelSpec::default() {
            130
        } else {
            25
        };
        let (xs, ts, ys) = random_data(n, dim, &mut rng);
        let h = if n % 2 == 0 {
            hyper()
        } else {
            per_coordinate()
        };
        let gp = Gp::new(spec, h, dim, xs, ts, ys.clone()).unwrap();
        let kinv = dense_kernel(&gp).try_inverse().unwrap();
        let y = DVector::from_vec(ys);
        let alpha = &kinv * &y;
        assert!((&alpha - gp.alpha()).amax() < 1e-8);
        for _ in 0..10 {
            let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>()).collect();
            let t = rng.random::<f64>() * 25.0;
            let kx = DVector::from_iterator(
                gp.len(),
                (0..gp.len()).map(|i| gp.kernel(&x, t, &gp.xs()[i], gp.ts()[i])),
            );
            let mean = kx.dot(&alpha);
            let var = gp.hyperparameters().signal_variance - kx.dot(&(&kinv * &kx));
            let (m, v) = gp.predict(&x, t);
            assert!((m - mean).abs() < 1e-8, "{spec:?}");
            assert!((v - var.max(0.0)).abs() < 1e-8, "{spec:?}");
        }
    }
}

#[test]
fn kernel_columns_are_the_kernel_and_every_compiled_variant_the_same_bits() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    for spec in specs() {
        let dim = 3;
        let (mut xs, ts, ys) = random_data(37, dim, &mut rng);
        // Repeated choices, so that some pairs agree on the categorical coordinate.
        for x in &mut xs {
            x[1] = (x[1] * 3.0).floor() / 3.0 + 1.0 / 6.0;
        }
        let gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
        let n = gp.len();
        let x = vec![0.3, 0.5, 0.9];
        let observations = 4..n;
        let mut scratch = ColumnScratch::new(n, &spec);
        let (mut column, mut slope) = (vec![0.0; n], vec![0.0; n]);
        kernel_column(
            &gp,
            &x,
            6.0,
            observations.clone(),
            &mut column,
            &mut scratch,
            Some(&mut slope),
        );
        let (mut portable, mut portable_slope) = (vec![0.0; n], vec![0.0; n]);
        kernel_column_loops(
            &gp,
            &x,
            6.0,
            observations.clone(),
            &mut portable,
            &mut scratch,
            Some(&mut portable_slope),
        );
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&column), bits(&portable), "{spec:?}");
        assert_eq!(bits(&slope), bits(&portable_slope), "{spec:?}");
        for (q, i) in observations.enumerate() {
            let k = gp.kernel(&x, 6.0, &gp.xs()[i], gp.ts()[i]);
            assert!(
                (column[q] - k).abs() <= 1e-14 * k.abs().max(1e-300),
                "{spec:?}"
            );
        }
    }
}

#[test]
fn empty_gp_predicts_prior() {
    let gp = Gp::new(KernelSpec::default(), hyper(), 2, vec![], vec![], vec![]).unwrap();
    assert!(gp.is_empty());
    assert_eq!(gp.predict(&[0.3, 0.2], 1.0), (0.0, 1.7));
    let p = gp.predict_with_gradient(&[0.3, 0.2], 1.0);
    assert_eq!(p.variance, 1.7);
    assert_eq!(p.mean_gradient, vec![0.0, 0.0]);
    assert_eq!(gp.predict_many(&[vec![0.1, 0.1]], 0.0), vec![(0.0, 1.7)]);
}

#[test]
fn rejects_bad_input() {
    let spec = KernelSpec::default();
    assert!(matches!(
        Gp::new(spec, hyper(), 2, vec![vec![0.1]], vec![0.0], vec![1.0]),
        Err(GpError::DimensionMismatch {
            expected: 2,
            found: 1
        })
    ));
    assert!(matches!(
        Gp::new(spec, hyper(), 1, vec![vec![0.1]], vec![], vec![1.0]),
        Err(GpError::LengthMismatch { .. })
    ));
    assert!(matches!(
        Gp::new(spec, hyper(), 1, vec![vec![f64::NAN]], vec![0.0], vec![1.0]),
        Err(GpError::NonFinite)
    ));
    let mut bad = hyper();
    bad.spatial_lengthscale = 0.0;
    assert!(matches!(
        Gp::new(spec, bad, 1, vec![], vec![], vec![]),
        Err(GpError::InvalidHyperparameter { .. })
    ));
    let mut gp = Gp::new(spec, hyper(), 1, vec![vec![0.5]], vec![0.0], vec![1.0]).unwrap();
    assert!(matches!(
        gp.remove(1),
        Err(GpError::IndexOutOfRange { index: 1, len: 1 })
    ));
    assert!(gp.push(&[0.1, 0.2], 0.0, 0.0).is_err());
    assert!(gp.push(&[0.1], f64::INFINITY, 0.0).is_err());
    assert_eq!(gp.len(), 1);
}

fn assert_matches_fresh(gp: &Gp) {
    let fresh = Gp::new(
        gp.spec(),
        *gp.hyperparameters(),
        gp.dim(),
        gp.xs().to_vec(),
        gp.ts().to_vec(),
        gp.ys().to_vec(),
    )
    .unwrap();
    assert_eq!(
        gp.cholesky_factor().shape(),
        fresh.cholesky_factor().shape()
    );
    if !gp.is_empty() {
        assert!((gp.cholesky_factor() - fresh.cholesky_factor()).amax() < 1e-8);
        assert!((gp.alpha() - fresh.alpha()).amax() < 1e-8);
        // The kernel columns read the inputs by coordinate, kept beside them.
        let points = vec![vec![0.2; gp.dim()], vec![0.7; gp.dim()]];
        let means = gp.predict_mean_many(&points, 3.0);
        for (mean, fresh) in means.iter().zip(fresh.predict_mean_many(&points, 3.0)) {
            assert!((mean - fresh).abs() < 1e-8);
        }
    }
}

#[test]
fn push_and_remove_track_fresh_factorisation() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for spec in [
        KernelSpec::default(),
        KernelSpec::new(KernelKind::Rbf, None),
        KernelSpec::new(KernelKind::Matern12, Some(KernelKind::Rbf)),
    ] {
        let dim = 2;
        let (xs, ts, ys) = random_data(8, dim, &mut rng);
        let mut gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
        for _ in 0..80 {
            if gp.len() > 2 && rng.random::<f64>() < 0.45 {
                let i = rng.random_range(0..gp.len());
                gp.remove(i).unwrap();
            } else {
                let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>()).collect();
                gp.push(&x, rng.random::<f64>() * 30.0, rng.random::<f64>())
                    .unwrap();
            }
            assert_matches_fresh(&gp);
        }
        while !gp.is_empty() {
            gp.remove(0).unwrap();
            assert_matches_fresh(&gp);
        }
        gp.push(&[0.5, 0.5], 0.0, 1.0).unwrap();
        assert_matches_fresh(&gp);
    }
}

#[test]
fn duplicate_points_survive_with_jitter() {
    let h = Hyperparameters {
        noise_variance: 0.0,
        ..hyper()
    };
    let spec = KernelSpec::new(KernelKind::Rbf, None);
    let mut gp = Gp::new(spec, h, 1, vec![vec![0.5]], vec![0.0], vec![1.0]).unwrap();
    gp.push(&[0.5], 0.0, 1.0).unwrap();
    assert!(gp.jitter() > 0.0);
    assert_eq!(gp.len(), 2);
    let (m, v) = gp.predict(&[0.5], 0.0);
    assert!(m.is_finite() && v.is_finite());
}

#[test]
fn gradients_match_finite_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let h = 1e-6;
    for spec in specs() {
        let dim = 3;
        let (xs, ts, ys) = random_data(15, dim, &mut rng);
        for hyper in [hyper(), per_coordinate()] {
            let gp = Gp::new(spec, hyper, dim, xs.clone(), ts.clone(), ys.clone()).unwrap();
            for _ in 0..5 {
                let x: Vec<f64> = (0..dim).map(|_| 0.1 + 0.8 * rng.random::<f64>()).collect();
                let t = rng.random::<f64>() * 20.0;
                let p = gp.predict_with_gradient(&x, t);
                let (m, v) = gp.predict(&x, t);
                let (m2, g2) = gp.predict_mean_with_gradient(&x, t);
                assert!((m2 - m).abs() < 1e-12);
                for (a, b) in g2.iter().zip(&p.mean_gradient) {
                    assert!((a - b).abs() < 1e-12);
                }
                assert!((p.mean - m).abs() < 1e-12 && (p.variance - v).abs() < 1e-12);
                for j in 0..dim {
                    let mut xp = x.clone();
                    let mut xm = x.clone();
                    xp[j] += h;
                    xm[j] -= h;
                    let (mp, vp) = gp.predict(&xp, t);
                    let (mm, vm) = gp.predict(&xm, t);
                    let gm = (mp - mm) / (2.0 * h);
                    let gv = (vp - vm) / (2.0 * h);
                    assert!(
                        (gm - p.mean_gradient[j]).abs() < 1e-5 * (1.0 + gm.abs()),
                        "{spec:?} mean {gm} vs {}",
                        p.mean_gradient[j]
                    );
                    assert!(
                        (gv - p.variance_gradient[j]).abs() < 1e-5 * (1.0 + gv.abs()),
                        "{spec:?} var {gv} vs {}",
                        p.variance_gradient[j]
                    );
                }
            }
        }
    }
}

/// With lengthscale ratios the kernel is λ k_S(√Σ_d ((x_d − x'_d)/(l_S ρ_d))²) k_T,
/// written out here a coordinate at a time; the categorical coordinate keeps its
/// overlap factor whatever its ratio.
#[test]
fn per_coordinate_lengthscales_scale_each_distance() {
    let h = per_coordinate();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (xs, ts, ys) = random_data(12, 3, &mut rng);
    for spec in specs() {
        let gp = Gp::new(spec, h, 3, xs.clone(), ts.clone(), ys.clone()).unwrap();
        for i in 0..xs.len() {
            let (a, b) = (&xs[i], &xs[(i + 5) % xs.len()]);
            let (ta, tb) = (ts[i], ts[(i + 5) % xs.len()]);
            let mut squared = 0.0;
            let mut differ = 0.0;
            for d in 0..3 {
                if spec.categories.choices(d) > 0 {
                    differ += f64::from(u8::from(Categories::differ(a[d], b[d])));
                } else {
                    let l = h.spatial_lengthscale * h.lengthscale_ratios.get(d);
                    squared += ((a[d] - b[d]) / l).powi(2);
                }
            }
            let expected = h.signal_variance
                * spec.spatial.correlation(squared.sqrt())
                * (-differ / h.categorical_lengthscale).exp()
                * spec.temporal_correlation((ta - tb).abs() / h.temporal_lengthscale);
            let got = gp.kernel(a, ta, b, tb);
            assert!(
                (got - expected).abs() < 1e-12,
                "{spec:?}: {got} vs {expected}"
            );
        }
    }
    let wrong = Hyperparameters {
        lengthscale_ratios: LengthscaleRatios::new(&[1.0, 2.0]).unwrap(),
        ..hyper()
    };
    assert!(matches!(
        Gp::new(KernelSpec::default(), wrong, 3, xs, ts, ys),
        Err(GpError::DimensionMismatch { .. })
    ));
}

#[test]
fn gradient_at_a_data_point_is_finite() {
    let spec = KernelSpec::new(KernelKind::Matern12, None);
    let gp = Gp::new(spec, hyper(), 2, vec![vec![0.3, 0.3]], vec![0.0], vec![1.0]).unwrap();
    let p = gp.predict_with_gradient(&[0.3, 0.3], 0.0);
    assert!(p.mean_gradient.iter().all(|g| g.is_finite()));
    assert!(p.variance_gradient.iter().all(|g| g.is_finite()));
}

#[test]
fn predict_many_matches_predict() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for spec in specs() {
        let dim = 2;
        let (xs, ts, ys) = random_data(30, dim, &mut rng);
        let gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
        let (queries, _, _) = random_data(17, dim, &mut rng);
        let batch = gp.predict_many(&queries, 7.5);
        assert_eq!(batch.len(), queries.len());
        let means = gp.predict_mean_many(&queries, 7.5);
        assert_eq!(means, batch.iter().map(|(m, _)| *m).collect::<Vec<_>>());
        for (q, (m, v)) in queries.iter().zip(batch) {
            let (m2, v2) = gp.predict(q, 7.5);
            assert!((m - m2).abs() < 1e-12 && (v - v2).abs() < 1e-12);
        }
    }
}

#[test]
fn gradients_in_a_batch_match_those_one_at_a_time() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-10 * (1.0 + a.abs().max(b.abs()));
    for spec in specs() {
        let dim = 3;
        let (xs, ts, ys) = random_data(40, dim, &mut rng);
        let gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
        let (queries, _, _) = random_data(13, dim, &mut rng);
        let batch = gp.predict_with_gradient_many(&queries, 7.5);
        assert_eq!(batch.len(), queries.len());
        for (q, p) in queries.iter().zip(&batch) {
            let alone = gp.predict_with_gradient(q, 7.5);
            let (mean, variance) = gp.predict(q, 7.5);
            assert!(close(p.mean, alone.mean) && close(p.mean, mean), "{p:?}");
            assert!(close(p.variance, alone.variance) && close(p.variance, variance));
            for j in 0..dim {
                assert!(close(p.mean_gradient[j], alone.mean_gradient[j]), "{p:?}");
                assert!(close(p.variance_gradient[j], alone.variance_gradient[j]));
            }
        }
    }
    let empty = Gp::new(KernelSpec::default(), hyper(), 2, vec![], vec![], vec![]).unwrap();
    let prior = empty.predict_with_gradient_many(&[vec![0.1, 0.2], vec![0.5, 0.5]], 1.0);
    assert!(
        prior
            .iter()
            .all(|p| p.mean == 0.0 && p.variance == hyper().signal_variance)
    );
}
