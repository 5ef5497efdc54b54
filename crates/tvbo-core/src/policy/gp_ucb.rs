//! GP-UCB (Srinivas et al. 2010, paper 004, Section 3 and Algorithm 1): x_t = argmax
//! μ_{t−1}(x) + √β_t σ_{t−1}(x) under a static kernel; every observation is kept forever.

use super::Policy;
use crate::domain::config::Beta;

/// GP-UCB with a static kernel (k_T ≡ 1).
pub struct GpUcb {
    pub beta: Beta,
}

impl Policy for GpUcb {
    fn beta(&self) -> Beta {
        self.beta
    }
}
