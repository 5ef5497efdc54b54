//! The map between a session's values (internal, larger-is-better scale) and the values
//! its GP is fitted to: an optional warping, then standardisation
//! (docs/decisions/0012-output-warping.md).
//!
//! Throughputs, latencies and costs differ by factors, their noise grows with their
//! level, and a day's phases can differ twelve fold in level: with one signal and one
//! noise variance in the values' own units, the low phase's differences look like noise.
//! Output warping is what open-source Vizier's GP bandit (Song et al. 2024, arXiv
//! 2408.11527: its output warpers, the half-rank and log ones among them) and HEBO
//! (Cowen-Rivers et al. 2022, its power transforms) credit much of their robustness to.
//! Two warpings:
//!
//! - `log`: w(y) = s·ln(s·y) with s the sign of the observed values, increasing for a
//!   maximised rate (y > 0) and a minimised cost (y = −cost < 0) alike: a factor is the
//!   same difference at every level. The identity for a fit whose successes do not all
//!   share one sign.
//! - `half_rank`: Vizier's half-rank warping. Values at or above the median are kept;
//!   the k-th smallest distinct value below it goes to m + σ·Φ⁻¹(½(k − ½)/D), with m the
//!   median, σ the root mean square distance of the distinct values above it to m, and
//!   D the number of distinct values below it (plus ½ when m is one of the values):
//!   the bad half keeps its order but can no longer stretch the scale, however far below
//!   it lies. Between those values the map is linear.
//!
//! Each is exact over the range the successes span; outside it (a failed run's imputed
//! value, a value pushed between fits) it continues along the line of its nearer end, so
//! that it is defined, continuous and increasing everywhere.

use statrs::function::erf::erf_inv;

use crate::domain::config::Warping;
use crate::policy::Observation;
use crate::policy::failures::FAILED_RUN_SEQ;

/// A warping: a continuous increasing map of the values and its inverse.
#[derive(Clone, Debug, PartialEq)]
enum Warp {
    Log(LogWarp),
    HalfRank(HalfRank),
}

impl Warp {
    fn warp(&self, y: f64) -> f64 {
        match self {
            Warp::Log(l) => l.warp(y),
            Warp::HalfRank(h) => h.warp(y),
        }
    }

    fn unwarp(&self, w: f64) -> f64 {
        match self {
            Warp::Log(l) => l.unwarp(w),
            Warp::HalfRank(h) => h.unwarp(w),
        }
    }

    /// dy/dw at w.
    fn slope(&self, w: f64) -> f64 {
        match self {
            Warp::Log(l) => l.slope(w),
            Warp::HalfRank(h) => h.slope(w),
        }
    }

    fn bits(&self) -> Vec<u64> {
        match self {
            Warp::Log(l) => [0.0, l.sign, l.lo, l.hi].map(f64::to_bits).to_vec(),
            Warp::HalfRank(h) => (h.knots.iter())
                .flat_map(|&(y, w)| [y.to_bits(), w.to_bits()])
                .collect(),
        }
    }
}

/// The successes' values among `data` (the imputed failed runs left out).
fn successes(data: &[Observation]) -> impl Iterator<Item = f64> + '_ {
    data.iter().filter(|o| o.seq != FAILED_RUN_SEQ).map(|o| o.y)
}

/// The logarithmic warping: w(y) = s·ln(s·y) on [lo, hi], tangent lines outside.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LogWarp {
    /// s: +1 for positive values, −1 for negative ones.
    sign: f64,
    /// The smallest and largest s·y of the successes, both > 0.
    lo: f64,
    hi: f64,
}

impl LogWarp {
    /// The warping of the successes in `data`, when they are all of one sign and not 0.
    fn of(data: &[Observation]) -> Option<LogWarp> {
        let mut values = successes(data).peekable();
        let sign = values.peek()?.signum();
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for y in values {
            let v = sign * y;
            if !(v > 0.0 && v.is_finite()) {
                return None;
            }
            lo = lo.min(v);
            hi = hi.max(v);
        }
        Some(LogWarp { sign, lo, hi })
    }

    fn warp(&self, y: f64) -> f64 {
        let v = self.sign * y;
        let end = v.clamp(self.lo, self.hi);
        // ln(end) + (v − end)/end: the tangent at the nearer end outside [lo, hi].
        self.sign * (end.ln() + (v - end) / end)
    }

    fn unwarp(&self, w: f64) -> f64 {
        let u = self.sign * w;
        let (low, high) = (self.lo.ln(), self.hi.ln());
        let v = if u < low {
            self.lo * (1.0 + u - low)
        } else if u > high {
            self.hi * (1.0 + u - high)
        } else {
            u.exp()
        };
        self.sign * v
    }

