//! Relevance of observations by the integrated 2-Wasserstein distance between the GP
//! posterior with and without each observation (W-DBO, Bardou et al. 2024; BOLT,
//! Bardou & Thiran, §3.4, eq. (12) and Appendix E).
//!
//! For the posterior on `D` and on `D ∖ {i}`, BOLT's distance (Appendix E, eq. (87)) is
//! `W² = ∫∫ (μ_D − μ_{D∖i})² + (σ_D − σ_{D∖i})² dx dt`. As in W-DBO, the closed form used
//! here integrates the upper bound obtained from `(σ_{D∖i} − σ_D)² ≤ σ²_{D∖i} − σ²_D`
//! (σ_{D∖i} ≥ σ_D):
//!
//! `W̄²_i = ∫_{ℝ^d} ∫_{t0}^{∞} (μ_D − μ_{D∖i})² + (σ²_{D∖i} − σ²_D) dt dx`.
//!
//! With `P = (K + σ²I)⁻¹`, `α = P y` and `p_i = P e_i`, removing `i` changes the mean by
//! `k(z)ᵀp_i · α_i / P_ii` and the latent variance by `(k(z)ᵀp_i)² / P_ii`, so
//!
//! `W̄²_i = (α_i² + P_ii)/P_ii² · (P C⁺ P)_ii`, with `C⁺_jk = ∫ k(z, z_j) k(z, z_k) dz
//! = λ² S(‖x_j − x_k‖) T(t_j, t_k)` (λ² enters through C⁺; no further constant),
//!
//! and the distance to the prior (empty dataset) is `W̄²_∅ = αᵀC⁺α + tr(P C⁺)`. The
//! relevance is `R_i = √(W̄²_i / W̄²_∅)`. The spatial integral is taken over ℝ^d in place
//! of `[0,1]^d` ([`spatial_factor`]); the temporal one covers the future `[t0, ∞)`
//! ([`temporal_factor`]).
//!
//! With a drifting level (the kernel's λ_L k_T(|t − t'|/l_L), constant in space,
//! [`super::model::DriftingLevel`]) the distance is the one between the posteriors of
//! the spatio-temporal component alone: removing `i` changes that component's mean by
//! `k_S(z)ᵀp_i · α_i / P_ii` and its variance by `(k_S(z)ᵀp_i)² / P_ii`, with `k_S` its
//! cross-covariance and P, α of the full kernel, so the same closed form holds with C⁺
//! of the spatio-temporal kernel and P, α of the full one. The level's own integral over
//! the inputs diverges (it is constant in x), and what the level holds does not move the
//! maximiser of UCB over x: an observation is kept for what it says of the shape.
//!
//! The authors' code (`wdbo_criterion`) caps the spatial integral at 1, the most the
//! integral over `[0,1]^d` can be. We do not: once the lengthscale makes the integral
//! exceed 1 (from l_S ≈ 0.58 for Matérn-5/2 in 4 dimensions), the cap sets C⁺'s spatial
//! factor to 1 for every nearby pair alike, C⁺ stops being a Gram matrix, and the
//! relevance of almost every observation falls to about zero, so that W-DBO's budget
//! empties the dataset at once (docs/benchmarks.md, "W-DBO against the official code").
//! Uncapped, C⁺ is the Gram matrix of the kernel sections over ℝ^d, and its scale cancels
//! in `R_i`.

use nalgebra::DMatrix;
use statrs::function::erf::erfc;
use statrs::function::gamma::ln_gamma;

use super::kernel::KernelKind;
use super::linalg;
use super::model::{Gp, GpError};
use super::special::ln_power_bessel_k;

const LN_PI: f64 = 1.144_729_885_849_400_2;

/// 2ν of a Matérn kind; `None` for the RBF.
fn matern_two_nu(kind: KernelKind) -> Option<usize> {
    match kind {
        KernelKind::Matern12 => Some(1),
        KernelKind::Matern32 => Some(3),
        KernelKind::Matern52 => Some(5),
        KernelKind::Rbf => None,
    }
}

