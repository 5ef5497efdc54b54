//! One spatial lengthscale per coordinate (automatic relevance determination, Rasmussen &
//! Williams 2006, §5.1): the kernel's spatial distance is
//! `r = √Σ_d ((x_d − x'_d) / l_d)²` with `l_d = l_S · ρ_d`, so that a coordinate that does
//! not matter gets a long lengthscale and the model stops telling points apart along it.
//!
//! The ratios ρ_d are kept beside the overall lengthscale l_S (their geometric mean is 1
//! after a fit): an empty set of ratios is the isotropic kernel, the papers'. The GP
//! works in the scaled coordinates `x_d / ρ_d` ([`LengthscaleRatios::scale`]), in which
//! the kernel is isotropic with l_S, so that every closed form written for the isotropic
//! kernel (the posterior, its input gradients, the Wasserstein relevance of BOLT and
//! W-DBO) holds unchanged there.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::space::MAX_DIMENSION;

/// Per-coordinate lengthscale ratios ρ_d = l_d / l_S, or none (isotropic). A plain value
/// (no allocation), so that [`super::Hyperparameters`] stays `Copy`.
#[derive(Clone, Copy, PartialEq)]
pub struct LengthscaleRatios {
    len: u8,
    ratios: [f64; MAX_DIMENSION],
}

impl Default for LengthscaleRatios {
    /// The isotropic kernel: no ratios.
    fn default() -> Self {
        LengthscaleRatios {
            len: 0,
            ratios: [1.0; MAX_DIMENSION],
        }
    }
}

impl std::fmt::Debug for LengthscaleRatios {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl LengthscaleRatios {
    /// The ratios of every coordinate (at most [`MAX_DIMENSION`]; `None` past it).
    pub fn new(ratios: &[f64]) -> Option<LengthscaleRatios> {
        if ratios.len() > MAX_DIMENSION {
            return None;
        }
        let mut value = LengthscaleRatios {
            len: ratios.len() as u8,
            ..LengthscaleRatios::default()
        };
        value.ratios[..ratios.len()].copy_from_slice(ratios);
        Some(value)
    }

    /// Whether the kernel is isotropic (no ratios).
    pub fn is_isotropic(&self) -> bool {
        self.len == 0
    }

    /// The ratios, one per coordinate (empty: isotropic).
    pub fn as_slice(&self) -> &[f64] {
        &self.ratios[..usize::from(self.len)]
    }

    /// ρ_d of coordinate `d` (1 without ratios).
    pub fn get(&self, d: usize) -> f64 {
        if d < usize::from(self.len) {
            self.ratios[d]
        } else {
            1.0
        }
    }

    /// `x` in the scaled coordinates x_d / ρ_d, except at the `held` coordinates
    /// (categorical ones, which are choices, not positions).
    pub fn scale(&self, x: &[f64], held: impl Fn(usize) -> bool) -> Vec<f64> {
        x.iter()
            .enumerate()
            .map(|(d, &v)| if held(d) { v } else { v / self.get(d) })
            .collect()
    }
}

impl Serialize for LengthscaleRatios {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LengthscaleRatios {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ratios = Vec::<f64>::deserialize(deserializer)?;
        LengthscaleRatios::new(&ratios).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{} lengthscale ratios, at most {MAX_DIMENSION}",
                ratios.len()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_a_list_and_reads_back() {
        let ratios = LengthscaleRatios::new(&[0.5, 2.0]).unwrap();
        let text = serde_json::to_string(&ratios).unwrap();
        assert_eq!(text, "[0.5,2.0]");
        let back: LengthscaleRatios = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ratios);
        assert_eq!(back.get(1), 2.0);
        assert_eq!(back.get(5), 1.0);
        let long = format!("[{}]", vec!["1.0"; MAX_DIMENSION + 1].join(","));
        assert!(serde_json::from_str::<LengthscaleRatios>(&long).is_err());
        assert!(LengthscaleRatios::default().is_isotropic());
    }

    #[test]
    fn scales_all_but_the_held_coordinates() {
        let ratios = LengthscaleRatios::new(&[0.5, 2.0, 4.0]).unwrap();
        assert_eq!(ratios.scale(&[1.0, 1.0, 1.0], |d| d == 2), [2.0, 0.5, 1.0]);
    }
}
