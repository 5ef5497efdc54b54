//! Dense kernels on column-major lower-triangular factors, written so that every inner
//! loop runs over a contiguous column slice.

use nalgebra::DMatrix;

/// Smallest accepted pivot² relative to the matrix diagonal entry it came from; below
/// this the factor has lost essentially all significant digits.
pub(crate) const MIN_RELATIVE_PIVOT: f64 = 1e-12;

/// Block size of the blocked factorisation and inversion: panels are factorised
/// column by column, trailing updates go through the SIMD matrix product.
const BLOCK: usize = 64;

/// Overwrites the lower triangle of the symmetric matrix `a` with its Cholesky factor L
/// (A = L Lᵀ) and zeroes the strict upper triangle. Returns false, leaving `a` in an
/// unspecified state, when a pivot is not finite or below [`MIN_RELATIVE_PIVOT`] times
/// its diagonal entry.
pub(crate) fn cholesky_in_place(a: &mut DMatrix<f64>) -> bool {
    let n = a.nrows();
    debug_assert_eq!(n, a.ncols());
    let original: Vec<f64> = a.diagonal().iter().copied().collect();
    let mut k0 = 0;
    while k0 < n {
        let kb = BLOCK.min(n - k0);
        if !factor_panel(a, k0, kb, &original) {
            return false;
        }
        let rest = n - k0 - kb;
        if rest > 0 {
            // A22 −= P Pᵀ on the lower triangle, one column strip at a time.
            let panel = a.view((k0 + kb, k0), (rest, kb)).clone_owned();
            let mut c0 = 0;
            while c0 < rest {
                let cb = BLOCK.min(rest - c0);
                a.view_mut((k0 + kb + c0, k0 + kb + c0), (rest - c0, cb))
                    .gemm(
                        -1.0,
                        &panel.rows(c0, rest - c0),
                        &panel.rows(c0, cb).transpose(),
                        1.0,
                    );
                c0 += cb;
            }
        }
        k0 += kb;
    }
    let data = a.as_mut_slice();
    for j in 0..n {
        data[j * n..j * n + j].fill(0.0);
    }
    true
}

/// Left-looking Cholesky of columns k0..k0+kb (all rows below the diagonal), using only
/// the contributions of earlier columns of the same panel.
fn factor_panel(a: &mut DMatrix<f64>, k0: usize, kb: usize, original: &[f64]) -> bool {
    let n = a.nrows();
    let data = a.as_mut_slice();
    for j in k0..k0 + kb {
        let (done, rest) = data.split_at_mut(j * n);
        let col_j = &mut rest[..n];
        for k in k0..j {
            let col_k = &done[k * n..(k + 1) * n];
            let ljk = col_k[j];
            if ljk != 0.0 {
                for (c, &l) in col_j[j..].iter_mut().zip(&col_k[j..]) {
                    *c -= ljk * l;
                }
            }
        }
        let d = col_j[j];
        if !(d > MIN_RELATIVE_PIVOT * original[j] && d > 0.0 && d.is_finite()) {
            return false;
        }
        let d = d.sqrt();
        col_j[j] = d;
        let inv = 1.0 / d;
        for c in &mut col_j[j + 1..] {
            *c *= inv;
        }
    }
    true
}

/// Solves L z = b in place (L lower triangular, the leading `b.len()` block of `l`).
pub(crate) fn forward_solve(l: &DMatrix<f64>, b: &mut [f64]) {
    let n = b.len();
    let nr = l.nrows();
    let data = l.as_slice();
    for j in 0..n {
        let col = &data[j * nr..j * nr + n];
        let z = b[j] / col[j];
        b[j] = z;
        if z != 0.0 {
            for (bi, &lij) in b[j + 1..].iter_mut().zip(&col[j + 1..]) {
                *bi -= z * lij;
            }
        }
    }
}

/// Solves Lᵀ w = b in place.
pub(crate) fn backward_solve_transposed(l: &DMatrix<f64>, b: &mut [f64]) {
    let n = b.len();
    let nr = l.nrows();
    let data = l.as_slice();
    for j in (0..n).rev() {
        let col = &data[j * nr..j * nr + n];
        let s = dot(&col[j + 1..], &b[j + 1..]);
        b[j] = (b[j] - s) / col[j];
    }
}