    /// dy/dw at w: the factor from a standard deviation of warped values to one of values.
    fn slope(&self, w: f64) -> f64 {
        (self.sign * self.unwarp(w)).clamp(self.lo, self.hi)
    }
}

/// Vizier's half-rank warping (the module's doc): the identity at and above the median,
/// piecewise linear through `knots` below it, linear beyond the lowest knot.
#[derive(Clone, Debug, PartialEq)]
struct HalfRank {
    /// (value, warped value) of each distinct success below the median, ascending in
    /// both, then (median, median).
    knots: Vec<(f64, f64)>,
}

impl HalfRank {
    /// The warping of the successes in `data`; None when none lies below their median.
    fn of(data: &[Observation]) -> Option<HalfRank> {
        let mut ys: Vec<f64> = successes(data).filter(|y| y.is_finite()).collect();
        ys.sort_by(f64::total_cmp);
        let n = ys.len();
        if n < 2 {
            return None;
        }
        let median = if n % 2 == 1 {
            ys[n / 2]
        } else {
            0.5 * (ys[n / 2 - 1] + ys[n / 2])
        };
        ys.dedup();
        let below = ys.partition_point(|&y| y < median);
        if below == 0 {
            return None;
        }
        let denominator = below as f64 + if ys[below] == median { 0.5 } else { 0.0 };
        let rms = |values: &[f64]| {
            (values.iter().map(|y| (y - median).powi(2)).sum::<f64>() / values.len() as f64).sqrt()
        };
        let spread = match rms(&ys[below..]) {
            s if s > 0.0 => s,
            _ => rms(&ys),
        };
        let mut knots: Vec<(f64, f64)> = ys[..below]
            .iter()
            .enumerate()
            .map(|(k, &y)| {
                let quantile = 0.5 * (k as f64 + 0.5) / denominator;
                let normal = std::f64::consts::SQRT_2 * erf_inv(2.0 * quantile - 1.0);
                (y, median + spread * normal)
            })
            .collect();
        knots.push((median, median));
        Some(HalfRank { knots })
    }

    /// The segment's (value, warped value) ends around a point whose coordinate `of`
    /// picks is `at`: the lowest segment below the knots.
    fn segment(&self, at: f64, of: impl Fn(&(f64, f64)) -> f64) -> ((f64, f64), (f64, f64)) {
        let i = self
            .knots
            .partition_point(|k| of(k) <= at)
            .clamp(1, self.knots.len() - 1);
        (self.knots[i - 1], self.knots[i])
    }

    fn warp(&self, y: f64) -> f64 {
        let &(median, _) = self.knots.last().expect("a knot at the median");
        if y >= median {
            return y;
        }
        let ((y0, w0), (y1, w1)) = self.segment(y, |k| k.0);
        w0 + (y - y0) * (w1 - w0) / (y1 - y0)
    }

    fn unwarp(&self, w: f64) -> f64 {
        let &(median, _) = self.knots.last().expect("a knot at the median");
        if w >= median {
            return w;
        }
        let ((y0, w0), (y1, w1)) = self.segment(w, |k| k.1);
        y0 + (w - w0) * (y1 - y0) / (w1 - w0)
    }

    fn slope(&self, w: f64) -> f64 {
        let &(median, _) = self.knots.last().expect("a knot at the median");
        if w >= median {
            return 1.0;
        }
        let ((y0, w0), (y1, w1)) = self.segment(w, |k| k.1);
        (y1 - y0) / (w1 - w0)
    }
}

/// y ↦ (w(y) − mean) / scale, with `mean` and `scale` the warped data's mean and standard
/// deviation (scale 1 when they do not vary), and its inverse.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputTransform {
    warp: Option<Warp>,
    mean: f64,
    scale: f64,
}

impl OutputTransform {
    /// The transform of `data` under `warping`.
    pub fn of(data: &[Observation], warping: Warping) -> OutputTransform {
        let warp = match warping {
            Warping::None => None,
            Warping::Log => LogWarp::of(data).map(Warp::Log),
            Warping::HalfRank => HalfRank::of(data).map(Warp::HalfRank),
        };
        let identity = OutputTransform {
            warp,
            mean: 0.0,
            scale: 1.0,
        };
        let n = data.len().max(1) as f64;
        let mean = data.iter().map(|o| identity.warp(o.y)).sum::<f64>() / n;
        let variance = data
            .iter()
            .map(|o| (identity.warp(o.y) - mean).powi(2))
            .sum::<f64>()
            / n;
        let scale = variance.sqrt();
        let scale = if scale > 1e-12 * mean.abs().max(1.0) {
            scale
        } else {
            1.0
        };
        OutputTransform {
            warp: identity.warp,
            mean,
            scale,
        }
    }

