//! Priors over arms, built once per process and shared by every call that needs them.
//!
//! Building a prior factorises its m×m covariance (O(m³): about 40 ms for 003's 500
//! arms), and the policies that work from priors need every prior on every suggest and
//! observe. A session's priors never change, so each is built once and kept here, keyed
//! by a SHA-256 digest of everything [`PriorSpec::build`] reads: a hit is the prior the
//! build would make, whichever session asks. Entries past [`PRIOR_CACHE_BYTES`] are
//! evicted (quick_cache's CLOCK-Pro policy), and rebuilt if asked for again.

use std::sync::{Arc, LazyLock};

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sha2::{Digest, Sha256};

use crate::gp::arms::ArmPrior;
use crate::session::priors::{PriorMean, PriorSpec};
use crate::session::space::Arm;

use super::PolicyError;

/// Bytes of built priors a process keeps (two m×m matrices each: 16 MB at 1000 arms).
pub const PRIOR_CACHE_BYTES: u64 = 256 << 20;

type Key = [u8; 32];

#[derive(Clone)]
struct PriorBytes;

impl Weighter<Key, Arc<ArmPrior>> for PriorBytes {
    fn weight(&self, _key: &Key, prior: &Arc<ArmPrior>) -> u64 {
        prior.approximate_bytes() as u64
    }
}

static PRIORS: LazyLock<Cache<Key, Arc<ArmPrior>, PriorBytes>> =
    LazyLock::new(|| Cache::with_weighter(64, PRIOR_CACHE_BYTES, PriorBytes));

/// `spec` built over `arms` with `sign` ([`PriorSpec::build`]), from the cache when the
/// same prior was built before.
pub fn build_prior(
    spec: &PriorSpec,
    arms: &[Arm],
    sign: f64,
) -> Result<Arc<ArmPrior>, PolicyError> {
    PRIORS.get_or_insert_with(&key(spec, arms, sign), || {
        spec.build(arms, sign)
            .map(Arc::new)
            .map_err(|e| PolicyError::Prior(e.to_string()))
    })
}

/// The digest of the inputs of [`PriorSpec::build`]: every numeric field by its bits,
/// each variable-length part prefixed by its length, so that different inputs cannot
/// produce the same byte stream. The name is a label and does not change the prior.
fn key(spec: &PriorSpec, arms: &[Arm], sign: f64) -> Key {
    let PriorSpec {
        name: _,
        kernel,
        lengthscale,
        variance,
        period,
        alpha,
        mean,
        covariance,
    } = spec;
    let mut hash = Sha256::new();
    let number = |hash: &mut Sha256, v: f64| hash.update(v.to_bits().to_le_bytes());
    let length = |hash: &mut Sha256, n: usize| hash.update((n as u64).to_le_bytes());
    let optional = |hash: &mut Sha256, v: &Option<f64>| match v {
        Some(v) => {
            hash.update([1]);
            hash.update(v.to_bits().to_le_bytes());
        }
        None => hash.update([0]),
    };
    number(&mut hash, sign);
    let kernel = kernel.map(|k| format!("{k:?}")).unwrap_or_default();
    length(&mut hash, kernel.len());
    hash.update(kernel.as_bytes());
    for value in [lengthscale, variance, period, alpha] {
        optional(&mut hash, value);
    }
    match mean {
        None => hash.update([0]),
        Some(PriorMean::Constant(c)) => {
            hash.update([1]);
            number(&mut hash, *c);
        }
        Some(PriorMean::PerArm(values)) => {
            hash.update([2]);
            length(&mut hash, values.len());
            values.iter().for_each(|v| number(&mut hash, *v));
        }
    }
    match covariance {
        None => hash.update([0]),
        Some(rows) => {
            hash.update([1]);
            length(&mut hash, rows.len());
            for row in rows {
                length(&mut hash, row.len());
                row.iter().for_each(|v| number(&mut hash, *v));
            }
        }
    }
    length(&mut hash, arms.len());
    for arm in arms {
        length(&mut hash, arm.params.len());
        for (name, value) in &arm.params {
            length(&mut hash, name.len());
            hash.update(name.as_bytes());
            number(&mut hash, *value);
        }
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::arms::PriorKernel;

    fn arms(count: usize) -> Vec<Arm> {
        (0..count)
            .map(|i| Arm {
                name: format!("a{i}"),
                params: [("x".to_string(), i as f64)].into(),
            })
            .collect()
    }

    fn rbf(lengthscale: f64) -> PriorSpec {
        PriorSpec {
            name: Some("p".into()),
            kernel: Some(PriorKernel::Rbf),
            lengthscale: Some(lengthscale),
            variance: None,
            period: None,
            alpha: None,
            mean: Some(PriorMean::Constant(0.5)),
            covariance: None,
        }
    }

    /// A cached prior is the one a fresh build makes; any input the build reads changes
    /// the key, the label does not.
    #[test]
    fn hits_are_the_prior_the_build_makes() {
        let arms = arms(12);
        let spec = rbf(2.0);
        let first = build_prior(&spec, &arms, -1.0).unwrap();
        let again = build_prior(&spec, &arms, -1.0).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let fresh = spec.build(&arms, -1.0).unwrap();
        assert_eq!(first.mean(), fresh.mean());
        assert_eq!(first.covariance(), fresh.covariance());

        let base = key(&spec, &arms, -1.0);
        let renamed = PriorSpec {
            name: Some("other".into()),
            ..spec.clone()
        };
        assert_eq!(key(&renamed, &arms, -1.0), base);
        assert_ne!(key(&spec, &arms, 1.0), base);
        assert_ne!(key(&rbf(2.5), &arms, -1.0), base);
        let matern = PriorSpec {
            kernel: Some(PriorKernel::Matern52),
            ..spec.clone()
        };
        assert_ne!(key(&matern, &arms, -1.0), base);
        let per_arm = PriorSpec {
            mean: Some(PriorMean::PerArm(vec![0.5; 12])),
            ..spec.clone()
        };
        assert_ne!(key(&per_arm, &arms, -1.0), base);
        let mut moved = arms.clone();
        moved[3].params.insert("x".into(), 3.5);
        assert_ne!(key(&spec, &moved, -1.0), base);
        assert_ne!(key(&spec, &arms[..11], -1.0), base);
    }
}
