//! Modified Bessel functions of the second kind in the form the Matérn convolution
//! needs: `g_μ(z) = z^μ K_μ(z)` for integer and half-integer μ ≥ 1/2, kept finite at
//! small z and free of overflow at large z by working with `e^z g_μ(z)` and logs.

use statrs::function::gamma::ln_gamma;

const SQRT_HALF_PI: f64 = 1.253_314_137_315_500_3;

/// Below this argument `g_μ(z)` equals its limit `2^{μ−1} Γ(μ)` to better than 1e-15
/// relative for every μ ≥ 3/2 (the correction is −z²/(4(μ−1)) for μ > 1 and
/// O(z² ln z) for μ = 1).
const SMALL_Z: f64 = 1e-9;

/// Above this argument `z^μ K_μ(z) < e^{−z} (z + μ)^μ √(π/2)` underflows for every
/// μ ≤ 64, so the log is reported as −∞.
const LARGE_Z: f64 = 1e5;

/// `(e^z K_0(z), e^z K_1(z))` for z > 0, by the trapezoidal rule on
/// `e^z K_ν(z) = ∫_0^∞ e^{−z (cosh t − 1)} cosh(ν t) dt` (A&S 9.6.24). The integrand is
/// analytic in the strip |Im t| < π/2 and decays doubly exponentially, so the rule
/// converges geometrically; the step h = min(1/4, 0.7/√z) keeps the discretisation
/// error below ~1e-15 relative also for large z, where the peak narrows like 1/√z.
pub(crate) fn scaled_k0_k1(z: f64) -> (f64, f64) {
    debug_assert!(z > 0.0);
    let h = (0.7 / z.sqrt()).min(0.25);
    let mut s0 = 0.5;
    let mut s1 = 0.5;
    let mut k = 1usize;
    loop {
        let t = k as f64 * h;
        let sh = (0.5 * t).sinh();
        let e = (-2.0 * z * sh * sh).exp();
        let f0 = e;
        let f1 = e * t.cosh();
        s0 += f0;
        s1 += f1;
        // Past the peak of cosh(t)·e^{−z(cosh t−1)} (at sinh t ≈ 1/z) both terms
        // decrease monotonically; stop once they are negligible.
        if f1 < 1e-18 * s1 && z * t.sinh() > 1.0 {
            break;
        }
        k += 1;
        if k > 100_000 {
            break;
        }
    }
    (h * s0, h * s1)
}

/// `ln(z^μ K_μ(z))` with μ = `two_mu`/2, for `two_mu` ≥ 1 and z ≥ 0; at z = 0 (and below
/// [`SMALL_Z`]) this is the limit `ln(2^{μ−1} Γ(μ))` (from K_μ(z) ~ Γ(μ)/2·(2/z)^μ).
///
/// Uses the upward recurrence `g_{μ+1} = z² g_{μ−1} + 2μ g_μ` (from
/// K_{μ+1} = K_{μ−1} + (2μ/z) K_μ), which has only positive terms, on the scaled
/// `e^z g_μ`: for half-integer μ it starts from `e^z g_{1/2} = √(π/2)` and
/// `e^z g_{3/2} = √(π/2)(1+z)`, for integer μ from `e^z K_0` and `e^z z K_1`
/// ([`scaled_k0_k1`]).
pub(crate) fn ln_power_bessel_k(two_mu: usize, z: f64) -> f64 {
    debug_assert!(two_mu >= 1);
    let mu = two_mu as f64 / 2.0;
    if z < SMALL_Z {
        return (mu - 1.0) * std::f64::consts::LN_2 + ln_gamma(mu);
    }
    if z > LARGE_Z {
        return f64::NEG_INFINITY;
    }
    let (mut prev, mut cur, mut m) = if two_mu % 2 == 1 {
        (SQRT_HALF_PI, SQRT_HALF_PI * (1.0 + z), 0.5)
    } else {
        let (k0, k1) = scaled_k0_k1(z);
        (k0, z * k1, 0.0)
    };
    if two_mu == 1 {
        return prev.ln() - z;
    }
    // `cur` holds order m + 1.
    let z2 = z * z;
    while m + 1.0 < mu {
        let next = z2 * prev + 2.0 * (m + 1.0) * cur;
        prev = cur;
        cur = next;
        m += 1.0;
    }
    cur.ln() - z
}

#[cfg(test)]
mod tests {
    use super::*;

    const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

