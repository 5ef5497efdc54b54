//! e^x of many arguments at once. libm's `exp` is one call per value; the kernel matrix
//! of a likelihood evaluation needs n²/2 of them, which took about a fifth of an
//! evaluation at n = 400 (docs/performance.md). This one is written in plain IEEE
//! arithmetic over a slice, so the compiler vectorises it, for the widest vectors the
//! CPU has ([`super::vectorise`]: the same bits on every machine).
//!
//! Method (Cody & Waite range reduction): x = k·ln 2 + r with k the nearest integer to
//! x / ln 2 and |r| ≤ ln 2 / 2, ln 2 split in two parts so that k·ln 2 is exact to
//! 2⁻⁸⁵; e^r by its Taylor polynomial to degree 13 (the remainder is below 10⁻¹⁷
//! relative); then 2^k is put into the exponent bits. Accurate to a few units in the
//! last place (the tests bound it against `f64::exp`).

use super::vectorise::widest_vectors;

/// Below this e^x is near f64's smallest normal number; such arguments give 0 (e^x is
/// then < 3.4·10⁻³⁰⁸, where a kernel value or a likelihood term is nothing anyway).
const SMALLEST_ARGUMENT: f64 = -708.0;
/// Above this e^x overflows; such arguments give +∞.
const LARGEST_ARGUMENT: f64 = 709.78;
/// 1.5·2⁵²: adding it rounds a value below 2⁵¹ in magnitude to the nearest integer,
/// which then sits in the low bits of the sum.
const ROUNDER: f64 = 6_755_399_441_055_744.0;
/// ln 2 = LN2_HIGH + LN2_LOW, LN2_HIGH with 32 trailing zero bits (k·LN2_HIGH is exact).
const LN2_HIGH: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LOW: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// 1/k! for k = 13 down to 2.
const INVERSE_FACTORIALS: [f64; 12] = [
    1.0 / 6_227_020_800.0,
    1.0 / 479_001_600.0,
    1.0 / 39_916_800.0,
    1.0 / 3_628_800.0,
    1.0 / 362_880.0,
    1.0 / 40_320.0,
    1.0 / 5_040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
];

/// One value; inlined into the slice loops, where it vectorises.
#[inline(always)]
fn exp_one(x: f64) -> f64 {
    let clamped = x.clamp(SMALLEST_ARGUMENT, LARGEST_ARGUMENT);
    let shifted = clamped * std::f64::consts::LOG2_E + ROUNDER;
    let k = shifted - ROUNDER;
    let r = (clamped - k * LN2_HIGH) - k * LN2_LOW;
    let mut p = INVERSE_FACTORIALS[0];
    for c in &INVERSE_FACTORIALS[1..] {
        p = p * r + c;
    }
    p = (p * r + 1.0) * r + 1.0;
    // The low 12 bits of `shifted` hold k (two's complement), in [−1021, 1024] for the
    // clamped range; k + 1022 is the biased exponent of 2^(k−1), and e^x = 2p·2^(k−1).
    let scale = f64::from_bits(shifted.to_bits().wrapping_add(1022) << 52);
    let value = (2.0 * p) * scale;
    if x < SMALLEST_ARGUMENT {
        0.0
    } else if x > LARGEST_ARGUMENT {
        f64::INFINITY
    } else if x.is_nan() {
        f64::NAN
    } else {
        value
    }
}

#[inline(always)]
fn exp_slice(values: &mut [f64]) {
    for v in values.iter_mut() {
        *v = exp_one(*v);
    }
}

widest_vectors! {
    /// Replaces every value x of `values` by e^x: 0 below −708, +∞ above 709.78, NaN
    /// for NaN.
    pub(crate) fn exp_in_place(values: &mut [f64]) = exp_slice;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn ulps(a: f64, b: f64) -> f64 {
        ((a - b) / b.abs()).abs() / f64::EPSILON
    }

    #[test]
    fn agrees_with_libm_within_two_units_in_the_last_place() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut xs: Vec<f64> = (0..200_000)
            .map(|i| match i % 3 {
                0 => -708.0 * rng.random::<f64>(),
                1 => 2.0 * rng.random::<f64>() - 1.0,
                _ => 1418.0 * rng.random::<f64>() - 708.0,
            })
            .collect();
        // Around the reduction's half-way points and at exact multiples of ln 2.
        for k in -1000..1000 {
            let x = f64::from(k) * std::f64::consts::LN_2 / 2.0;
            xs.extend([x, x.next_up(), x.next_down()]);
        }
        xs.retain(|x| (SMALLEST_ARGUMENT..=LARGEST_ARGUMENT).contains(x));
        let mut ours = xs.clone();
        exp_in_place(&mut ours);
        let worst = xs
            .iter()
            .zip(&ours)
            .map(|(x, e)| ulps(*e, x.exp()))
            .fold(0.0, f64::max);
        assert!(worst <= 2.0, "worst error {worst} ulp");
    }

    #[test]
    fn edges_are_exact_or_flushed() {
        let mut v = [
            0.0,
            -0.0,
            -800.0,
            f64::NEG_INFINITY,
            800.0,
            f64::INFINITY,
            f64::NAN,
        ];
        exp_in_place(&mut v);
        assert_eq!(&v[..6], &[1.0, 1.0, 0.0, 0.0, f64::INFINITY, f64::INFINITY]);
        assert!(v[6].is_nan());
        let mut one = [1.0];
        exp_in_place(&mut one);
        assert!(ulps(one[0], std::f64::consts::E) <= 1.0);
    }

    #[test]
    fn every_compiled_variant_gives_the_same_bits() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let xs: Vec<f64> = (0..10_000).map(|_| -50.0 * rng.random::<f64>()).collect();
        let mut portable = xs.clone();
        exp_slice(&mut portable);
        let mut dispatched = xs.clone();
        exp_in_place(&mut dispatched);
        assert_eq!(
            portable.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            dispatched.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
