//! Categorical inputs: which coordinates hold a categorical parameter's choice, and the
//! overlap kernel over them.
//!
//! A categorical coordinate holds choice k of K at (k + ½)/K (`domain::space`). The model's
//! kernel multiplies the continuous one by
//!
//! `k_C(c, c') = exp(−h(c, c') / l_C)`,
//!
//! `h` the number of categorical coordinates whose choices differ (the Hamming distance)
//! and `l_C > 0` a lengthscale of its own: the product over the categorical parameters of
//! one exponentiated overlap kernel `exp(−[c_i ≠ c'_i] / l_C)` each, positive definite
//! as each factor is (a K × K matrix `(1 − ρ) I + ρ 11ᵀ`, ρ = e^{−1/l_C} ∈ (0, 1)). This is
//! BoTorch's `CategoricalKernel` (Ru et al. 2020, CoCaBO) with one lengthscale shared by
//! the categorical parameters, as the continuous kernel shares one between its
//! coordinates. The continuous kernel then sees only the continuous coordinates.

use serde::{Deserialize, Serialize};

/// The most input coordinates a model may have (the API's most parameters).
pub const MAX_INPUTS: usize = 32;

/// Two categorical coordinates further apart than this hold different choices (they are
/// cell centres (k + ½)/K, at least 1/64 apart).
const SAME_CHOICE: f64 = 1e-9;

/// Per input coordinate, how many choices it has: 0 for a continuous coordinate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Categories {
    choices: [u8; MAX_INPUTS],
}

impl Categories {
    /// From the number of choices of each coordinate in order (0: continuous). Contract:
    /// at most [`MAX_INPUTS`] coordinates, at most 255 choices each.
    pub fn new(choices: &[usize]) -> Categories {
        debug_assert!(choices.len() <= MAX_INPUTS);
        let mut out = Categories::default();
        for (slot, &k) in out.choices.iter_mut().zip(choices) {
            *slot = u8::try_from(k).unwrap_or(u8::MAX);
        }
        out
    }

    /// True when every coordinate is continuous.
    pub fn is_empty(&self) -> bool {
        self.choices.iter().all(|&k| k == 0)
    }

    /// The number of choices of coordinate `i` (0: continuous).
    pub fn choices(&self, i: usize) -> usize {
        self.choices.get(i).map_or(0, |&k| usize::from(k))
    }

    /// The indices of the categorical coordinates among the first `dim`.
    pub fn categorical(&self, dim: usize) -> impl Iterator<Item = usize> + '_ {
        (0..dim.min(MAX_INPUTS)).filter(|&i| self.choices[i] > 0)
    }

    /// The number of continuous coordinates among the first `dim`.
    pub fn continuous_dim(&self, dim: usize) -> usize {
        dim - self.categorical(dim).count()
    }

    /// True when categorical coordinate values `p` and `q` hold different choices.
    pub fn differ(p: f64, q: f64) -> bool {
        (p - q).abs() > SAME_CHOICE
    }

    /// The squared Euclidean distance over the continuous coordinates of `a` and `b`, and
    /// the number of categorical coordinates whose choices differ.
    pub fn split_distance(&self, a: &[f64], b: &[f64]) -> (f64, f64) {
        let mut squared = 0.0;
        let mut differ = 0.0;
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            if self.choices(i) > 0 {
                if Categories::differ(*p, *q) {
                    differ += 1.0;
                }
            } else {
                squared += (p - q) * (p - q);
            }
        }
        (squared, differ)
    }

    /// `Σ_c k_C(c, a) k_C(c, b)` over every combination `c` of choices, in closed form:
    /// `Π_i (1 + (K_i − 1)ρ²)` over the coordinates where `a` and `b` agree times
    /// `Π_i (2ρ + (K_i − 2)ρ²)` where they differ, ρ = e^{−1/l_C}. The categorical factor
    /// of the relevance's integral over the inputs (`gp::relevance`); 1 without
    /// categories.
    pub fn overlap_integral(&self, a: &[f64], b: &[f64], lengthscale: f64) -> f64 {
        let rho = (-1.0 / lengthscale).exp();
        self.categorical(a.len())
            .map(|i| {
                let k = self.choices(i) as f64;
                if Categories::differ(a[i], b[i]) {
                    2.0 * rho + (k - 2.0) * rho * rho
                } else {
                    1.0 + (k - 1.0) * rho * rho
                }
            })
            .product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn centre(k: usize, of: usize) -> f64 {
        (k as f64 + 0.5) / of as f64
    }

    #[test]
    fn splits_distances_between_continuous_and_categorical_coordinates() {
        let cats = Categories::new(&[0, 3, 0, 2]);
        assert!(!cats.is_empty() && Categories::new(&[0, 0]).is_empty());
        assert_eq!(cats.categorical(4).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(cats.continuous_dim(4), 2);
        let a = [0.1, centre(0, 3), 0.5, centre(1, 2)];
        let b = [0.4, centre(2, 3), 0.1, centre(1, 2)];
        let (squared, differ) = cats.split_distance(&a, &b);
        assert!((squared - (0.09 + 0.16)).abs() < 1e-15);
        assert_eq!(differ, 1.0);
    }

    /// The closed form against the sum over every combination of choices.
    #[test]
    fn overlap_integral_matches_the_sum_over_every_combination() {
        let counts = [0usize, 3, 2, 0, 4];
        let cats = Categories::new(&counts);
        let kernel = |a: &[usize], b: &[usize], l: f64| {
            let h = a.iter().zip(b).filter(|(x, y)| x != y).count() as f64;
            (-h / l).exp()
        };
        let combos: Vec<[usize; 3]> = (0..3)
            .flat_map(|x| (0..2).flat_map(move |y| (0..4).map(move |z| [x, y, z])))
            .collect();
        let point = |c: [usize; 3]| [0.3, centre(c[0], 3), centre(c[1], 2), 0.7, centre(c[2], 4)];
        for l in [0.1, 0.7, 1.0, 5.0] {
            for a in &combos {
                for b in &combos {
                    let brute: f64 = combos
                        .iter()
                        .map(|c| kernel(c, a, l) * kernel(c, b, l))
                        .sum();
                    let closed = cats.overlap_integral(&point(*a), &point(*b), l);
                    assert!((brute - closed).abs() < 1e-12 * brute, "{a:?} {b:?} {l}");
                }
            }
        }
        assert_eq!(
            Categories::default().overlap_integral(&[0.2], &[0.9], 1.0),
            1.0
        );
    }
}
