//! What this machine's core can do, for comparing machine kinds (docs/performance.md,
//! "Machine kinds"): its model name and vector extensions, its clock as a chain of
//! dependent multiplies measures it (3 cycles each on the x86 cores of recent years),
//! its peak of fused multiply-adds on f64 at each vector width, and the rate of the
//! fit's dense pieces at n = 400 through faer as this build dispatches them (the Cholesky
//! factor and the inverse from it, each likelihood evaluation's O(n³)), beside faer's
//! plain matrix product. One thread; medians.
//!
//! ```sh
//! cargo bench -p tvbo-core --bench machine
//! ```

use std::hint::black_box;
use std::time::Instant;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt;
use faer::{Accum, Mat, Par};

/// The order of the dense pieces: the comparison's n (docs/performance.md).
const N: usize = 400;
/// Runs of each dense piece; the median is reported.
const REPEATS: usize = 201;
/// Latency of a 64-bit integer multiply in cycles (Intel since Sandy Bridge, AMD since
/// Zen): a chain of them runs at a third of the clock.
const MULTIPLY_LATENCY: f64 = 3.0;

fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds[seconds.len() / 2]
}

/// The median seconds of `work` on `state`, run [`REPEATS`] times after `prepare` on it.
fn timed<S>(state: &mut S, mut prepare: impl FnMut(&mut S), mut work: impl FnMut(&mut S)) -> f64 {
    median(
        (0..REPEATS)
            .map(|_| {
                prepare(state);
                let start = Instant::now();
                work(state);
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn model_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The clock in GHz, from a chain of dependent multiplies.
fn clock_ghz() -> f64 {
    let rounds: u64 = 100_000_000;
    let best = (0..5)
        .map(|_| {
            let mut x = black_box(3u64);
            let start = Instant::now();
            for _ in 0..rounds {
                x = x.wrapping_mul(x);
                x = x.wrapping_mul(x);
                x = x.wrapping_mul(x);
                x = x.wrapping_mul(x);
            }
            black_box(x);
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    4.0 * rounds as f64 * MULTIPLY_LATENCY / best / 1e9
}

/// Peak fused multiply-add rates in GFLOP/s (AVX2, AVX-512), where the core has them.
#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;
    use std::hint::black_box;
    use std::time::Instant;

    /// Independent chains, enough to cover the FMA latency on two ports.
    const CHAINS: usize = 12;
    const ROUNDS: usize = 20_000_000;

    fn rate(lanes: usize, run: impl Fn() -> f64) -> f64 {
        let best = (0..3)
            .map(|_| {
                let start = Instant::now();
                black_box(run());
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        (CHAINS * ROUNDS * lanes * 2) as f64 / best / 1e9
    }

    #[target_feature(enable = "avx2,fma")]
    fn chains_256() -> f64 {
        let mut acc = [_mm256_set1_pd(1.0); CHAINS];
        let (a, b) = (_mm256_set1_pd(black_box(0.999_999)), _mm256_set1_pd(1e-9));
        for _ in 0..ROUNDS {
            for chain in &mut acc {
                *chain = _mm256_fmadd_pd(*chain, a, b);
            }
        }
        // Every chain feeds the result, so that none is left out as unused.
        let sum = acc
            .iter()
            .fold(_mm256_setzero_pd(), |sum, &chain| _mm256_add_pd(sum, chain));
        let mut out = [0.0; 4];
        // SAFETY: `out` holds the four lanes.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), sum) };
        out.iter().sum()
    }

    #[target_feature(enable = "avx512f")]
    fn chains_512() -> f64 {
        let mut acc = [_mm512_set1_pd(1.0); CHAINS];
        let (a, b) = (_mm512_set1_pd(black_box(0.999_999)), _mm512_set1_pd(1e-9));
        for _ in 0..ROUNDS {
            for chain in &mut acc {
                *chain = _mm512_fmadd_pd(*chain, a, b);
            }
        }
        // Every chain feeds the result, so that none is left out as unused.
        let sum = acc
            .iter()
            .fold(_mm512_setzero_pd(), |sum, &chain| _mm512_add_pd(sum, chain));
        _mm512_reduce_add_pd(sum)
    }

    pub fn avx2() -> Option<f64> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
            // SAFETY: the features were detected.
            .then(|| rate(4, || unsafe { chains_256() }))
    }

    pub fn avx512() -> Option<f64> {
        is_x86_feature_detected!("avx512f")
            // SAFETY: the feature was detected.
            .then(|| rate(8, || unsafe { chains_512() }))
    }
}

fn main() {
    println!("model: {}", model_name());
    println!("clock: {:.2} GHz (dependent multiplies)", clock_ghz());
    #[cfg(target_arch = "x86_64")]
    let best_peak = {
        let (avx2, avx512) = (peak::avx2(), peak::avx512());
        let show = |rate: Option<f64>| rate.map_or("absent".into(), |r| format!("{r:.1} GFLOP/s"));
        println!(
            "f64 FMA peak: AVX2 {}, AVX-512 {}",
            show(avx2),
            show(avx512)
        );
        avx512.or(avx2)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let best_peak: Option<f64> = None;

    // A kernel-like matrix: symmetric positive definite, well conditioned.
    let a = Mat::<f64>::from_fn(N, N, |i, j| {
        (-(i as f64 - j as f64).abs() / 50.0).exp() + if i == j { 1e-3 } else { 0.0 }
    });
    let par = Par::Seq;
    let mut factor = a.clone();
    let mut stack = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(
        N,
        par,
        Default::default(),
    ));
    let cholesky = timed(
        &mut factor,
        |factor| factor.copy_from(&a),
        |factor| {
            llt::factor::cholesky_in_place(
                factor.as_mut(),
                Default::default(),
                par,
                MemStack::new(&mut stack),
                Default::default(),
            )
            .expect("positive definite");
        },
    );
    let mut inverse = Mat::<f64>::zeros(N, N);
    let mut scratch = MemBuffer::new(llt::inverse::inverse_scratch::<f64>(N, par));
    let inverse_seconds = timed(
        &mut inverse,
        |_| {},
        |inverse| {
            llt::inverse::inverse(
                inverse.as_mut(),
                factor.as_ref(),
                par,
                MemStack::new(&mut scratch),
            )
        },
    );
    let mut product = Mat::<f64>::zeros(N, N);
    let product_seconds = timed(
        &mut product,
        |_| {},
        |product| {
            faer::linalg::matmul::matmul(
                product.as_mut(),
                Accum::Replace,
                a.as_ref(),
                inverse.as_ref(),
                1.0,
                par,
            )
        },
    );
    black_box((&inverse, &product));
    let cube = (N as f64).powi(3);
    for (piece, seconds, flops) in [
        ("Cholesky factor", cholesky, cube / 3.0),
        ("inverse from the factor", inverse_seconds, 2.0 * cube / 3.0),
        ("matrix product", product_seconds, 2.0 * cube),
    ] {
        let rate = flops / seconds / 1e9;
        let share = best_peak.map_or(String::new(), |peak| {
            format!(", {:.0} % of the peak", 100.0 * rate / peak)
        });
        println!(
            "n = {N} {piece}: {:.3} ms, {rate:.1} GFLOP/s{share}",
            seconds * 1e3
        );
    }
}