    /// K_0 and K_1 by their ascending series (A&S 9.6.11), accurate for small z.
    fn series_k0_k1(z: f64) -> (f64, f64) {
        let q = z * z / 4.0;
        let lg = (z / 2.0).ln();
        let (mut i0, mut i1) = (0.0, 0.0);
        let (mut s0, mut s1) = (0.0, 0.0);
        let mut term = 1.0; // q^k / (k!)²
        let mut harmonic = 0.0;
        for k in 0..60 {
            let kf = k as f64;
            if k > 0 {
                term *= q / (kf * kf);
                harmonic += 1.0 / kf;
            }
            let psi1 = -EULER_GAMMA + harmonic;
            let psi2 = psi1 + 1.0 / (kf + 1.0);
            i0 += term;
            i1 += term / (kf + 1.0) * z / 2.0;
            s0 += psi1 * term;
            s1 += (psi1 + psi2) * term / (kf + 1.0);
        }
        let k0 = -lg * i0 + s0;
        let k1 = 1.0 / z + lg * i1 - z / 4.0 * s1;
        (k0, k1)
    }

    /// e^z K_ν(z) by its asymptotic expansion (A&S 9.7.2), accurate for large z.
    fn asymptotic_scaled(nu: f64, z: f64) -> f64 {
        let m = 4.0 * nu * nu;
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..400 {
            let kf = k as f64;
            let next = term * (m - (2.0 * kf - 1.0).powi(2)) / (kf * 8.0 * z);
            if (kf > nu + 1.0 && next.abs() > term.abs()) || next == 0.0 {
                break;
            }
            term = next;
            sum += term;
        }
        (std::f64::consts::PI / (2.0 * z)).sqrt() * sum
    }

    #[test]
    fn k0_k1_match_series_and_known_values() {
        for &z in &[1e-8, 1e-4, 0.01, 0.1, 0.5, 1.0, 1.7, 2.0, 3.0] {
            let (k0, k1) = scaled_k0_k1(z);
            let (s0, s1) = series_k0_k1(z);
            let e = z.exp();
            assert!(
                (k0 / e - s0).abs() < 1e-13 * s0,
                "K0({z}): {} vs {s0}",
                k0 / e
            );
            assert!(
                (k1 / e - s1).abs() < 1e-13 * s1,
                "K1({z}): {} vs {s1}",
                k1 / e
            );
        }
        let (k0, k1) = scaled_k0_k1(1.0);
        let e = 1f64.exp();
        assert!((k0 / e - 0.421_024_438_240_708_3).abs() < 1e-15);
        assert!((k1 / e - 0.601_907_230_197_234_6).abs() < 1e-15);
        for &z in &[20.0, 35.0, 80.0, 500.0, 5e3, 9e4] {
            let (k0, k1) = scaled_k0_k1(z);
            let a0 = asymptotic_scaled(0.0, z);
            let a1 = asymptotic_scaled(1.0, z);
            assert!((k0 - a0).abs() < 1e-13 * a0, "K0({z})");
            assert!((k1 - a1).abs() < 1e-13 * a1, "K1({z})");
        }
    }

    #[test]
    fn half_integer_orders_match_closed_form() {
        // z^{n+1/2} K_{n+1/2}(z) = √(π/2) e^{−z} Σ_k (n+k)!/(k!(n−k)! 2^k) z^{n−k}.
        for n in 0..22usize {
            for &z in &[1e-6f64, 0.05, 0.7, 3.0, 17.0, 120.0] {
                let mut poly = 0.0;
                for k in 0..=n {
                    let c = (ln_gamma((n + k + 1) as f64)
                        - ln_gamma((k + 1) as f64)
                        - ln_gamma((n - k + 1) as f64))
                    .exp()
                        / 2f64.powi(k as i32);
                    poly += c * z.powi((n - k) as i32);
                }
                let expect = SQRT_HALF_PI.ln() + poly.ln() - z;
                let got = ln_power_bessel_k(2 * n + 1, z);
                assert!(
                    (got - expect).abs() < 1e-12 * expect.abs().max(1.0),
                    "n={n} z={z}: {got} vs {expect}"
                );
            }
        }
    }

    #[test]
    fn integer_orders_match_asymptotics_and_limit() {
        for mu in 1..22usize {
            let limit = ln_power_bessel_k(2 * mu, 0.0);
            let expect = (mu as f64 - 1.0) * std::f64::consts::LN_2 + ln_gamma(mu as f64);
            assert!((limit - expect).abs() < 1e-14 * expect.abs().max(1.0));
            // Continuity at the small-z switch.
            let near = ln_power_bessel_k(2 * mu, 2.0 * SMALL_Z);
            assert!(
                (near - limit).abs() < 1e-13 * limit.abs().max(1.0),
                "mu={mu}"
            );
            for &z in &[60.0, 300.0, 2000.0] {
                let got = ln_power_bessel_k(2 * mu, z);
                let expect = mu as f64 * z.ln() + asymptotic_scaled(mu as f64, z).ln() - z;
                assert!(
                    (got - expect).abs() < 1e-12 * expect.abs(),
                    "mu={mu} z={z}: {got} vs {expect}"
                );
            }
        }
    }
}
