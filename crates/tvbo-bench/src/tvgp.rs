//! Samples of the time-varying GP of Bogunovic et al. (paper 000, Section 5.1):
//! f_1 ~ GP(0, k), f_{k+1} = √(1−ε) f_k + √ε g_{k+1} with g_k ~ GP(0, k) i.i.d. (their
//! Eq. (4)), on the 50×50 grid of equally spaced points of `[0,1]`², with the squared
//! exponential kernel (l = 0.2) or Matérn ν = 5/2 (l = 0.2), noise variance 0.01 (1% of
//! the signal variance), and ε ∈ {0.001, 0.01, 0.03}.
//!
//! One step of the Markov chain per second of session time; one evaluation costs one
//! second, so a run makes about one query per step, as in the paper. The paper maximises
//! f; the bench minimises −f, which has the same regret.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::error::BenchError;
use super::objective::Objective;
use tvbo_core::gp::KernelKind;

/// Points per side of the grid (000 Section 5.1: 50 × 50).
pub const GRID_SIDE: usize = 50;
/// Lengthscale of both kernels (000 Section 5.1).
pub const LENGTHSCALE: f64 = 0.2;
/// Sampling noise variance (000 Section 5.1).
pub const NOISE_VARIANCE: f64 = 0.01;
/// Seconds per Markov step, and per evaluation.
pub const STEP_SECONDS: f64 = 1.0;
/// The ε values of 000's Figure 2.
pub const EPSILONS: [f64; 3] = [0.001, 0.01, 0.03];

/// The spatial kernel of the sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TvGpKernel {
    /// Squared exponential, l = 0.2.
    SquaredExponential,
    /// Matérn ν = 5/2, l = 0.2.
    Matern52,
}

impl TvGpKernel {
    pub const ALL: [TvGpKernel; 2] = [TvGpKernel::SquaredExponential, TvGpKernel::Matern52];

    pub fn name(self) -> &'static str {
        match self {
            TvGpKernel::SquaredExponential => "se",
            TvGpKernel::Matern52 => "matern52",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TvGpKernel::SquaredExponential => "SE",
            TvGpKernel::Matern52 => "Matérn-5/2",
        }
    }

    fn kind(self) -> KernelKind {
        match self {
            TvGpKernel::SquaredExponential => KernelKind::Rbf,
            TvGpKernel::Matern52 => KernelKind::Matern52,
        }
    }
}

/// The grid's points in `[0,1]`², row-major (x1 slowest).
pub fn grid_points(side: usize) -> Vec<Vec<f64>> {
    let coordinate = |i: usize| i as f64 / (side - 1) as f64;
    (0..side)
        .flat_map(|i| (0..side).map(move |j| vec![coordinate(i), coordinate(j)]))
        .collect()
}

type FactorKey = (TvGpKernel, usize);

/// Cholesky factors of the grid's kernel matrices, computed once per process.
fn factor(kernel: TvGpKernel, side: usize) -> Result<Arc<DMatrix<f64>>, BenchError> {
    static FACTORS: OnceLock<Mutex<HashMap<FactorKey, Arc<DMatrix<f64>>>>> = OnceLock::new();
    let factors = FACTORS.get_or_init(Mutex::default);
    // Held while factorising: concurrent runs wait for the one factorisation.
    let mut factors = factors.lock().expect("factor cache lock");
    if let Some(found) = factors.get(&(kernel, side)) {
        return Ok(found.clone());
    }
    let points = grid_points(side);
    let m = points.len();
    let base = DMatrix::from_fn(m, m, |a, b| {
        let r =
            ((points[a][0] - points[b][0]).powi(2) + (points[a][1] - points[b][1]).powi(2)).sqrt();
        kernel.kind().correlation(r / LENGTHSCALE)
    });
    // The SE matrix on a fine grid is numerically singular: add the smallest jitter that
    // factorises (1e-8 … 1e-4, far below the noise variance 0.01).
    let mut jitter = 1e-8;
    loop {
        let mut matrix = base.clone();
        for i in 0..m {
            matrix[(i, i)] += jitter;
        }
        if let Some(cholesky) = matrix.cholesky() {
            let l = Arc::new(cholesky.unpack());
            factors.insert((kernel, side), l.clone());
            return Ok(l);
        }
        jitter *= 10.0;
        if jitter > 1e-4 {
            return Err(BenchError::Objective(format!(
                "the {} kernel matrix of the {side}×{side} grid does not factorise",
                kernel.label()
            )));
        }
    }
}

/// One sample path f_1, f_2, … of the time-varying GP on the grid.
pub struct TvGpSample {
    arms: Vec<Vec<f64>>,
    side: usize,
    /// f_k at every grid point, one vector per step (k = 0 is the paper's f_1).
    steps: Vec<DVector<f64>>,
    /// max over the grid of f_k, per step.
    maxima: Vec<f64>,
}

impl TvGpSample {
    /// The sample of replication `seed` on the paper's 50×50 grid, for `horizon` seconds.
    pub fn new(
        kernel: TvGpKernel,
        epsilon: f64,
        horizon: f64,
        seed: u64,
    ) -> Result<Self, BenchError> {
        Self::with_grid(kernel, epsilon, horizon, seed, GRID_SIDE)
    }