    /// Whether `other` is this transform bit for bit.
    pub fn same_bits(&self, other: &OutputTransform) -> bool {
        let bits = |t: &OutputTransform| {
            let warp = t.warp.as_ref().map(Warp::bits);
            (warp, t.mean.to_bits(), t.scale.to_bits())
        };
        bits(self) == bits(other)
    }

    fn warp(&self, y: f64) -> f64 {
        self.warp.as_ref().map_or(y, |w| w.warp(y))
    }

    /// The standardised warped value of a value y.
    pub fn forward(&self, y: f64) -> f64 {
        (self.warp(y) - self.mean) / self.scale
    }

    /// The value whose standardised warped value is z.
    pub fn inverse(&self, z: f64) -> f64 {
        let w = self.mean + self.scale * z;
        self.warp.as_ref().map_or(w, |warp| warp.unwarp(w))
    }

    /// The standard deviation, in values, of a standardised posterior N(z, sd²): sd times
    /// the inverse's slope at z (the delta method; exact without warping).
    pub fn inverse_sd(&self, z: f64, sd: f64) -> f64 {
        let slope = (self.warp.as_ref()).map_or(1.0, |w| w.slope(self.mean + self.scale * z));
        slope * self.scale * sd
    }

    /// A noise variance in the values' units squared, on the standardised scale: divided
    /// by scale², and under a warping by the squared slope dy/dw at the warped values'
    /// mean too (the delta method at the data's typical level: the geometric mean of |y|
    /// under `log`).
    pub fn standardised_variance(&self, variance: f64) -> f64 {
        let level = (self.warp.as_ref()).map_or(1.0, |w| w.slope(self.mean).max(f64::MIN_POSITIVE));
        variance / (self.scale * self.scale * level * level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(ys: &[f64]) -> Vec<Observation> {
        ys.iter()
            .enumerate()
            .map(|(i, &y)| Observation {
                seq: i as i64 + 1,
                x: vec![0.5],
                t: i as f64,
                y,
            })
            .collect()
    }

    #[test]
    fn without_warping_it_is_the_standardisation() {
        let t = OutputTransform::of(&data(&[1.0, 2.0, 3.0]), Warping::None);
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((t.forward(3.0) - 1.0 / sd).abs() < 1e-12);
        assert!((t.inverse(t.forward(7.5)) - 7.5).abs() < 1e-12);
        assert!((t.inverse_sd(0.3, 2.0) - 2.0 * sd).abs() < 1e-12);
        assert!((t.standardised_variance(sd * sd) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn log_warping_standardises_logarithms_for_either_sign() {
        for sign in [1.0, -1.0] {
            let ys: Vec<f64> = [10.0, 100.0, 1000.0].iter().map(|y| sign * y).collect();
            let t = OutputTransform::of(&data(&ys), Warping::Log);
            let sd = (2.0f64 / 3.0).sqrt() * 10f64.ln();
            // ln 10, ln 100, ln 1000: mean ln 100, so 1000 is one step of ln 10 above.
            let top = t.forward(sign * 1000.0);
            assert!(
                (sign * top - 10f64.ln() / sd).abs() < 1e-12,
                "{sign}: {top}"
            );
            // Increasing on the internal scale either way.
            assert!(t.forward(ys[0].max(ys[2])) > t.forward(ys[0].min(ys[2])));
            for y in [sign * 10.0, sign * 55.0, sign * 1000.0] {
                assert!((t.inverse(t.forward(y)) - y).abs() < 1e-9 * y.abs());
            }
        }
    }

    #[test]
    fn outside_the_range_it_continues_along_the_tangent() {
        let t = OutputTransform::of(&data(&[2.0, 8.0]), Warping::Log);
        for y in [-5.0, 0.0, 1.0, 2.0, 5.0, 8.0, 20.0] {
            assert!((t.inverse(t.forward(y)) - y).abs() < 1e-9, "{y}");
        }
        // Increasing and once differentiable at the ends: finite differences of w.
        let w = |y: f64| t.forward(y) * t.scale + t.mean;
        for end in [2.0, 8.0] {
            let h = 1e-6;
            let left = (w(end) - w(end - h)) / h;
            let right = (w(end + h) - w(end)) / h;
            assert!((left - 1.0 / end).abs() < 1e-4 && (right - 1.0 / end).abs() < 1e-4);
        }
        assert!(t.forward(-5.0) < t.forward(0.0) && t.forward(0.0) < t.forward(1.0));
    }

    #[test]
    fn values_of_both_signs_or_imputed_failures() {
        // Both signs: no logarithm.
        let t = OutputTransform::of(&data(&[-1.0, 2.0]), Warping::Log);
        assert_eq!(t, OutputTransform::of(&data(&[-1.0, 2.0]), Warping::None));
        // An imputed failed run below zero does not turn the logarithm off.
        let mut d = data(&[2.0, 8.0]);
        d.push(Observation {
            seq: FAILED_RUN_SEQ,
            x: vec![0.1],
            t: 3.0,
            y: -4.0,
        });
        let t = OutputTransform::of(&d, Warping::Log);
        assert!(t.warp.is_some());
        assert!(t.forward(-4.0) < t.forward(2.0));
    }

    #[test]
    fn the_delta_method_sd_matches_a_finite_difference() {
        let t = OutputTransform::of(&data(&[3.0, 30.0, 300.0]), Warping::Log);
        let (z, sd, h) = (0.4, 1e-3, 1e-7);
        let slope = (t.inverse(z + h) - t.inverse(z - h)) / (2.0 * h);
        assert!((t.inverse_sd(z, sd) - slope * sd).abs() < 1e-6 * slope * sd);
    }

    /// Vizier's half-rank formula on [0, 1, 2, 3], by hand: median 1.5, the upper half's
    /// root mean square distance √1.25, D = 2, Φ⁻¹(0.125) = −1.1503494 and
    /// Φ⁻¹(0.375) = −0.3186394.
    #[test]
    fn half_rank_maps_the_lower_half_onto_a_normal_tail() {
        let t = OutputTransform::of(&data(&[0.0, 1.0, 2.0, 3.0]), Warping::HalfRank);
        let Some(Warp::HalfRank(h)) = &t.warp else {
            panic!("no half-rank warping: {t:?}")
        };
        let spread = 1.25f64.sqrt();
        let expected = [
            (0.0, 1.5 - 1.150_349_380_4 * spread),
            (1.0, 1.5 - 0.318_639_363_9 * spread),
            (1.5, 1.5),
        ];
        assert_eq!(h.knots.len(), 3);
        for (&(y, w), (ey, ew)) in h.knots.iter().zip(expected) {
            assert!(y == ey && (w - ew).abs() < 1e-9, "{:?}", h.knots);
        }
        // The identity from the median up.
        for y in [1.5, 2.0, 3.0, 40.0] {
            assert_eq!(h.warp(y), y);
        }
    }

    #[test]
    fn half_rank_keeps_a_far_outlier_from_stretching_the_scale() {
        let ys: Vec<f64> = (1..=10).map(f64::from).collect();
        let mut outlier = ys.clone();
        outlier[0] = -1e6;
        let (t, u) = (
            OutputTransform::of(&data(&ys), Warping::HalfRank),
            OutputTransform::of(&data(&outlier), Warping::HalfRank),
        );
        // Ranks alone place the lower half: the same standardised values.
        assert!((t.forward(1.0) - u.forward(-1e6)).abs() < 1e-12);
        for y in [2.0, 5.0, 9.0] {
            assert!((t.forward(y) - u.forward(y)).abs() < 1e-12, "{y}");
        }
        // Without the warping, the outlier squeezes the others together.
        let plain = OutputTransform::of(&data(&outlier), Warping::None);
        assert!(plain.forward(10.0) - plain.forward(2.0) < 0.01);
        assert!(u.forward(10.0) - u.forward(2.0) > 1.0);
    }

    #[test]
    fn half_rank_inverts_and_its_slope_is_the_inverses() {
        let ys = [3.0, -7.0, 4.0, 4.0, 9.0, 0.5, 12.0, 2.0];
        let t = OutputTransform::of(&data(&ys), Warping::HalfRank);
        assert!(t.warp.is_some());
        for y in [-20.0, -7.0, -1.0, 0.5, 2.5, 3.5, 4.0, 8.0, 12.0, 30.0] {
            assert!((t.inverse(t.forward(y)) - y).abs() < 1e-9, "{y}");
        }
        for (a, b) in [
            (-20.0, -7.0),
            (-7.0, 0.0),
            (2.0, 3.0),
            (3.9, 4.1),
            (9.0, 30.0),
        ] {
            assert!(t.forward(a) < t.forward(b), "{a} {b}");
        }
        for z in [-3.0, -1.2, -0.4, 0.1, 1.5] {
            let (sd, h) = (1e-3, 1e-7);
            let slope = (t.inverse(z + h) - t.inverse(z - h)) / (2.0 * h);
            assert!(
                (t.inverse_sd(z, sd) - slope * sd).abs() < 1e-5 * slope * sd,
                "{z}"
            );
        }
    }
}
