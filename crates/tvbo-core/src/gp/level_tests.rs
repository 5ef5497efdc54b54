//! Tests of the drifting level (λ_L · k_T(|t − t'|/l_L) added to the kernel): the GP's
//! posterior and updates against a dense solve of the kernel written out by hand, the
//! likelihood and its gradient against the dense formula and finite differences, and a
//! fit that tells a change of level from the shape.

use super::*;
use crate::domain::hyperpriors::HyperpriorSet;
use crate::gp::categories::Categories;
use crate::gp::kernel::KernelKind;
use crate::gp::lengthscales::LengthscaleRatios;
use crate::gp::model::Gp;
use nalgebra::DVector;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const LEVEL: DriftingLevel = DriftingLevel {
    variance: 0.8,
    lengthscale: 6.0,
};

fn hyper(ratios: LengthscaleRatios) -> Hyperparameters {
    Hyperparameters {
        signal_variance: 1.3,
        spatial_lengthscale: 0.4,
        temporal_lengthscale: 25.0,
        noise_variance: 0.05,
        categorical_lengthscale: 0.7,
        lengthscale_ratios: ratios,
        level: Some(LEVEL),
    }
}

/// Inputs in 3 dimensions, the second categorical of 3 choices when `categories` says so,
/// times over 50 s, values standard-normal-ish.
fn data(n: usize, categorical: bool, rng: &mut ChaCha8Rng) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let xs = (0..n)
        .map(|_| {
            let mut x: Vec<f64> = (0..3).map(|_| rng.random::<f64>()).collect();
            if categorical {
                x[1] = (rng.random_range(0..3) as f64 + 0.5) / 3.0;
            }
            x
        })
        .collect();
    let ts = (0..n).map(|_| rng.random::<f64>() * 50.0).collect();
    let ys = (0..n).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
    (xs, ts, ys)
}

/// The kernel written out: λ k_S(r) e^{−h/l_C} k_T(|Δt|/l_T) + λ_L k_T(|Δt|/l_L).
fn explicit(
    spec: KernelSpec,
    h: &Hyperparameters,
    (a, ta): (&[f64], f64),
    (b, tb): (&[f64], f64),
) -> f64 {
    let (mut r2, mut differ) = (0.0, 0.0);
    for d in 0..a.len() {
        if spec.categories.choices(d) > 0 {
            differ += f64::from(u8::from(a[d] != b[d]));
        } else {
            let l = h.spatial_lengthscale * h.lengthscale_ratios.get(d);
            r2 += ((a[d] - b[d]) / l).powi(2);
        }
    }
    let kind = spec.temporal.expect("a level needs time");
    let dt = (ta - tb).abs();
    let level = h.level.expect("a level");
    h.signal_variance
        * spec.spatial.correlation(r2.sqrt())
        * (-differ / h.categorical_lengthscale).exp()
        * kind.correlation(dt / h.temporal_lengthscale)
        + level.variance * kind.correlation(dt / level.lengthscale)
}

fn cases() -> Vec<(KernelSpec, LengthscaleRatios)> {
    let mut out = Vec::new();
    for temporal in KernelKind::ALL {
        out.push((
            KernelSpec::new(KernelKind::Matern52, Some(temporal)),
            LengthscaleRatios::default(),
        ));
    }
    let categories = Categories::new(&[0, 3, 0]);
    out.push((
        KernelSpec::default().with_categories(categories),
        LengthscaleRatios::default(),
    ));
    out.push((
        KernelSpec::new(KernelKind::Rbf, Some(KernelKind::Matern32)),
        LengthscaleRatios::new(&[0.5, 1.0, 2.0]).unwrap(),
    ));
    out
}

