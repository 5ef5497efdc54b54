//! Statistics of samples: [`MeanSe`], the mean ± standard error the reports give.

use serde::Serialize;

/// Mean and standard error of a sample (the standard error is 0 for one value).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MeanSe {
    pub mean: f64,
    pub se: f64,
}

impl MeanSe {
    pub fn of(values: &[f64]) -> MeanSe {
        let n = values.len() as f64;
        if values.is_empty() {
            return MeanSe {
                mean: f64::NAN,
                se: f64::NAN,
            };
        }
        let mean = values.iter().sum::<f64>() / n;
        let se = if values.len() > 1 {
            let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (variance / n).sqrt()
        } else {
            0.0
        };
        MeanSe { mean, se }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_standard_error() {
        let m = MeanSe::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m.mean, 2.5);
        assert!((m.se - (5.0f64 / 3.0 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(MeanSe::of(&[7.0]).se, 0.0);
    }
}