/// Solves L Z = B in place for every column of B.
pub(crate) fn forward_solve_matrix(l: &DMatrix<f64>, b: &mut DMatrix<f64>) {
    let n = b.nrows();
    if n == 0 {
        return;
    }
    for col in b.as_mut_slice().chunks_exact_mut(n) {
        forward_solve(l, col);
    }
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    // Four accumulators let the compiler vectorise without reassociation licence.
    let mut acc = [0.0f64; 4];
    let ca = a.chunks_exact(4);
    let cb = b.chunks_exact(4);
    let ra = ca.remainder();
    let rb = cb.remainder();
    for (x, y) in ca.zip(cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// The inverse of the lower-triangular L (itself lower triangular), by row blocks:
/// X[I, I] = L_II⁻¹ and X[I, :I] = −L_II⁻¹ (L[I, :I] X[:I, :I]), both products through
/// the matrix-product kernel.
pub(crate) fn lower_inverse(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    let mut x = DMatrix::<f64>::zeros(n, n);
    let mut i0 = 0;
    while i0 < n {
        let ib = BLOCK.min(n - i0);
        let diagonal_inverse = small_lower_inverse(&l.view((i0, i0), (ib, ib)).clone_owned());
        if i0 > 0 {
            let t = l.view((i0, 0), (ib, i0)) * x.view((0, 0), (i0, i0));
            x.view_mut((i0, 0), (ib, i0))
                .gemm(-1.0, &diagonal_inverse, &t, 0.0);
        }
        x.view_mut((i0, i0), (ib, ib)).copy_from(&diagonal_inverse);
        i0 += ib;
    }
    x
}

/// Column-by-column forward substitution against the identity, for small blocks.
fn small_lower_inverse(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    let mut inv = DMatrix::<f64>::zeros(n, n);
    let ld = l.as_slice();
    for (j, col) in inv
        .as_mut_slice()
        .chunks_exact_mut(n.max(1))
        .enumerate()
        .take(n)
    {
        col[j] = 1.0;
        for k in j..n {
            let lcol = &ld[k * n..(k + 1) * n];
            let z = col[k] / lcol[k];
            col[k] = z;
            if z != 0.0 {
                for (c, &lik) in col[k + 1..].iter_mut().zip(&lcol[k + 1..]) {
                    *c -= z * lik;
                }
            }
        }
    }
    inv
}

/// (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹ as a full symmetric matrix.
pub(crate) fn inverse_from_cholesky(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    let x = lower_inverse(l);
    let mut out = DMatrix::<f64>::zeros(n, n);
    let mut j0 = 0;
    while j0 < n {
        let jb = BLOCK.min(n - j0);
        let m = n - j0;
        // Column j of L⁻¹ vanishes above row j, so rows ≥ j0 carry the whole sum.
        out.view_mut((j0, j0), (m, jb)).gemm(
            1.0,
            &x.view((j0, j0), (m, m)).transpose(),
            &x.view((j0, j0), (m, jb)),
            0.0,
        );
        j0 += jb;
    }
    for j in 0..n {
        for i in 0..j {
            out[(i, j)] = out[(j, i)];
        }
    }
    out
}

/// Replaces L (m×m lower) by the factor of L Lᵀ + x xᵀ; `x` is destroyed. Returns false
/// when a non-finite or non-positive pivot appears.
pub(crate) fn rank_one_update(l: &mut DMatrix<f64>, x: &mut [f64]) -> bool {
    let m = l.nrows();
    debug_assert_eq!(x.len(), m);
    let data = l.as_mut_slice();
    for k in 0..m {
        let col = &mut data[k * m..(k + 1) * m];
        let lkk = col[k];
        let xk = x[k];
        let r = lkk.hypot(xk);
        if !(r > 0.0 && r.is_finite() && lkk > 0.0) {
            return false;
        }
        let c = r / lkk;
        let s = xk / lkk;
        col[k] = r;
        let inv_c = 1.0 / c;
        for (li, xi) in col[k + 1..].iter_mut().zip(&mut x[k + 1..]) {
            let new_l = (*li + s * *xi) * inv_c;
            *xi = c * *xi - s * new_l;
            *li = new_l;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_spd(n: usize, rng: &mut ChaCha8Rng) -> DMatrix<f64> {
        let a = DMatrix::from_fn(n, n, |_, _| rng.random::<f64>() - 0.5);
        &a * a.transpose() + DMatrix::identity(n, n) * 0.1
    }

    #[test]
    fn cholesky_matches_nalgebra() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for n in [0usize, 1, 2, 7, 30, 64, 65, 150] {
            let a = random_spd(n, &mut rng);
            let mut l = a.clone();
            assert!(cholesky_in_place(&mut l));
            if n > 0 {
                let reference = a.clone().cholesky().unwrap().l();
                assert!((&l - reference).amax() < 1e-10);
                let inv = inverse_from_cholesky(&l);
                let reference_inv = a.clone().try_inverse().unwrap();
                assert!((inv - &reference_inv).amax() < 1e-8 * reference_inv.amax());
                let li = lower_inverse(&l);
                assert!((&l * li - DMatrix::identity(n, n)).amax() < 1e-9);
            }
        }
        let mut not_pd = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 1.0]);
        assert!(!cholesky_in_place(&mut not_pd));
    }

    #[test]
    fn triangular_solves() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let n = 12;
        let a = random_spd(n, &mut rng);
        let mut l = a.clone();
        assert!(cholesky_in_place(&mut l));
        let b: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
        let mut z = b.clone();
        forward_solve(&l, &mut z);
        backward_solve_transposed(&l, &mut z);
        let reference = a.lu().solve(&nalgebra::DVector::from_vec(b)).unwrap();
        for i in 0..n {
            assert!((z[i] - reference[i]).abs() < 1e-9);
        }
    }

    #[test]
    fn rank_one_update_matches_refactorisation() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 15;
        let a = random_spd(n, &mut rng);
        let x: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.5).collect();
        let mut l = a.clone();
        assert!(cholesky_in_place(&mut l));
        let mut xw = x.clone();
        assert!(rank_one_update(&mut l, &mut xw));
        let xv = nalgebra::DVector::from_vec(x);
        let mut fresh = a + &xv * xv.transpose();
        assert!(cholesky_in_place(&mut fresh));
        assert!((l - fresh).amax() < 1e-10);
    }
}