#[test]
fn a_drifting_levels_posterior_matches_a_dense_solve_and_survives_updates() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for (spec, ratios) in cases() {
        let h = hyper(ratios);
        let categorical = !spec.categories.is_empty();
        let (xs, ts, ys) = data(30, categorical, &mut rng);
        let mut gp = Gp::new(spec, h, 3, xs.clone(), ts.clone(), ys.clone()).unwrap();
        let dense = |xs: &[Vec<f64>], ts: &[f64]| {
            DMatrix::from_fn(xs.len(), xs.len(), |i, j| {
                explicit(spec, &h, (&xs[i], ts[i]), (&xs[j], ts[j]))
                    + if i == j { h.noise_variance } else { 0.0 }
            })
        };
        let check = |gp: &Gp, xs: &[Vec<f64>], ts: &[f64], ys: &[f64], rng: &mut ChaCha8Rng| {
            let kinv = dense(xs, ts).try_inverse().unwrap();
            let alpha = &kinv * DVector::from_vec(ys.to_vec());
            assert!((&alpha - gp.alpha()).amax() < 1e-8, "{spec:?}");
            let points: Vec<Vec<f64>> = data(6, categorical, rng).0;
            let t = 55.0;
            let many = gp.predict_many(&points, t);
            let with_gradient = gp.predict_with_gradient_many(&points, t);
            for (i, x) in points.iter().enumerate() {
                let kx = DVector::from_iterator(
                    xs.len(),
                    (0..xs.len()).map(|j| explicit(spec, &h, (x, t), (&xs[j], ts[j]))),
                );
                let mean = kx.dot(&alpha);
                let prior = h.signal_variance + LEVEL.variance;
                let var = (prior - kx.dot(&(&kinv * &kx))).max(0.0);
                for (m, v) in [gp.predict(x, t), many[i]] {
                    assert!((m - mean).abs() < 1e-8, "{spec:?}: {m} vs {mean}");
                    assert!((v - var).abs() < 1e-8, "{spec:?}: {v} vs {var}");
                }
                assert!((with_gradient[i].mean - mean).abs() < 1e-8);
                assert!((with_gradient[i].variance - var).abs() < 1e-8);
                assert!((gp.predict_mean_many(std::slice::from_ref(x), t)[0] - mean).abs() < 1e-8);
            }
        };
        check(&gp, &xs, &ts, &ys, &mut rng);
        // The O(n²) updates: one more point, then the fifth removed.
        let (more, more_t, more_y) = data(1, categorical, &mut rng);
        gp.push(&more[0], more_t[0], more_y[0]).unwrap();
        let (mut xs, mut ts, mut ys) = (xs, ts, ys);
        xs.push(more[0].clone());
        ts.push(more_t[0]);
        ys.push(more_y[0]);
        check(&gp, &xs, &ts, &ys, &mut rng);
        gp.remove(4).unwrap();
        xs.remove(4);
        ts.remove(4);
        ys.remove(4);
        check(&gp, &xs, &ts, &ys, &mut rng);
    }
}

/// The input gradients of the mean and variance, which the level (constant in space) does
/// not enter directly, still match finite differences of the predictions.
#[test]
fn a_drifting_levels_input_gradients_match_finite_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let spec = KernelSpec::default();
    let h = hyper(LengthscaleRatios::default());
    let (xs, ts, ys) = data(25, false, &mut rng);
    let gp = Gp::new(spec, h, 3, xs, ts, ys).unwrap();
    let x = vec![0.3, 0.6, 0.45];
    let p = gp.predict_with_gradient(&x, 52.0);
    for d in 0..3 {
        let at = |delta: f64| {
            let mut y = x.clone();
            y[d] += delta;
            gp.predict(&y, 52.0)
        };
        let ((m1, v1), (m0, v0)) = (at(1e-6), at(-1e-6));
        assert!(((m1 - m0) / 2e-6 - p.mean_gradient[d]).abs() < 1e-6);
        assert!(((v1 - v0) / 2e-6 - p.variance_gradient[d]).abs() < 1e-6);
    }
}

