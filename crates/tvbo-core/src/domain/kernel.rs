//! The covariance families a session's model or an arm prior may use, by name. Their
//! mathematics is in the GP core (`gp::kernel`, `gp::arms`).

use serde::{Deserialize, Serialize};

/// A stationary correlation function of the scaled distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    /// Matérn ν = 1/2 (exponential): `e^{−r}`.
    Matern12,
    /// Matérn ν = 3/2: `(1 + √3 r) e^{−√3 r}`.
    Matern32,
    /// Matérn ν = 5/2: `(1 + √5 r + 5r²/3) e^{−√5 r}`.
    Matern52,
    /// Squared exponential: `e^{−r²/2}`.
    Rbf,
}

impl KernelKind {
    /// Every kernel kind, in declaration order.
    pub const ALL: [KernelKind; 4] = [
        KernelKind::Matern12,
        KernelKind::Matern32,
        KernelKind::Matern52,
        KernelKind::Rbf,
    ];
}

/// The covariance families a kernel prior may use. The stationary ones are functions of
/// r = ‖x − x'‖ / lengthscale (Euclidean distance of the raw parameter values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum PriorKernel {
    /// Matérn ν = 1/2: `v·e^{−r}`.
    Matern12,
    /// Matérn ν = 3/2.
    Matern32,
    /// Matérn ν = 5/2.
    Matern52,
    /// Squared exponential `v·e^{−r²/2}` (003 §2 writes e^{−‖x−x'‖²/ℓ²}, i.e. ℓ_003 = √2·ℓ).
    Rbf,
    /// Periodic `v·exp(−2 Σ_d sin²(π|x_d − x'_d|/period) / lengthscale²)` (MacKay's form, as
    /// in GPyTorch).
    Periodic,
    /// Linear (dot product) `v·⟨x, x'⟩`, no lengthscale (003 §5 uses v = 0.05²).
    Linear,
    /// Rational quadratic `v·(1 + r²/(2α))^{−α}`.
    Rq,
}
