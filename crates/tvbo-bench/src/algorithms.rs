//! The algorithms the bench can run: one [`AlgorithmEntry`] per API algorithm, in report
//! order ([`ALGORITHMS`]), and the options ([`AlgorithmOptions`]) a run may give one.

use serde_json::Value;

use super::error::BenchError;

/// An algorithm the bench can run: its API name and create-request object. Adding an
/// algorithm is one line here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlgorithmEntry {
    /// The `algorithm.name` of the API.
    pub name: &'static str,
    /// The `algorithm` object of the create request (the paper defaults: no options).
    pub request: &'static str,
    /// Whether the algorithm selects among given priors (003): it runs only on
    /// objectives that come with priors, which it receives in `algorithm.priors` (and
    /// the noise variance in `model.noise`).
    pub needs_priors: bool,
}

/// Every algorithm, in report order (002's Table 3 order, the floor, then 003's rules).
pub const ALGORITHMS: &[AlgorithmEntry] = &[
    AlgorithmEntry {
        name: "gp-ucb",
        request: r#"{"name":"gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "et-gp-ucb",
        request: r#"{"name":"et-gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "r-gp-ucb",
        request: r#"{"name":"r-gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "tv-gp-ucb",
        request: r#"{"name":"tv-gp-ucb"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "w-dbo",
        request: r#"{"name":"w-dbo"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "bolt",
        request: r#"{"name":"bolt"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "random",
        request: r#"{"name":"random"}"#,
        needs_priors: false,
    },
    AlgorithmEntry {
        name: "pe-gp-ucb",
        request: r#"{"name":"pe-gp-ucb"}"#,
        needs_priors: true,
    },
    AlgorithmEntry {
        name: "pe-gp-ts",
        request: r#"{"name":"pe-gp-ts"}"#,
        needs_priors: true,
    },
    AlgorithmEntry {
        name: "hp-gp-ts",
        request: r#"{"name":"hp-gp-ts"}"#,
        needs_priors: true,
    },
    AlgorithmEntry {
        name: "map-gp-ts",
        request: r#"{"name":"map-gp-ts"}"#,
        needs_priors: true,
    },
];

/// The algorithm entry of an API name.
pub fn algorithm(name: &str) -> Result<&'static AlgorithmEntry, BenchError> {
    ALGORITHMS.iter().find(|a| a.name == name).ok_or_else(|| {
        let known: Vec<&str> = ALGORITHMS.iter().map(|a| a.name).collect();
        BenchError::Options(format!(
            "unknown algorithm {name:?} (known: {})",
            known.join(", ")
        ))
    })
}

/// Options of an algorithm's create request (`algorithm.reset_every`, ...), as a JSON
/// object without `name`.
pub type AlgorithmOptions = serde_json::Map<String, Value>;
