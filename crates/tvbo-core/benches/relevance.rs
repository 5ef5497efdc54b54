//! Relevance (W-DBO / BOLT) benchmarks at the design's reference setting: d = 3 plus
//! time, Matérn-5/2 × Matérn-3/2.
//!
//! - `relevance_all/n`: `Relevance::new` + `values()` (O(n³)).
//! - `relevance_remove/n`: one `remove` + `least_relevant` (O(n²)).

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::{HORIZON, gp};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use tvbo_core::gp::relevance::Relevance;

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