#[test]
fn a_drifting_levels_likelihood_and_gradient_match_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for (spec, ratios) in cases() {
        let h = hyper(ratios);
        let categorical = !spec.categories.is_empty();
        let (xs, ts, ys) = data(22, categorical, &mut rng);
        let k = DMatrix::from_fn(22, 22, |i, j| {
            explicit(spec, &h, (&xs[i], ts[i]), (&xs[j], ts[j]))
                + if i == j { h.noise_variance } else { 0.0 }
        });
        let (lml, grad) =
            log_marginal_likelihood(spec, &h, &Fixed::default(), &xs, &ts, &ys).unwrap();
        let y = DVector::from_vec(ys.clone());
        let expected = -0.5 * y.dot(&(k.clone().try_inverse().unwrap() * &y))
            - 0.5 * k.determinant().ln()
            - 11.0 * (2.0 * std::f64::consts::PI).ln();
        assert!(
            (lml - expected).abs() < 1e-9,
            "{spec:?}: {lml} vs {expected}"
        );
        let per_coordinate = (!ratios.is_isotropic()).then_some(3);
        let layout = Layout::new(spec, &Fixed::default(), per_coordinate, true);
        assert_eq!(grad.len(), layout.len());
        let theta = layout.to_log(&h);
        assert_eq!(layout.hyper_from_log(&theta, &h).level, Some(LEVEL));
        let pairs = Pairs::new(spec, layout, &xs, &ts);
        let priors = HyperpriorSet::robust(
            spec.categories.continuous_dim(3),
            categorical,
            ts.iter().copied(),
        );
        let mut objective = NegativeLogPosterior {
            spec,
            layout,
            pairs: &pairs,
            ys: &ys,
            base: h,
            priors: layout.priors(&priors),
            workspace: Workspace::new(&pairs, layout),
            valued: None,
        };
        objective.value(&theta);
        let posterior_gradient = objective.gradient();
        for j in 0..theta.len() {
            let mut at = |delta: f64| {
                let mut t = theta.clone();
                t[j] += delta;
                let moved = layout.hyper_from_log(&t, &h);
                let lml = log_marginal_likelihood(spec, &moved, &Fixed::default(), &xs, &ts, &ys)
                    .unwrap()
                    .0;
                (lml, objective.value(&t))
            };
            let ((l1, p1), (l0, p0)) = (at(1e-6), at(-1e-6));
            let (fd, fd_posterior) = ((l1 - l0) / 2e-6, (p1 - p0) / 2e-6);
            assert!(
                (fd - grad[j]).abs() <= 1e-5 * fd.abs().max(1.0),
                "{spec:?} {j}: {fd} vs {}",
                grad[j]
            );
            assert!(
                (fd_posterior - posterior_gradient[j]).abs() <= 1e-5 * fd_posterior.abs().max(1.0),
                "{spec:?} {j}: {fd_posterior} vs {}",
                posterior_gradient[j]
            );
        }
    }
}

/// A shape in space whose level steps up by 3 halfway through 400 s: the fit with a
/// drifting level explains the step by the level (λ_L well above its floor, l_L shorter
/// than the half) and keeps the shape longer than the papers' kernel, which must forget
/// the shape to follow the step (its l_T 60–160 s; with the level 190 s to the bound of
/// 10⁷ on these seeds).
#[test]
fn a_fit_with_a_drifting_level_keeps_the_shape_across_a_step() {
    for seed in 0..4 {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        let n = 80;
        let xs: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..2).map(|_| rng.random::<f64>()).collect())
            .collect();
        let ts: Vec<f64> = (0..n).map(|i| i as f64 * 5.0).collect();
        let raw: Vec<f64> = xs
            .iter()
            .zip(&ts)
            .map(|(x, &t)| {
                (6.0 * x[0]).sin()
                    + x[1]
                    + if t >= 200.0 { 3.0 } else { 0.0 }
                    + 0.05 * (rng.random::<f64>() - 0.5)
            })
            .collect();
        let mean = raw.iter().sum::<f64>() / n as f64;
        let sd = (raw.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let ys: Vec<f64> = raw.iter().map(|y| (y - mean) / sd).collect();
        let spec = KernelSpec::default();
        let fit = |level: bool| {
            let options = FitOptions {
                level,
                ..FitOptions::default()
            };
            fit_hyperparameters(spec, &xs, &ts, &ys, SearchStart::Default, &options).unwrap()
        };
        let (plain, drifting) = (fit(false), fit(true));
        let level = drifting.level.expect("a fitted level");
        assert!(
            level.variance > 0.3 && level.lengthscale < 200.0,
            "seed {seed}: {drifting:?}"
        );
        assert!(
            drifting.temporal_lengthscale >= 1.4 * plain.temporal_lengthscale,
            "seed {seed}: l_T {} with the level, {} without",
            drifting.temporal_lengthscale,
            plain.temporal_lengthscale
        );
        assert!(plain.level.is_none());
    }
}
