//! Priors over arms and their posteriors, built once per process and shared by every call
//! that needs them.
//!
//! Building a prior factorises its m×m covariance (O(m³): about 40 ms for 003's 500
//! arms), and the policies that work from priors need every prior's posterior on every
//! suggest and observe. A session's priors never change, so each is built once and kept
//! here, keyed by a SHA-256 digest of everything [`super::priors::build_prior_matrix`]
//! reads: a hit is the prior the build would make, whichever session asks. Posteriors are kept the same way,
//! keyed by a chain of digests over (prior, noise variance, each observation in order):
//! a call finds the posterior of the longest prefix of its observations seen before and
//! conditions it on the rest, O(nm) per new observation instead of O(n²m) from scratch,
//! with the same operations in the same order, so the result is the same bit for bit.
//! Entries past [`PRIOR_CACHE_BYTES`] and [`POSTERIOR_CACHE_BYTES`] are evicted
//! (quick_cache's CLOCK-Pro policy), and rebuilt if asked for again.

use std::sync::{Arc, LazyLock};

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sha2::{Digest, Sha256};

use crate::domain::priors::{PriorMean, PriorSpec};
use crate::domain::space::{Arm, ParamValue};
use crate::gp::arms::{ArmGp, ArmPrior};
use crate::policy::priors::build_prior_matrix;

use super::PolicyError;

/// Bytes of built priors a process keeps (two m×m matrices each: 16 MB at 1000 arms).
pub const PRIOR_CACHE_BYTES: u64 = 256 << 20;

type Key = [u8; 32];

/// Weighs a cached value by the memory it holds.
#[derive(Clone)]
struct Bytes;

impl Weighter<Key, Arc<ArmPrior>> for Bytes {
    fn weight(&self, _key: &Key, prior: &Arc<ArmPrior>) -> u64 {
        prior.heap_bytes() as u64
    }
}

impl Weighter<Key, Arc<ArmGp>> for Bytes {
    fn weight(&self, _key: &Key, posterior: &Arc<ArmGp>) -> u64 {
        posterior.heap_bytes() as u64
    }
}

static PRIORS: LazyLock<Cache<Key, Arc<ArmPrior>, Bytes>> =
    LazyLock::new(|| Cache::with_weighter(64, PRIOR_CACHE_BYTES, Bytes));

/// Bytes of posteriors a process keeps (B = L⁻¹C_{X,·} is n×m: 2 MB at n = m = 500).
pub const POSTERIOR_CACHE_BYTES: u64 = 256 << 20;

static POSTERIORS: LazyLock<Cache<Key, Arc<ArmGp>, Bytes>> =
    LazyLock::new(|| Cache::with_weighter(256, POSTERIOR_CACHE_BYTES, Bytes));

/// `spec` built over `arms` with `sign` ([`super::priors::build_prior_matrix`]), from the
/// cache when the same prior was built before.
pub fn build_prior(
    spec: &PriorSpec,
    arms: &[Arm],
    sign: f64,
) -> Result<Arc<ArmPrior>, PolicyError> {
    prior_with_key(spec, arms, sign, &key(spec, arms, sign))
}

fn prior_with_key(
    spec: &PriorSpec,
    arms: &[Arm],
    sign: f64,
    key: &Key,
) -> Result<Arc<ArmPrior>, PolicyError> {
    PRIORS.get_or_insert_with(key, || {
        build_prior_matrix(spec, arms, sign)
            .map(Arc::new)
            .map_err(|e| PolicyError::Prior(e.to_string()))
    })
}

