//! TV-GP-UCB (Bogunovic et al. 2016, paper 000, Section 3, Algorithm 2): GP-UCB under the
//! time-varying kernel k(x,x')·(1−ε)^{|t−t'|/2} (their Eq. (7)–(8)).
//!
//! (1−ε)^{|Δt|/2} = exp(−|Δt|/l_T) with l_T = −2/ln(1−ε), the Matérn-1/2 correlation in
//! time; ε is per second. When no ε is configured, l_T is fitted by marginal likelihood
//! with the other hyperparameters, as the paper does on its real data (Section 5.2), and
//! reported back as ε = 1 − e^{−2/l_T}.

use super::Policy;
use crate::session::config::Beta;

/// TV-GP-UCB with ε learned (None) or fixed.
pub struct TvGpUcb {
    pub epsilon: Option<f64>,
    pub beta: Beta,
}

/// l_T of the forgetting rate ε (per second).
pub fn temporal_lengthscale_of_epsilon(epsilon: f64) -> f64 {
    -2.0 / (-epsilon).ln_1p()
}

/// ε (per second) of the temporal lengthscale l_T.
pub fn epsilon_of_temporal_lengthscale(temporal_lengthscale: f64) -> f64 {
    -(-2.0 / temporal_lengthscale).exp_m1()
}

impl Policy for TvGpUcb {
    fn beta(&self) -> Beta {
        self.beta
    }

    fn fixed_temporal_lengthscale(&self) -> Option<f64> {
        self.epsilon.map(temporal_lengthscale_of_epsilon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::KernelKind;

    #[test]
    fn epsilon_kernel_is_matern12_in_time() {
        for epsilon in [0.001, 0.03, 0.5] {
            let lengthscale = temporal_lengthscale_of_epsilon(epsilon);
            assert!((epsilon_of_temporal_lengthscale(lengthscale) - epsilon).abs() < 1e-12);
            for dt in [0.0, 0.5, 3.0, 40.0] {
                let paper = (1.0 - epsilon).powf(dt / 2.0);
                let ours = KernelKind::Matern12.correlation(dt / lengthscale);
                assert!((paper - ours).abs() < 1e-12, "ε={epsilon} Δt={dt}");
            }
        }
    }
}