    /// The same on a `side` × `side` grid.
    pub fn with_grid(
        kernel: TvGpKernel,
        epsilon: f64,
        horizon: f64,
        seed: u64,
        side: usize,
    ) -> Result<Self, BenchError> {
        if !(epsilon > 0.0 && epsilon < 1.0) || side < 2 {
            return Err(BenchError::Objective(format!(
                "TV-GP sample needs ε in (0, 1) and a grid side ≥ 2 (got ε = {epsilon}, side {side})"
            )));
        }
        let l = factor(kernel, side)?;
        let m = side * side;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7476_6770_0000_0000);
        let draw = |rng: &mut ChaCha8Rng| -> DVector<f64> {
            let z = DVector::from_fn(m, |_, _| StandardNormal.sample(rng));
            &*l * z
        };
        let count = (horizon / STEP_SECONDS).ceil().max(0.0) as usize + 1;
        let mut steps = Vec::with_capacity(count);
        steps.push(draw(&mut rng));
        let (keep, fresh) = ((1.0 - epsilon).sqrt(), epsilon.sqrt());
        for _ in 1..count {
            let g = draw(&mut rng);
            let next = steps.last().expect("one step") * keep + g * fresh;
            steps.push(next);
        }
        let maxima = steps.iter().map(|f| f.max()).collect();
        Ok(TvGpSample {
            arms: grid_points(side),
            side,
            steps,
            maxima,
        })
    }

    fn step(&self, t: f64) -> usize {
        ((t / STEP_SECONDS).floor().max(0.0) as usize).min(self.steps.len() - 1)
    }

    /// The grid index nearest to unit point x.
    fn index(&self, x: &[f64]) -> usize {
        let cell = |v: f64| ((v.clamp(0.0, 1.0) * (self.side - 1) as f64).round()) as usize;
        cell(x[0]) * self.side + cell(x[1])
    }

    /// f_k at every grid point, for the step of time t.
    pub fn field(&self, t: f64) -> &DVector<f64> {
        &self.steps[self.step(t)]
    }
}

impl Objective for TvGpSample {
    fn dim(&self) -> usize {
        2
    }

    fn arms(&self) -> Option<&[Vec<f64>]> {
        Some(&self.arms)
    }

    fn noise_variance(&self) -> f64 {
        NOISE_VARIANCE
    }

    fn cost(&self) -> f64 {
        STEP_SECONDS
    }

    /// −f_k(x) at the grid point nearest to x, k the step of t.
    fn value(&self, x: &[f64], t: f64) -> f64 {
        -self.steps[self.step(t)][self.index(x)]
    }

    fn optimum(&self, t: f64) -> f64 {
        -self.maxima[self.step(t)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Markov chain keeps the prior's unit variance, its lag-1 correlation is
    /// √(1−ε), and neighbouring grid points correlate as the kernel says.
    #[test]
    fn samples_have_the_model_s_moments() {
        let side = 12;
        let epsilon = 0.03;
        let mut variance = 0.0;
        let mut lag = 0.0;
        let mut neighbours = 0.0;
        let mut count = 0.0;
        for seed in 0..4 {
            let sample =
                TvGpSample::with_grid(TvGpKernel::Matern52, epsilon, 300.0, seed, side).unwrap();
            for k in 0..300 {
                let (f, g) = (&sample.steps[k], &sample.steps[k + 1]);
                variance += f.norm_squared() / f.len() as f64;
                lag += f.dot(g) / f.len() as f64;
                neighbours += (0..side * side - 1)
                    .filter(|i| (i + 1) % side != 0)
                    .map(|i| f[i] * f[i + 1])
                    .sum::<f64>()
                    / (side * (side - 1)) as f64;
                count += 1.0;
            }
        }
        let (variance, lag, neighbours) = (variance / count, lag / count, neighbours / count);
        assert!((variance - 1.0).abs() < 0.15, "variance {variance}");
        assert!(
            (lag / variance - (1.0 - epsilon).sqrt()).abs() < 0.01,
            "lag-1 {lag}"
        );
        let expected = KernelKind::Matern52.correlation(1.0 / (side - 1) as f64 / LENGTHSCALE);
        assert!(
            (neighbours / variance - expected).abs() < 0.05,
            "neighbours {neighbours}"
        );
    }

    #[test]
    fn value_and_optimum_read_the_grid() {
        let sample =
            TvGpSample::with_grid(TvGpKernel::SquaredExponential, 0.01, 10.0, 1, 8).unwrap();
        let best = (0..64)
            .map(|i| sample.value(&sample.arms[i].clone(), 3.5))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(sample.optimum(3.5), best);
        assert_eq!(sample.value(&[0.0, 1.0], 3.0), -sample.steps[3][7]);
        // Same seed, same function; another seed, another.
        let again =
            TvGpSample::with_grid(TvGpKernel::SquaredExponential, 0.01, 10.0, 1, 8).unwrap();
        let other =
            TvGpSample::with_grid(TvGpKernel::SquaredExponential, 0.01, 10.0, 2, 8).unwrap();
        assert_eq!(sample.steps, again.steps);
        assert_ne!(sample.steps, other.steps);
    }
}