/// The posterior of `spec` (built over `arms` with `sign`) with noise variance
/// `noise_variance` after `observations` (arm index, value), oldest first: the same as
/// [`ArmGp::new`] followed by [`ArmGp::push`] of each observation, from the cached
/// posterior of the longest prefix of `observations` seen before.
pub fn posterior_after(
    spec: &PriorSpec,
    arms: &[Arm],
    sign: f64,
    noise_variance: f64,
    observations: &[(usize, f64)],
) -> Result<ArmGp, PolicyError> {
    let prior_key = key(spec, arms, sign);
    // chain[k] names the posterior after the first k observations.
    let mut chain = Vec::with_capacity(observations.len() + 1);
    chain.push(digest(&[
        &prior_key,
        &noise_variance.to_bits().to_le_bytes(),
    ]));
    for (arm, y) in observations {
        let previous = chain.last().expect("the chain starts with the prior");
        chain.push(digest(&[
            previous,
            &(*arm as u64).to_le_bytes(),
            &y.to_bits().to_le_bytes(),
        ]));
    }
    let cached = (0..chain.len())
        .rev()
        .find_map(|k| POSTERIORS.get(&chain[k]).map(|posterior| (k, posterior)));
    let (start, mut posterior) = match cached {
        Some((k, posterior)) => (k, ArmGp::clone(&posterior)),
        None => (
            0,
            ArmGp::new(
                prior_with_key(spec, arms, sign, &prior_key)?,
                noise_variance,
            ),
        ),
    };
    if start == observations.len() {
        return Ok(posterior);
    }
    for &(arm, y) in &observations[start..] {
        posterior.push(arm, y);
    }
    POSTERIORS.insert(chain[observations.len()], Arc::new(posterior.clone()));
    Ok(posterior)
}

fn digest(parts: &[&[u8]]) -> Key {
    let mut hash = Sha256::new();
    parts.iter().for_each(|part| hash.update(part));
    hash.finalize().into()
}

/// The digest of the inputs of [`super::priors::build_prior_matrix`]: every numeric field by its bits,
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
            match value {
                ParamValue::Number(value) => number(&mut hash, *value),
                ParamValue::Choice(choice) => {
                    length(&mut hash, choice.len());
                    hash.update(choice.as_bytes());
                }
            }
        }
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::space::numbers;
    use crate::gp::arms::PriorKernel;

    fn arms(count: usize) -> Vec<Arm> {
        (0..count)
            .map(|i| Arm {
                name: format!("a{i}"),
                params: numbers([("x", i as f64)]),
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
        let fresh = build_prior_matrix(&spec, &arms, -1.0).unwrap();
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
        moved[3].params.insert("x".into(), 3.5.into());
        assert_ne!(key(&spec, &moved, -1.0), base);
        assert_ne!(key(&spec, &arms[..11], -1.0), base);
    }

    /// From a cached prefix or from scratch, the posterior is the one pushed from the
    /// prior, bit for bit; another noise variance or another value is another posterior.
    #[test]
    fn posteriors_equal_the_ones_built_from_scratch() {
        let arms = arms(15);
        let spec = rbf(3.0);
        let observations: Vec<(usize, f64)> = (0..9)
            .map(|i| ((i * 7) % 15, i as f64 * 0.3 - 1.0))
            .collect();
        let scratch = |count: usize, noise: f64| {
            let mut gp = ArmGp::new(
                Arc::new(build_prior_matrix(&spec, &arms, 1.0).unwrap()),
                noise,
            );
            observations[..count]
                .iter()
                .for_each(|&(a, y)| gp.push(a, y));
            gp
        };
        let same = |a: &ArmGp, b: &ArmGp| {
            assert_eq!(a.len(), b.len());
            assert_eq!(a.means(), b.means());
            assert!((0..15).all(|i| a.variance(i) == b.variance(i)));
        };
        for count in [4, 9, 6, 0, 9] {
            let cached = posterior_after(&spec, &arms, 1.0, 0.1, &observations[..count]).unwrap();
            same(&cached, &scratch(count, 0.1));
        }
        let noisier = posterior_after(&spec, &arms, 1.0, 0.2, &observations).unwrap();
        same(&noisier, &scratch(9, 0.2));
        let mut changed = observations.clone();
        changed[2].1 += 1.0;
        let other = posterior_after(&spec, &arms, 1.0, 0.1, &changed).unwrap();
        assert_ne!(other.means(), scratch(9, 0.1).means());
    }
}