/// `∫_{ℝ^d} k_S(‖x−a‖/l) k_S(‖x−b‖/l) dx` with `‖a − b‖ = distance`, standing for the
/// integral over `[0,1]^d` (not capped at 1: the module documentation says why).
///
/// The integral is the self-convolution `(k∗k)(b−a)`. By Fourier transform, with
/// `a = √(2ν)/l`, the Matérn-ν spectral density is `∝ (a² + ‖ω‖²)^{−(ν+d/2)}`; its
/// square is the spectral density of a Matérn of order `μ = 2ν + d/2` with the same `a`,
/// which gives
///
/// - Matérn ν: `2^{d/2−2ν+1} π^{d/2} Γ(ν+d/2)² / (Γ(2ν+d) Γ(ν)²) · a^{2ν−d/2} r^μ K_μ(a r)`,
///   at r = 0 `… · a^{2ν−d/2−μ} 2^{μ−1} Γ(μ)`,
/// - RBF (`e^{−r²/(2l²)}`): `π^{d/2} l^d e^{−r²/(4l²)}`.
///
/// The constant is checked against quadrature in the tests. The
/// product is evaluated as `C a^{−d} (a r)^μ K_μ(a r)` in logs, so it stays finite for
/// every d ≥ 1 and every distance. Contract: `lengthscale > 0`, `dim ≥ 1`, `distance ≥ 0`
/// (its absolute value is used).
pub fn spatial_factor(kind: KernelKind, lengthscale: f64, dim: usize, distance: f64) -> f64 {
    debug_assert!(lengthscale > 0.0 && dim >= 1);
    let d = dim as f64;
    let l = lengthscale;
    let r = distance.abs();
    let ln_value = match matern_two_nu(kind) {
        None => 0.5 * d * LN_PI + d * l.ln() - r * r / (4.0 * l * l),
        Some(two_nu) => {
            let nu = two_nu as f64 / 2.0;
            let a = (2.0 * nu).sqrt() / l;
            let ln_c = (0.5 * d - 2.0 * nu + 1.0) * std::f64::consts::LN_2
                + 0.5 * d * LN_PI
                + 2.0 * ln_gamma(nu + 0.5 * d)
                - ln_gamma(2.0 * nu + d)
                - 2.0 * ln_gamma(nu);
            // 2μ = 4ν + d.
            ln_c - d * a.ln() + ln_power_bessel_k(2 * two_nu + dim, a * r)
        }
    };
    ln_value.exp()
}

/// Polynomial p with `k(s) = p(c|s|) e^{−c|s|}` for a Matérn kind, and its rate c = √(2ν)/l.
fn matern_poly(kind: KernelKind, l: f64) -> Option<([f64; 3], f64)> {
    match kind {
        KernelKind::Matern12 => Some(([1.0, 0.0, 0.0], 1.0 / l)),
        KernelKind::Matern32 => Some(([1.0, 1.0, 0.0], 3f64.sqrt() / l)),
        KernelKind::Matern52 => Some(([1.0, 1.0, 1.0 / 3.0], 5f64.sqrt() / l)),
        KernelKind::Rbf => None,
    }
}

/// Coefficients of `x ↦ p(x + s)`.
fn shift(p: [f64; 3], s: f64) -> [f64; 3] {
    [p[0] + p[1] * s + p[2] * s * s, p[1] + 2.0 * p[2] * s, p[2]]
}

/// Coefficients of `x ↦ p(e − x)`.
fn reflect(p: [f64; 3], e: f64) -> [f64; 3] {
    [p[0] + p[1] * e + p[2] * e * e, -p[1] - 2.0 * p[2] * e, p[2]]
}

fn mul(a: [f64; 3], b: [f64; 3]) -> [f64; 5] {
    let mut out = [0.0; 5];
    for (i, ai) in a.iter().enumerate() {
        for (j, bj) in b.iter().enumerate() {
            out[i + j] += ai * bj;
        }
    }
    out
}

/// `∫_0^X q(x) e^{−2x} dx` for X ∈ (0, ∞], using `∫_0^X x^k e^{−2x} dx
/// = k!/2^{k+1} (1 − e^{−2X} Σ_{m≤k} (2X)^m/m!)`.
fn exp_moments(q: [f64; 5], x_max: f64) -> f64 {
    let tail = if x_max.is_finite() {
        (-2.0 * x_max).exp()
    } else {
        0.0
    };
    let mut total = 0.0;
    let mut factorial = 1.0; // k!
    let mut partial = 0.0; // Σ_{m≤k} (2X)^m/m!
    let mut power = 1.0; // (2X)^k/k!
    for (k, qk) in q.iter().enumerate() {
        if k > 0 {
            factorial *= k as f64;
            power *= 2.0 * x_max / k as f64;
        }
        if tail > 0.0 {
            partial += power;
        }
        let moment = factorial / 2f64.powi(k as i32 + 1) * (1.0 - tail * partial);
        total += qk * moment;
    }
    total
}

/// `∫_{x0}^{x1} q(x) dx`.
fn poly_integral(q: [f64; 5], x0: f64, x1: f64) -> f64 {
    let mut total = 0.0;
    let (mut p0, mut p1) = (x0, x1);
    for (k, qk) in q.iter().enumerate() {
        total += qk * (p1 - p0) / (k + 1) as f64;
        p0 *= x0;
        p1 *= x1;
    }
    total
}

