//! Numbers as the report's tables and plots show them.

use crate::stats::MeanSe;

/// Three significant digits, without exponent for ordinary magnitudes.
pub fn significant(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&magnitude) {
        return format!("{x:.2e}");
    }
    let decimals = (2 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A fraction of the optimum, mean ± standard error, to three decimals.
pub(super) fn fraction(m: MeanSe) -> String {
    format!("{:.3} ± {:.3}", m.mean, m.se)
}

/// A span of simulated time, `0–20 min` when both ends are whole minutes, else in
/// seconds (`0–150 s`).
pub(super) fn span(start: f64, end: f64) -> String {
    if start % 60.0 == 0.0 && end % 60.0 == 0.0 {
        format!("{}–{} min", start / 60.0, end / 60.0)
    } else {
        format!("{start}–{end} s")
    }
}

pub(super) fn duration(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.1} ms", seconds * 1000.0)
    } else {
        format!("{seconds:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(significant(1234.567), "1235");
        assert_eq!(significant(1.834), "1.83");
        assert_eq!(significant(0.30456), "0.305");
        assert_eq!(significant(0.0), "0");
    }

    #[test]
    fn spans_are_in_minutes_when_whole() {
        assert_eq!(span(0.0, 1200.0), "0–20 min");
        assert_eq!(span(100.0, 150.0), "100–150 s");
        assert_eq!(span(60.0, 90.0), "60–90 s");
    }
}
