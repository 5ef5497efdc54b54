//! The memory a model reports (what the read-model cache of each replica accounts, within
//! its 512 MB) against a brute force: the bytes the allocator actually keeps for it,
//! counted by a global allocator that tracks live bytes. Small models matter most: an
//! accounting of 2·n² doubles under-counted them by up to 80×.
//!
//! One test in the binary: the allocation counter is process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use nalgebra::{DMatrix, DVector};
use tvbo::domain::config::{Failures, FitStart, Lengthscales, Level, ModelConfig, Warping};
use tvbo::domain::hyperpriors::Hyperpriors;
use tvbo::gp::arms::{ArmGp, ArmPrior, TimeVaryingArmGp};
use tvbo::gp::{KernelKind, KernelSpec};
use tvbo::policy::{FitSettings, Observation, Surrogate};

/// Live heap bytes of the process.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::SeqCst);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Builds a value and returns it with the heap bytes that stayed allocated for it.
fn retained<T>(build: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::SeqCst);
    let value = build();
    let after = LIVE.load(Ordering::SeqCst);
    (
        value,
        usize::try_from(after - before).expect("nothing was freed"),
    )
}

fn assert_close(what: &str, reported: usize, measured: usize) {
    let ratio = reported as f64 / measured.max(1) as f64;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: reports {reported} heap bytes, the allocator keeps {measured} ({ratio:.2}×)"
    );
}

fn data(n: usize, dim: usize) -> Vec<Observation> {
    (0..n)
        .map(|i| Observation {
            seq: i as i64 + 1,
            x: (0..dim)
                .map(|d| ((i * (d + 2)) as f64 * 0.618_033_988_75).fract())
                .collect(),
            t: i as f64,
            y: (i as f64 * 0.7).sin(),
        })
        .collect()
}

fn prior(m: usize) -> ArmPrior {
    let covariance = DMatrix::from_fn(m, m, |i, j| {
        (-((i as f64 - j as f64) / 3.0).powi(2)).exp() + if i == j { 1e-3 } else { 0.0 }
    });
    ArmPrior::new(DVector::zeros(m), covariance).expect("a valid prior")
}

#[test]
fn reported_model_memory_matches_the_allocator() {
    let spec = KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32));
    let model = ModelConfig {
        spatial_kernel: KernelKind::Matern52,
        temporal_kernel: Some(KernelKind::Matern32),
        noise: None,
        warmup: 15,
        fit_start: FitStart::Fixed,
        hyperpriors: Hyperpriors::None,
        failures: Failures::Ignore,
        lengthscales: Lengthscales::Shared,
        warping: Warping::None,
        level: Level::None,
    };
    let exact = FitSettings::from_default_start(None, &model);
    // The matrix-product kernels keep a workspace per thread (a few MB, made on first use
    // and kept for the thread's life), shared by every model the thread builds and owned
    // by none: made here first, it is not counted against the first model measured.
    drop(Surrogate::fit(spec, 6, &data(200, 6), &exact).expect("the fit succeeds"));
    for (n, dim) in [(1, 1), (3, 2), (20, 3), (200, 6)] {
        let observations = data(n, dim);
        let (surrogate, measured) = retained(|| {
            Surrogate::fit(spec, dim, &observations, &exact).expect("the fit succeeds")
        });
        assert_close(
            &format!("GP of {n} points in {dim} dimensions"),
            surrogate.gp().heap_bytes(),
            measured,
        );
    }
    for (m, n) in [(2, 1), (10, 5), (100, 40)] {
        let (arm_prior, measured) = retained(|| Arc::new(prior(m)));
        // The Arc's allocation holds the prior itself beside its heap.
        assert_close(
            &format!("prior over {m} arms"),
            arm_prior.heap_bytes() + std::mem::size_of::<ArmPrior>() + 16,
            measured,
        );
        let (posterior, measured) = retained(|| {
            let mut gp = ArmGp::new(arm_prior.clone(), 0.01);
            for i in 0..n {
                gp.push(i % m, (i as f64).cos());
            }
            gp
        });
        assert_close(
            &format!("posterior over {m} arms after {n} observations"),
            posterior.heap_bytes(),
            measured,
        );
        let observations: Vec<(usize, f64, f64)> = (0..n)
            .map(|i| (i % m, i as f64, (i as f64).sin()))
            .collect();
        let (tv, measured) = retained(|| {
            TimeVaryingArmGp::new(
                arm_prior.clone(),
                KernelKind::Matern12,
                10.0,
                0.01,
                &observations,
            )
            .expect("a valid posterior")
        });
        assert_close(
            &format!("time-varying posterior over {m} arms after {n} observations"),
            tv.heap_bytes(),
            measured,
        );
    }
}
