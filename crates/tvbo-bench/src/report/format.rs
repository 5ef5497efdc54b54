//! Numbers as the report's tables and plots show them.

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
}
