//! The fit's part that is one lengthscale per continuous coordinate
//! ([`super::super::lengthscales`]): which coordinates have one, the pairs' scaled
//! distances at each evaluation, and the likelihood's gradient along each lengthscale.

use super::{Hyperparameters, KernelSpec, Pairs, Workspace};

/// The continuous coordinates that have a lengthscale each, of `dim` coordinates: bit d
/// of `mask` set for each.
#[derive(Clone, Copy, Debug)]
pub(super) struct PerCoordinate {
    pub(super) dim: usize,
    mask: u64,
}

impl PerCoordinate {
    pub(super) fn new(spec: KernelSpec, dim: usize) -> PerCoordinate {
        let mask = (0..dim)
            .filter(|&d| spec.categories.choices(d) == 0)
            .fold(0u64, |mask, d| mask | 1 << d);
        PerCoordinate { dim, mask }
    }

    /// The coordinates with a lengthscale, in order.
    pub(super) fn coordinates(self) -> impl Iterator<Item = usize> {
        (0..self.dim).filter(move |&d| self.mask & (1 << d) != 0)
    }

    pub(super) fn count(self) -> usize {
        self.mask.count_ones() as usize
    }
}

/// r = √Σ_d ((x_d − x'_d)/l_d)² of every pair, packed like [`Pairs`], into `out`, with
/// `inverse_lengthscales` the 1/l_d of `pairs.by_coordinate`'s coordinates. Coordinate
/// by coordinate within each column, so that the loops vectorise.
pub(super) fn scaled_distances(pairs: &Pairs, inverse_lengthscales: &[f64], out: &mut [f64]) {
    let n = pairs.n;
    out.fill(0.0);
    let mut p = 0;
    for j in 0..n {
        let count = n - j - 1;
        let column = &mut out[p..p + count];
        for (values, &inverse) in pairs.by_coordinate.iter().zip(inverse_lengthscales) {
            let vj = values[j];
            for (sum, &v) in column.iter_mut().zip(&values[j + 1..]) {
                let scaled = (v - vj) * inverse;
                *sum += scaled * scaled;
            }
        }
        column.iter_mut().for_each(|v| *v = v.sqrt());
        p += count;
    }
}

/// The per-coordinate lengthscales l_d = l_S·ρ_d of `h`, in the order of
/// [`PerCoordinate::coordinates`].
pub(super) fn coordinate_lengthscales(per: PerCoordinate, h: &Hyperparameters) -> Vec<f64> {
    per.coordinates()
        .map(|d| h.spatial_lengthscale * h.lengthscale_ratios.get(d))
        .collect()
}

/// ∂LML/∂ln l_d of each coordinate with a lengthscale, from the inverse and the
/// derivatives [`lml_gradient`] left in `ws`: with r² = Σ_d (Δ_d/l_d)², ∂r/∂ln l_d =
/// −(Δ_d/l_d)²/r, so ∂K/∂ln l_d = ∂K/∂ln l_S · (Δ_d/l_d)²/r² (the common-scale derivative
/// shared out by each coordinate's part of r²; they sum to it). O(n²·d).
pub(super) fn per_coordinate_gradient(
    per: PerCoordinate,
    h: &Hyperparameters,
    pairs: &Pairs,
    ws: &Workspace,
) -> Vec<f64> {
    let n = pairs.n;
    let inverse_squared: Vec<f64> = coordinate_lengthscales(per, h)
        .iter()
        .map(|l| 1.0 / (l * l))
        .collect();
    let (alpha, kinv) = (&ws.alpha, ws.inverse.as_slice());
    let mut gradient = vec![0.0; inverse_squared.len()];
    let mut weights = vec![0.0; n];
    let mut p = 0;
    for j in 0..n {
        let count = n - j - 1;
        let column = &kinv[j * n + j + 1..(j + 1) * n];
        let (aj, below) = (alpha[j], &alpha[j + 1..]);
        let (d_ls, r) = (&ws.d_ls[p..p + count], &ws.scaled[p..p + count]);
        let weights = &mut weights[..count];
        for q in 0..count {
            let r2 = r[q] * r[q];
            weights[q] = if r2 > 0.0 {
                (below[q] * aj - column[q]) * d_ls[q] / r2
            } else {
                0.0
            };
        }
        for ((g, values), inverse) in gradient
            .iter_mut()
            .zip(&pairs.by_coordinate)
            .zip(&inverse_squared)
        {
            let vj = values[j];
            let sum: f64 = weights
                .iter()
                .zip(&values[j + 1..])
                .map(|(w, &v)| w * (v - vj) * (v - vj))
                .sum();
            *g += sum * inverse;
        }
        p += count;
    }
    gradient
}
