//! Dense linear algebra on column-major nalgebra matrices: the O(n³) factorisation,
//! inverse and many-right-hand-side solves go through faer's blocked, SIMD kernels on a
//! zero-copy view; the O(n²) vector kernels that update a factor in place are written
//! here, each inner loop over a contiguous column slice.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{MatMut, MatRef, Par};
use nalgebra::DMatrix;

/// Smallest accepted pivot² relative to the matrix diagonal entry it came from; below
/// this the factor has lost essentially all significant digits.
pub(crate) const MIN_RELATIVE_PIVOT: f64 = 1e-12;

/// The factorisations run on the calling thread: a server runs many sessions at once,
/// and a suggest never takes more than its one core.
const PARALLELISM: Par = Par::Seq;

fn view(a: &DMatrix<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(a.as_slice(), a.nrows(), a.ncols())
}

fn view_mut(a: &mut DMatrix<f64>) -> MatMut<'_, f64> {
    let (rows, cols) = a.shape();
    MatMut::from_column_major_slice_mut(a.as_mut_slice(), rows, cols)
}

/// Overwrites the lower triangle of the symmetric matrix `a` with its Cholesky factor L
/// (A = L Lᵀ) and zeroes the strict upper triangle. Returns false, leaving `a` in an
/// unspecified state, when a pivot L_jj² is not finite or below [`MIN_RELATIVE_PIVOT`]
/// times its diagonal entry A_jj.
pub(crate) fn cholesky_in_place(a: &mut DMatrix<f64>) -> bool {
    let n = a.nrows();
    debug_assert_eq!(n, a.ncols());
    let original: Vec<f64> = a.diagonal().iter().copied().collect();
    let mut stack = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(
        n,
        PARALLELISM,
        Default::default(),
    ));
    let factored = llt::factor::cholesky_in_place(
        view_mut(a),
        Default::default(),
        PARALLELISM,
        MemStack::new(&mut stack),
        Default::default(),
    );
    if factored.is_err() {
        return false;
    }
    let healthy = (0..n).all(|j| {
        let pivot = a[(j, j)] * a[(j, j)];
        pivot.is_finite() && pivot > MIN_RELATIVE_PIVOT * original[j] && pivot > 0.0
    });
    let data = a.as_mut_slice();
    for j in 0..n {
        data[j * n..j * n + j].fill(0.0);
    }
    healthy
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

/// Solves L Z = B in place for every column of B, with L the leading `B.nrows()`
/// block of `l`: one blocked triangular solve (matrix products), not one vector
/// solve per column.
pub(crate) fn forward_solve_matrix(l: &DMatrix<f64>, b: &mut DMatrix<f64>) {
    let n = b.nrows();
    if n == 0 || b.ncols() == 0 {
        return;
    }
    let lower = view(l).submatrix(0, 0, n, n);
    solve_lower_triangular_in_place(lower, view_mut(b), PARALLELISM);
}

/// Solves Lᵀ W = B in place for every column of B, with L the leading `B.nrows()` block
/// of `l`: one blocked triangular solve, as [`forward_solve_matrix`].
pub(crate) fn backward_solve_transposed_matrix(l: &DMatrix<f64>, b: &mut DMatrix<f64>) {
    let n = b.nrows();
    if n == 0 || b.ncols() == 0 {
        return;
    }
    let lower = view(l).submatrix(0, 0, n, n);
    solve_upper_triangular_in_place(lower.transpose(), view_mut(b), PARALLELISM);
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

/// Memory for [`inverse_lower_into`] at one size n (an n × n scratch matrix), to be reused
/// across calls: a fit inverts a matrix of the same size at every step, and allocating
/// megabytes each time costs more than the inverse when the allocator maps them afresh.
pub(crate) struct InverseScratch {
    n: usize,
    buffer: MemBuffer,
}

impl InverseScratch {
    pub(crate) fn new(n: usize) -> Self {
        InverseScratch {
            n,
            buffer: MemBuffer::new(llt::inverse::inverse_scratch::<f64>(n, PARALLELISM)),
        }
    }
}

/// Writes the lower triangle (and diagonal) of (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹ into `out` (n × n,
/// as L); its strict upper triangle is left as it was.
pub(crate) fn inverse_lower_into(
    l: &DMatrix<f64>,
    out: &mut DMatrix<f64>,
    scratch: &mut InverseScratch,
) {
    let n = l.nrows();
    assert!(out.shape() == (n, n) && scratch.n == n, "sizes differ");
    llt::inverse::inverse(
        view_mut(out),
        view(l),
        PARALLELISM,
        MemStack::new(&mut scratch.buffer),
    );
}

/// (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹ as a full symmetric matrix.
pub(crate) fn inverse_from_cholesky(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    let mut out = DMatrix::<f64>::zeros(n, n);
    inverse_lower_into(l, &mut out, &mut InverseScratch::new(n));
    out.fill_upper_triangle_with_lower_triangle();
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
        // The blocked many-column solve against the leading block of a larger factor
        // equals column-by-column substitution.
        let m = 9;
        let rhs = DMatrix::from_fn(m, 70, |_, _| rng.random::<f64>() - 0.5);
        let mut blocked = rhs.clone();
        forward_solve_matrix(&l, &mut blocked);
        for (j, column) in blocked.column_iter().enumerate() {
            let mut expected: Vec<f64> = rhs.column(j).iter().copied().collect();
            forward_solve(&l, &mut expected);
            for (got, want) in column.iter().zip(&expected) {
                assert!((got - want).abs() < 1e-12, "{got} vs {want}");
            }
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