/// `∫_{t0}^{∞} k_T(|t−t_i|/l) k_T(|t−t_j|/l) dt`, the temporal factor of C⁺.
///
/// With `u = t0 − t_i`, `v = t0 − t_j` (closed forms, checked against quadrature below):
/// - Matérn-1/2 (c = 1/l): `e^{−c(u+v)}/(2c)`;
/// - Matérn-3/2 (c = √3/l, A = 1+cu, B = 1+cv): `e^{−c(u+v)} (2AB + A + B + 1)/(4c)`;
/// - Matérn-5/2 (c = √5/l, k = p(c|s|)e^{−c|s|}, p(x) = 1 + x + x²/3): with
///   `p(x + cu) = a0 + a1 x + x²/3`, `p(x + cv) = b0 + b1 x + x²/3` and `q = p(·+cu) p(·+cv)`,
///   `e^{−c(u+v)}/c · Σ_k q_k k!/2^{k+1}`
///   `= e^{−c(u+v)}/c · [a0b0/2 + (a0b1+a1b0)/4 + (a0/3 + a1b1 + b0/3)/4 + (a1+b1)/8 + 1/12]`;
/// - RBF: `(√π l/2) e^{−(t_i−t_j)²/(4l²)} erfc((u+v)/(2l))` (valid for any t_i, t_j).
///
/// The Matérn forms hold for `t_i, t_j ≤ t0`. Otherwise (e.g. client-time replays) the
/// range is split at the observation times above t0: above both times the same form
/// applies from `max(t_i, t_j)`; between them `|t−t_i| + |t−t_j|` is constant and the
/// integrand is a polynomial; below both it is a polynomial times `e^{2ct}`; each piece
/// is integrated exactly. Contract: `lengthscale > 0`; the result is ≥ 0.
pub fn temporal_factor(kind: KernelKind, lengthscale: f64, t_i: f64, t_j: f64, t0: f64) -> f64 {
    debug_assert!(lengthscale > 0.0);
    let l = lengthscale;
    let Some((p, c)) = matern_poly(kind, l) else {
        let m = 0.5 * (t_i + t_j);
        let d = t_i - t_j;
        return 0.5
            * std::f64::consts::PI.sqrt()
            * l
            * (-d * d / (4.0 * l * l)).exp()
            * erfc((t0 - m) / l);
    };
    let (lo, hi) = if t_i <= t_j { (t_i, t_j) } else { (t_j, t_i) };
    // Above max(t0, hi): both distances grow; x = c(t − top).
    let top = t0.max(hi);
    let (a, b) = (c * (top - lo), c * (top - hi));
    let mut total = (-(a + b)).exp() * exp_moments(mul(shift(p, a), shift(p, b)), f64::INFINITY);
    if t0 < hi {
        // Between max(t0, lo) and hi: x = c(t − lo), |t−hi| = (D − x)/c with D = c(hi − lo).
        let big_d = c * (hi - lo);
        let x0 = c * (t0.max(lo) - lo);
        total += (-big_d).exp() * poly_integral(mul(p, reflect(p, big_d)), x0, big_d);
        if t0 < lo {
            // Between t0 and lo: w = c(lo − t), distances w and D + w.
            let w_max = c * (lo - t0);
            total += (-big_d).exp() * exp_moments(mul(p, shift(p, big_d)), w_max);
        }
    }
    (total / c).max(0.0)
}

/// Relevance state of a dataset at time t0: P, C⁺, and Q = P C⁺ P kept up to date so that
/// removing an observation costs O(n²).
///
/// Invariants: `p` is `(K + (σ² + jitter) I)⁻¹` of the remaining observations, `c` their
/// C⁺ (λ² included), `q = p c p`, `alpha = p ys`.
#[derive(Clone, Debug)]
pub struct Relevance {
    p: DMatrix<f64>,
    c: DMatrix<f64>,
    q: DMatrix<f64>,
    ys: Vec<f64>,
    alpha: Vec<f64>,
}

impl Relevance {
    /// O(n³): one inverse from the GP's Cholesky factor, C⁺, Q.
    ///
    /// Uses the GP's stored data, hyperparameters and factor (including its jitter).
    /// With no temporal kernel the model is static and the temporal factor, the same
    /// (divergent) constant for every pair, is taken as 1: it cancels in `R_i`.
    /// Errors with [`GpError::NonFinite`] when `t0` is not finite.
    pub fn new(gp: &Gp, t0: f64) -> Result<Relevance, GpError> {
        if !t0.is_finite() {
            return Err(GpError::NonFinite);
        }
        let n = gp.len();
        let h = gp.hyperparameters();
        let spec = gp.spec();
        let lambda2 = h.signal_variance * h.signal_variance;
        let (xs, ts) = (gp.xs(), gp.ts());
        // The integral over the inputs is over ℝ^{d_c} for the continuous coordinates
        // (none: a factor 1) and a sum over every combination of choices for the
        // categorical ones
        // ([`super::categories::Categories::overlap_integral`]).
        let categories = spec.categories;
        let continuous_dim = categories.continuous_dim(gp.dim());
        let mut c = DMatrix::<f64>::zeros(n, n);
        // In the scaled coordinates, where the kernel is isotropic with l_S; the integral
        // over them is the one over the inputs times Π ρ_d, a constant that cancels in R_i.
        let scaled: Vec<_> = xs.iter().map(|x| gp.scaled(x)).collect();
        for j in 0..n {
            for i in j..n {
                let (squared, _) = spec.distances(&scaled[i], &scaled[j]);
                let s = if continuous_dim == 0 {
                    1.0
                } else {
                    spatial_factor(
                        spec.spatial,
                        h.spatial_lengthscale,
                        continuous_dim,
                        squared.sqrt(),
                    )
                };
                let categorical =
                    categories.overlap_integral(&xs[i], &xs[j], h.categorical_lengthscale);
                let t = spec.temporal.map_or(1.0, |k| {
                    temporal_factor(k, h.temporal_lengthscale, ts[i], ts[j], t0)
                });
                let v = lambda2 * s * categorical * t;
                c[(i, j)] = v;
                c[(j, i)] = v;
            }
        }
        let p = if n == 0 {
            DMatrix::zeros(0, 0)
        } else {
            linalg::inverse_from_cholesky(gp.cholesky_factor())
        };
        let cp = &c * &p;
        let mut q = &p * cp;
        symmetrise(&mut q);
        let ys = gp.ys().to_vec();
        let alpha = mat_vec(&p, &ys);
        Ok(Relevance { p, c, q, ys, alpha })
    }

