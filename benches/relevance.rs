//! Relevance (W-DBO / BOLT) benchmarks at the design's reference setting: d = 3 plus
//! time, Matérn-5/2 × Matérn-3/2.
//!
//! - `relevance_all/n`: `Relevance::new` + `values()` (O(n³)).
//! - `relevance_remove/n`: one `remove` + `least_relevant` (O(n²)).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tvbo::gp::relevance::Relevance;
use tvbo::gp::{Gp, Hyperparameters, KernelKind, KernelSpec};

const DIM: usize = 3;
const HORIZON: f64 = 600.0;

fn gp(n: usize) -> Gp {
    let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
    let xs: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..DIM).map(|_| rng.random::<f64>()).collect())
        .collect();
    let ts: Vec<f64> = (0..n).map(|i| HORIZON * i as f64 / n as f64).collect();
    let ys: Vec<f64> = xs
        .iter()
        .zip(&ts)
        .map(|(x, t)| {
            let shift = 0.3 * (t / 200.0).sin();
            -(x[0] - 0.5 - shift).powi(2) - (x[1] - 0.3).powi(2)
                + (6.0 * x[2]).sin() * 0.2
                + 0.05 * (rng.random::<f64>() - 0.5)
        })
        .collect();
    let spec = KernelSpec {
        spatial: KernelKind::Matern52,
        temporal: Some(KernelKind::Matern32),
    };
    let hyper = Hyperparameters {
        signal_variance: 1.0,
        spatial_lengthscale: 0.3,
        temporal_lengthscale: 300.0,
        noise_variance: 0.01,
    };
    Gp::new(spec, hyper, DIM, xs, ts, ys).expect("benchmark GP")
}

fn bench_all(c: &mut Criterion) {
    let mut group = c.benchmark_group("relevance_all");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in [100usize, 400, 1000] {
        let model = gp(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &model, |b, model| {
            b.iter(|| {
                let rel = Relevance::new(black_box(model), HORIZON).expect("relevance");
                black_box(rel.values())
            })
        });
    }
    group.finish();
}

fn bench_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("relevance_remove");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in [400usize, 1000] {
        let rel = Relevance::new(&gp(n), HORIZON).expect("relevance");
        group.bench_with_input(BenchmarkId::from_parameter(n), &rel, |b, rel| {
            b.iter_batched(
                || rel.clone(),
                |mut r| {
                    r.remove(n / 2);
                    black_box(r.least_relevant())
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_all, bench_remove);
criterion_main!(benches);
