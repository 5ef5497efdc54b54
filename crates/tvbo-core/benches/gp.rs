//! GP core benchmarks at the design's reference setting: d = 3 plus time,
//! Matérn-5/2 × Matérn-3/2, n ∈ {25, 100, 200, 400}.

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::{DIM, data, hyper, model, observations, spec, unit_space};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tvbo_core::acquisition::{AcquisitionOptions, beta_wdbo, maximize_mean, maximize_ucb};
use tvbo_core::gp::{
    FitOptions, Fixed, Gp, KernelKind, SearchStart, fit_hyperparameters, log_marginal_likelihood,
};

const SIZES: [usize; 4] = [25, 100, 200, 400];

/// One evaluation of the likelihood and its gradient, what every step of a fit pays.
fn bench_lml(c: &mut Criterion) {
    let mut group = c.benchmark_group("log_marginal_likelihood");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for n in [25, 100, 200, 400, 800] {
        let (xs, ts, ys) = data(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                log_marginal_likelihood(spec(), &hyper(), &Fixed::default(), &xs, &ts, &ys).unwrap()
            })
        });
    }
    group.finish();
}

fn bench_fit(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_hyperparameters");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SIZES {
        let (xs, ts, ys) = data(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                fit_hyperparameters(
                    spec(),
                    &xs,
                    &ts,
                    &ys,
                    SearchStart::Default,
                    &FitOptions::default(),
                )
                .unwrap()
            })
        });
    }
    group.finish();
}

/// A maximisation over the unit cube on the GP of `data(n)`, one thread, from the same
/// Sobol scramble each time: `search(gp, n, rng)`.
fn bench_maximisation(
    c: &mut Criterion,
    name: &str,
    search: impl Fn(&Gp, usize, &mut ChaCha8Rng) -> (Vec<f64>, f64),
) {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SIZES {
        let (xs, ts, ys) = data(n);
        let gp = Gp::new(spec(), hyper(), DIM, xs, ts, ys).unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| search(&gp, n, &mut ChaCha8Rng::seed_from_u64(2)))
        });
    }
    group.finish();
}

/// UCB's maximisation, and the search of the posterior mean for the recorded optimum,
/// which every suggest and `GET …/best` run on the fitted model (its 512 raw samples
/// need no variances).
fn bench_ucb(c: &mut Criterion) {
    let options = AcquisitionOptions::default();
    bench_maximisation(c, "maximize_ucb", |gp, n, rng| {
        maximize_ucb(gp, beta_wdbo(DIM, n), 610.0, &options, rng)
    });
    bench_maximisation(c, "maximize_mean", |gp, _, rng| {
        maximize_mean(gp, 610.0, &options, &[], &1, rng)
    });
}

fn bench_push_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("push_remove");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let (xs, ts, ys) = data(n);
        let gp = Gp::new(spec(), hyper(), DIM, xs, ts, ys).unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_batched_ref(
                || gp.clone(),
                |g| {
                    g.push(black_box(&[0.4, 0.5, 0.6]), 605.0, 0.1).unwrap();
                    g.remove(black_box(0)).unwrap();
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// One suggest of the production policy (TV-GP-UCB): fit, factorisation, UCB
/// maximisation — one iteration of the papers' BoTorch loop.
fn bench_suggest(c: &mut Criterion) {
    use tvbo_core::policy::{self, PolicyState, SuggestContext};

    let mut group = c.benchmark_group("suggest_iteration");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let space = unit_space();
    let model = model(KernelKind::Matern12);
    let algorithm = tvbo_core::domain::config::AlgorithmConfig::default();
    let tv_gp_ucb = policy::policy_for(&common::session(algorithm));
    for n in [25, 101, 201, 401, 801] {
        let observations = observations(n);
        let ctx = SuggestContext {
            space: &space,
            arms: None,
            model: &model,
            data: &observations,
            pending: &[],
            t: 600.0,
            count: 1,
            issued_before: n as u64,
            fixed_noise: None,
            cores: &1,
            fixed: &[],
            beside: None,
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let mut state = PolicyState::default();
                let mut rng = ChaCha8Rng::seed_from_u64(4);
                black_box(policy::suggest(tv_gp_ucb.as_ref(), &ctx, &mut state, &mut rng).unwrap())
            })
        });
    }
    group.finish();
}

/// One BOLT iteration at a full dataset: suggest (fit, UCB maximisation),
/// then observe the suggestion, which pushes the dataset above n* and removes the least
/// relevant observation (relevance of all, one removal).
fn bench_bolt_iteration(c: &mut Criterion) {
    use tvbo_core::domain::algorithm::bolt::Bolt;
    use tvbo_core::domain::config::{AlgorithmConfig, Beta};
    use tvbo_core::policy::{self, Observation, ObserveContext, PolicyState, SuggestContext};

    let mut group = c.benchmark_group("bolt_iteration");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let space = unit_space();
    let model = model(KernelKind::Matern32);
    for n in [101, 401] {
        let bolt = policy::policy_for(&common::session(AlgorithmConfig::Bolt(Bolt {
            min_dataset_size: 1,
            max_dataset_size: n as u64,
            beta: Beta::default(),
        })));
        let observations = observations(n);
        let ctx = SuggestContext {
            space: &space,
            arms: None,
            model: &model,
            data: &observations,
            pending: &[],
            t: 600.0,
            count: 1,
            issued_before: n as u64,
            fixed_noise: None,
            cores: &1,
            fixed: &[],
            beside: None,
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let mut state = PolicyState::default();
                let proposal = policy::suggest(
                    bolt.as_ref(),
                    &ctx,
                    &mut state,
                    &mut ChaCha8Rng::seed_from_u64(4),
                )
                .unwrap()
                .proposals
                .remove(0);
                let new = [Observation {
                    seq: n as i64 + 1,
                    x: proposal.x,
                    t: 600.0,
                    y: 0.0,
                }];
                let removed = bolt
                    .observe(
                        &ObserveContext {
                            space: &tvbo_core::domain::space::SearchSpace::unit(DIM),
                            model: &model,
                            data: &observations,
                            new: &new,
                            suggestion_ordinals: &[None],
                            fixed_noise: None,
                            t: 600.0,
                            response_times: &[],
                        },
                        &mut state,
                    )
                    .unwrap();
                assert_eq!(removed.len(), 1);
                black_box(removed)
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_lml,
    bench_fit,
    bench_ucb,
    bench_push_remove,
    bench_suggest,
    bench_bolt_iteration
);
criterion_main!(benches);