    /// Number of remaining observations.
    pub fn len(&self) -> usize {
        self.ys.len()
    }

    /// True when no observation remains.
    pub fn is_empty(&self) -> bool {
        self.ys.is_empty()
    }

    /// R_i of every remaining observation, in the GP's order (O(n²) given the cached
    /// state). Each value is in `[0, ∞)`; round-off negatives are clamped to 0, and when
    /// `W̄²_∅ = 0` (nothing in the dataset informs the future) every value is 0.
    pub fn values(&self) -> Vec<f64> {
        let n = self.len();
        let ca = mat_vec(&self.c, &self.alpha);
        let quad = linalg::dot(&self.alpha, &ca);
        let trace = linalg::dot(self.p.as_slice(), self.c.as_slice());
        let empty = quad + trace;
        if !(empty > 0.0 && empty.is_finite()) {
            return vec![0.0; n];
        }
        (0..n)
            .map(|i| {
                let pii = self.p[(i, i)];
                if pii.is_nan() || pii <= 0.0 {
                    return 0.0;
                }
                let a = self.alpha[i];
                let w = (a * a + pii) / (pii * pii) * self.q[(i, i)];
                (w / empty).max(0.0).sqrt()
            })
            .collect()
    }

    /// Index (into the current order) and value of the least relevant observation; the
    /// lowest index among ties; `None` when empty.
    pub fn least_relevant(&self) -> Option<(usize, f64)> {
        self.values()
            .into_iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Removes observation `index` in O(n²): Schur-complement downdate of P, drop
    /// row/column of C⁺, rank-two update of Q, α recomputed as P y.
    ///
    /// With `p = P e_k`, `π = P_kk`, `P̃ = P − p pᵀ/π` vanishes on row/column k and equals
    /// the inverse of the reduced kernel matrix elsewhere, so
    /// `Q̃ = P̃ C⁺ P̃ = Q − (p q_kᵀ + q_k pᵀ)/π + p pᵀ Q_kk/π²` with `q_k = Q e_k`.
    ///
    /// # Panics
    /// When `index >= self.len()`.
    pub fn remove(&mut self, index: usize) {
        let n = self.len();
        assert!(index < n, "index {index} out of range for {n} observations");
        let pk: Vec<f64> = self.p.column(index).iter().copied().collect();
        let qk: Vec<f64> = self.q.column(index).iter().copied().collect();
        let pi = pk[index];
        let qkk = qk[index];
        compact(&mut self.p, index, |i, j, v| v - pk[i] * pk[j] / pi);
        compact(&mut self.q, index, |i, j, v| {
            v - (pk[i] * qk[j] + qk[i] * pk[j]) / pi + pk[i] * pk[j] * qkk / (pi * pi)
        });
        compact(&mut self.c, index, |_, _, v| v);
        self.ys.remove(index);
        self.alpha = mat_vec(&self.p, &self.ys);
    }
}

/// Convenience: all relevances at time t0 in O(n³).
pub fn relevances(gp: &Gp, t0: f64) -> Result<Vec<f64>, GpError> {
    Ok(Relevance::new(gp, t0)?.values())
}

fn mat_vec(m: &DMatrix<f64>, v: &[f64]) -> Vec<f64> {
    // m is symmetric: column j dotted with v gives (m v)_j with contiguous access.
    let n = v.len();
    if n == 0 {
        return Vec::new();
    }
    m.as_slice()
        .chunks_exact(n)
        .map(|col| linalg::dot(col, v))
        .collect()
}

/// Deletes row and column `index` of the square matrix `m` in place, in one pass,
/// storing `update(i, j, m[(i, j)])` (old indices) for every kept entry. Column-major
/// compaction only moves entries to lower addresses, and each is read before its slot
/// can be overwritten.
fn compact(m: &mut DMatrix<f64>, index: usize, update: impl Fn(usize, usize, f64) -> f64) {
    let n = m.nrows();
    let mut data: Vec<f64> = std::mem::replace(m, DMatrix::zeros(0, 0)).data.into();
    let mut w = 0;
    for j in (0..n).filter(|&j| j != index) {
        let base = j * n;
        for i in (0..index).chain(index + 1..n) {
            data[w] = update(i, j, data[base + i]);
            w += 1;
        }
    }
    data.truncate(w);
    *m = DMatrix::from_vec(n - 1, n - 1, data);
}

fn symmetrise(m: &mut DMatrix<f64>) {
    let n = m.nrows();
    for j in 0..n {
        for i in j + 1..n {
            let v = 0.5 * (m[(i, j)] + m[(j, i)]);
            m[(i, j)] = v;
            m[(j, i)] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::{Hyperparameters, KernelSpec};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Adaptive Simpson with Richardson extrapolation; `tol` is absolute.
    fn simpson(f: &dyn Fn(f64) -> f64, a: f64, b: f64, tol: f64) -> f64 {
        #[allow(clippy::too_many_arguments)]
        fn rec(
            f: &dyn Fn(f64) -> f64,
            a: f64,
            b: f64,
            fa: f64,
            fm: f64,
            fb: f64,
            whole: f64,
            tol: f64,
            depth: u32,
        ) -> f64 {
            let m = 0.5 * (a + b);
            let (lm, rm) = (0.5 * (a + m), 0.5 * (m + b));
            let (flm, frm) = (f(lm), f(rm));
            let left = (m - a) / 6.0 * (fa + 4.0 * flm + fm);
            let right = (b - m) / 6.0 * (fm + 4.0 * frm + fb);
            let delta = left + right - whole;
            if depth == 0 || delta.abs() <= 15.0 * tol {
                left + right + delta / 15.0
            } else {
                rec(f, a, m, fa, flm, fm, left, 0.5 * tol, depth - 1)
                    + rec(f, m, b, fm, frm, fb, right, 0.5 * tol, depth - 1)
            }
        }
        // Start from 8 panels so that narrow features are not missed.
        let panels = 8;
        let h = (b - a) / panels as f64;
        (0..panels)
            .map(|k| {
                let (x0, x1) = (a + k as f64 * h, a + (k + 1) as f64 * h);
                let (f0, fm, f1) = (f(x0), f(0.5 * (x0 + x1)), f(x1));
                let whole = (x1 - x0) / 6.0 * (f0 + 4.0 * fm + f1);
                rec(f, x0, x1, f0, fm, f1, whole, tol / panels as f64, 40)
            })
            .sum()
    }

    /// ∫_{ℝ^d} k(‖x‖) k(‖x − b‖) dx with ‖b‖ = r at unit lengthscale, reduced to
    /// (ρ, θ) coordinates around a: dx = S_{d−2} ρ^{d−1} sin^{d−2}θ dρ dθ, S_{d−2} the
    /// area of the unit (d−2)-sphere; for d = 1 a plain line integral.
    fn spatial_quadrature(kind: KernelKind, dim: usize, r: f64) -> f64 {
        let k = |s: f64| kind.correlation(s);
        let reach = 60.0;
        if dim == 1 {
            let f = |x: f64| k(x.abs()) * k((x - r).abs());
            let mut total = simpson(&f, -reach, 0.0, 1e-13) + simpson(&f, r, r + reach, 1e-13);
            if r > 0.0 {
                total += simpson(&f, 0.0, r, 1e-13);
            }
            return total;
        }
        let d = dim as f64;
        let sphere = 2.0 * std::f64::consts::PI.powf((d - 1.0) / 2.0)
            / statrs::function::gamma::gamma((d - 1.0) / 2.0);
        let radial = |rho: f64| {
            if rho == 0.0 && dim > 1 {
                return 0.0;
            }
            let inner = |theta: f64| {
                let s2 = (rho * rho + r * r - 2.0 * rho * r * theta.cos()).max(0.0);
                k(s2.sqrt()) * theta.sin().powi(dim as i32 - 2)
            };
            let scale = k(rho) * rho.powi(dim as i32 - 1);
            if scale == 0.0 {
                return 0.0;
            }
            scale * simpson(&inner, 0.0, std::f64::consts::PI, 1e-12)
        };
        let mut total = simpson(&radial, r, r + reach, 1e-11);
        if r > 0.0 {
            total += simpson(&radial, 0.0, r, 1e-11);
        }
        sphere * total
    }

    #[test]
    fn spatial_factor_matches_quadrature() {
        for kind in KernelKind::ALL {
            for dim in [1usize, 2, 3, 6] {
                let l = match dim {
                    1 | 2 => 0.1,
                    3 => 0.2,
                    _ => 0.3,
                };
                for rl in [0.0, 0.3, 1.0, 2.5, 5.0] {
                    let got = spatial_factor(kind, l, dim, rl * l);
                    let expect = l.powi(dim as i32) * spatial_quadrature(kind, dim, rl);
                    assert!(
                        (got - expect).abs() <= 1e-6 * expect,
                        "{kind:?} d={dim} r/l={rl}: {got} vs {expect}"
                    );
                }
            }
        }
    }

    #[test]
    fn spatial_factor_is_finite_in_high_dimension_and_decreasing() {
        for kind in KernelKind::ALL {
            for dim in 1..=32usize {
                let mut prev = f64::INFINITY;
                for k in 0..200 {
                    let r = k as f64 * 0.05;
                    let v = spatial_factor(kind, 0.1, dim, r);
                    assert!(v.is_finite() && v >= 0.0, "{kind:?} {dim} {r}");
                    assert!(
                        v <= prev * (1.0 + 1e-12),
                        "{kind:?} d={dim} not decreasing at {r}"
                    );
                    prev = v;
                }
                let wide = spatial_factor(kind, 10.0, dim, 0.0);
                assert!(wide.is_finite() && wide > 1.0, "{kind:?} {dim}: {wide}");
            }
        }
        // r → 0 is continuous with the closed-form limit at r = 0.
        for kind in KernelKind::ALL {
            for dim in [2usize, 5, 16, 31, 32] {
                let l = 0.02;
                let at0 = spatial_factor(kind, l, dim, 0.0);
                let near = spatial_factor(kind, l, dim, 1e-7 * l);
                assert!(
                    (at0 - near).abs() <= 1e-6 * at0,
                    "{kind:?} {dim}: {at0} {near}"
                );
            }
        }
    }

    fn temporal_quadrature(kind: KernelKind, l: f64, ti: f64, tj: f64, t0: f64) -> f64 {
        let f =
            |t: f64| kind.correlation((t - ti).abs() / l) * kind.correlation((t - tj).abs() / l);
        let end = t0.max(ti).max(tj) + 60.0 * l;
        let mut cuts = vec![t0];
        for t in [ti, tj] {
            if t > t0 {
                cuts.push(t);
            }
        }
        cuts.push(end);
        cuts.sort_by(f64::total_cmp);
        cuts.windows(2)
            .map(|w| simpson(&f, w[0], w[1], 1e-14 * l))
            .sum()
    }

    #[test]
    fn temporal_factor_matches_quadrature() {
        let l = 3.0;
        let t0 = 10.0;
        let cases = [
            (10.0, 10.0),
            (9.0, 10.0),
            (7.5, 2.0),
            (0.0, 0.5),
            (-5.0, 9.9),
            (12.0, 8.0),
            (11.0, 14.0),
            (13.0, 13.0),
            (10.5, 10.5),
        ];
        for kind in KernelKind::ALL {
            for (ti, tj) in cases {
                let got = temporal_factor(kind, l, ti, tj, t0);
                let sym = temporal_factor(kind, l, tj, ti, t0);
                let expect = temporal_quadrature(kind, l, ti, tj, t0);
                assert!(
                    (got - expect).abs() <= 1e-6 * expect,
                    "{kind:?} ({ti}, {tj}): {got} vs {expect}"
                );
                assert!((got - sym).abs() <= 1e-14 * got);
            }
        }
        // The explicit forms for t_i, t_j ≤ t0.
        let (ti, tj) = (7.0, 4.0);
        let (u, v) = (t0 - ti, t0 - tj);
        let c = 1.0 / l;
        let m12 = (-c * (u + v)).exp() / (2.0 * c);
        assert!((temporal_factor(KernelKind::Matern12, l, ti, tj, t0) - m12).abs() < 1e-14);
        let c = 3f64.sqrt() / l;
        let (a, b) = (1.0 + c * u, 1.0 + c * v);
        let m32 = (-c * (u + v)).exp() * (2.0 * a * b + a + b + 1.0) / (4.0 * c);
        assert!((temporal_factor(KernelKind::Matern32, l, ti, tj, t0) - m32).abs() < 1e-14);
        let c = 5f64.sqrt() / l;
        let (ca, cb) = (c * u, c * v);
        let (a0, a1) = (1.0 + ca + ca * ca / 3.0, 1.0 + 2.0 * ca / 3.0);
        let (b0, b1) = (1.0 + cb + cb * cb / 3.0, 1.0 + 2.0 * cb / 3.0);
        let m52 = (-c * (u + v)).exp() / c
            * (a0 * b0 / 2.0
                + (a0 * b1 + a1 * b0) / 4.0
                + (a0 / 3.0 + a1 * b1 + b0 / 3.0) / 4.0
                + (a1 + b1) / 8.0
                + 1.0 / 12.0);
        assert!((temporal_factor(KernelKind::Matern52, l, ti, tj, t0) - m52).abs() < 1e-14);
    }

    fn random_gp(spec: KernelSpec, hyper: Hyperparameters, dim: usize, n: usize, seed: u64) -> Gp {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let xs: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
            .collect();
        let ts: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 10.0).collect();
        let ys: Vec<f64> = xs
            .iter()
            .zip(&ts)
            .map(|(x, t)| (6.0 * x[0] + 0.3 * t).sin() + 0.1 * rng.random::<f64>())
            .collect();
        Gp::new(spec, hyper, dim, xs, ts, ys).unwrap()
    }

    /// Composite Simpson weights on `m` (odd) equispaced nodes over [a, b].
    fn simpson_grid(a: f64, b: f64, m: usize) -> Vec<(f64, f64)> {
        let h = (b - a) / (m - 1) as f64;
        (0..m)
            .map(|k| {
                let w = if k == 0 || k == m - 1 {
                    1.0
                } else if k % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                (a + k as f64 * h, w * h / 3.0)
            })
            .collect()
    }

    #[test]
    fn wasserstein_matches_brute_force_integral() {
        let hyper = Hyperparameters {
            signal_variance: 1.7,
            spatial_lengthscale: 0.1,
            temporal_lengthscale: 2.0,
            noise_variance: 0.05,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: Default::default(),
            level: None,
        };
        let t0 = 10.0;
        for (spec, seed) in [
            (
                KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32)),
                1,
            ),
            (
                KernelSpec::new(KernelKind::Rbf, Some(KernelKind::Matern52)),
                2,
            ),
            (
                KernelSpec::new(KernelKind::Matern32, Some(KernelKind::Rbf)),
                3,
            ),
        ] {
            let gp = random_gp(spec, hyper, 1, 7, seed);
            let rel = Relevance::new(&gp, t0).unwrap();
            let values = rel.values();
            // x over ℝ (data in [0,1], 20 lengthscales of margin), t over [t0, t0 + 20 l_T];
            // the t grid needs h = l_T/40 for 1e-5 (at l_T/10 the RBF-in-time case is off by 2e-5).
            let xgrid = simpson_grid(-2.0, 3.0, 1001);
            let tgrid = simpson_grid(t0, t0 + 40.0, 1601);
            let full: Vec<Vec<(f64, f64)>> = tgrid
                .iter()
                .map(|&(t, _)| xgrid.iter().map(|&(x, _)| gp.predict(&[x], t)).collect())
                .collect();
            let mut empty = 0.0;
            for (row, &(_, wt)) in full.iter().zip(&tgrid) {
                for (&(mu, var), &(_, wx)) in row.iter().zip(&xgrid) {
                    empty += wt * wx * (mu * mu + hyper.signal_variance - var);
                }
            }
            for (i, &value) in values.iter().enumerate() {
                let mut reduced = gp.clone();
                reduced.remove(i).unwrap();
                let (mut w2, mut w2_std) = (0.0, 0.0);
                for (row, &(t, wt)) in full.iter().zip(&tgrid) {
                    for (&(mu, var), &(x, wx)) in row.iter().zip(&xgrid) {
                        let (mu2, var2) = reduced.predict(&[x], t);
                        let dm = mu - mu2;
                        w2 += wt * wx * (dm * dm + var2 - var);
                        let ds = var2.sqrt() - var.sqrt();
                        w2_std += wt * wx * (dm * dm + ds * ds);
                    }
                }
                let expect = (w2 / empty).sqrt();
                assert!(
                    (value - expect).abs() <= 1e-5 * expect,
                    "{spec:?} i={i}: {value} vs {expect}"
                );
                // The closed form bounds BOLT's exact (σ-difference) distance from above.
                assert!(w2_std <= w2 * (1.0 + 1e-9));
            }
        }
    }

    /// With a categorical input of 3 choices beside a continuous one (static model), the
    /// closed form against the integral over x of the sum over the choices.
    #[test]
    fn wasserstein_with_categories_matches_brute_force() {
        let hyper = Hyperparameters {
            signal_variance: 1.3,
            spatial_lengthscale: 0.12,
            noise_variance: 0.05,
            categorical_lengthscale: 0.8,
            ..Hyperparameters::default()
        };
        let spec = KernelSpec::new(KernelKind::Matern52, None)
            .with_categories(crate::gp::Categories::new(&[0, 3]));
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let centre = |k: usize| (k as f64 + 0.5) / 3.0;
        let xs: Vec<Vec<f64>> = (0..8)
            .map(|_| vec![rng.random::<f64>(), centre(rng.random_range(0..3))])
            .collect();
        let ys: Vec<f64> = xs.iter().map(|x| (6.0 * x[0]).sin() + x[1]).collect();
        let gp = Gp::new(spec, hyper, 2, xs, vec![0.0; 8], ys).unwrap();
        let values = Relevance::new(&gp, 0.0).unwrap().values();
        let xgrid = simpson_grid(-2.0, 3.0, 2001);
        let points: Vec<Vec<f64>> = (0..3)
            .flat_map(|k| xgrid.iter().map(move |&(x, _)| vec![x, centre(k)]))
            .collect();
        let weights: Vec<f64> = (0..3).flat_map(|_| xgrid.iter().map(|&(_, w)| w)).collect();
        let full = gp.predict_many(&points, 0.0);
        let empty: f64 = full
            .iter()
            .zip(&weights)
            .map(|(&(mu, var), w)| w * (mu * mu + hyper.signal_variance - var))
            .sum();
        for (i, &value) in values.iter().enumerate() {
            let mut reduced = gp.clone();
            reduced.remove(i).unwrap();
            let w2: f64 = reduced
                .predict_many(&points, 0.0)
                .iter()
                .zip(&full)
                .zip(&weights)
                .map(|((&(mu2, var2), &(mu, var)), w)| w * ((mu - mu2).powi(2) + var2 - var))
                .sum();
            let expect = (w2 / empty).sqrt();
            assert!(
                (value - expect).abs() <= 1e-6 * expect,
                "i={i}: {value} vs {expect}"
            );
        }
    }

    /// With a drifting level, the closed form against the integral of the
    /// spatio-temporal component's posterior, mean k_S(z)ᵀK⁻¹y and variance
    /// λ − k_S(z)ᵀK⁻¹k_S(z), with K the full kernel's matrix (a dense solve here), with
    /// and without each observation.
    #[test]
    fn wasserstein_with_a_drifting_level_is_the_shapes() {
        let hyper = Hyperparameters {
            signal_variance: 1.7,
            spatial_lengthscale: 0.1,
            temporal_lengthscale: 2.0,
            noise_variance: 0.05,
            level: Some(crate::gp::DriftingLevel {
                variance: 0.9,
                lengthscale: 1.5,
            }),
            ..Hyperparameters::default()
        };
        let spec = KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32));
        let t0 = 10.0;
        let gp = random_gp(spec, hyper, 1, 7, 4);
        let values = Relevance::new(&gp, t0).unwrap().values();
        let (xs, ts, ys) = (gp.xs(), gp.ts(), gp.ys());
        let shape = |x: f64, t: f64, j: usize| {
            let r = (x - xs[j][0]).abs() / hyper.spatial_lengthscale;
            let dt = (t - ts[j]).abs() / hyper.temporal_lengthscale;
            hyper.signal_variance
                * KernelKind::Matern52.correlation(r)
                * KernelKind::Matern32.correlation(dt)
        };
        // The shape's posterior (mean, variance) on the grid from the observations `kept`.
        let xgrid = simpson_grid(-2.0, 3.0, 1001);
        let tgrid = simpson_grid(t0, t0 + 40.0, 801);
        let posterior = |kept: &[usize]| -> Vec<(f64, f64)> {
            let m = kept.len();
            let k = DMatrix::from_fn(m, m, |a, b| {
                let (i, j) = (kept[a], kept[b]);
                gp.kernel(&xs[i], ts[i], &xs[j], ts[j])
                    + if a == b { hyper.noise_variance } else { 0.0 }
            });
            let kinv = k.try_inverse().unwrap();
            let alpha = &kinv * nalgebra::DVector::from_iterator(m, kept.iter().map(|&i| ys[i]));
            let mut out = Vec::with_capacity(xgrid.len() * tgrid.len());
            for &(t, _) in &tgrid {
                for &(x, _) in &xgrid {
                    let ks =
                        nalgebra::DVector::from_iterator(m, kept.iter().map(|&j| shape(x, t, j)));
                    out.push((
                        ks.dot(&alpha),
                        hyper.signal_variance - ks.dot(&(&kinv * &ks)),
                    ));
                }
            }
            out
        };
        let weights: Vec<f64> = tgrid
            .iter()
            .flat_map(|&(_, wt)| xgrid.iter().map(move |&(_, wx)| wt * wx))
            .collect();
        let all: Vec<usize> = (0..gp.len()).collect();
        let full = posterior(&all);
        let empty: f64 = full
            .iter()
            .zip(&weights)
            .map(|(&(mu, var), w)| w * (mu * mu + hyper.signal_variance - var))
            .sum();
        for (i, &value) in values.iter().enumerate() {
            let kept: Vec<usize> = all.iter().copied().filter(|&j| j != i).collect();
            let w2: f64 = posterior(&kept)
                .iter()
                .zip(&full)
                .zip(&weights)
                .map(|((&(mu2, var2), &(mu, var)), w)| w * ((mu - mu2).powi(2) + var2 - var))
                .sum();
            let expect = (w2 / empty).sqrt();
            assert!(
                (value - expect).abs() <= 1e-4 * expect,
                "i={i}: {value} vs {expect}"
            );
        }
    }

    #[test]
    fn remove_matches_rebuild() {
        let hyper = Hyperparameters {
            signal_variance: 1.3,
            spatial_lengthscale: 0.25,
            temporal_lengthscale: 4.0,
            noise_variance: 0.01,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: Default::default(),
            level: None,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        for (spec, dim) in [
            (KernelSpec::default(), 3usize),
            (
                KernelSpec::new(KernelKind::Rbf, Some(KernelKind::Matern12)),
                2,
            ),
            (KernelSpec::new(KernelKind::Matern12, None), 4),
        ] {
            let mut gp = random_gp(spec, hyper, dim, 40, dim as u64);
            let t0 = 9.0;
            let mut rel = Relevance::new(&gp, t0).unwrap();
            assert_eq!(rel.values(), relevances(&gp, t0).unwrap());
            while rel.len() > 1 {
                let index = rng.random_range(0..rel.len());
                rel.remove(index);
                gp.remove(index).unwrap();
                let fresh = Relevance::new(&gp, t0).unwrap().values();
                let got = rel.values();
                assert_eq!(got.len(), fresh.len());
                for (a, b) in got.iter().zip(&fresh) {
                    assert!((a - b).abs() <= 1e-8 * b.max(1e-3), "{spec:?}: {a} vs {b}");
                }
                let (k, v) = rel.least_relevant().unwrap();
                assert!(got.iter().all(|&g| g >= v) && got[k] == v);
            }
        }
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        let gp = Gp::new(
            KernelSpec::default(),
            Hyperparameters::default(),
            2,
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
        let rel = Relevance::new(&gp, 0.0).unwrap();
        assert!(rel.is_empty() && rel.values().is_empty() && rel.least_relevant().is_none());
        assert!(Relevance::new(&gp, f64::NAN).is_err());
        // Observations far in the past inform nothing: W̄²_∅ underflows to 0.
        let hyper = Hyperparameters {
            temporal_lengthscale: 1.0,
            ..Hyperparameters::default()
        };
        let gp = random_gp(KernelSpec::default(), hyper, 2, 5, 4);
        assert_eq!(relevances(&gp, 1e6).unwrap(), vec![0.0; 5]);
    }
}
