//! The error of a benchmark.

use tvbo_core::policy::PolicyError;

/// Failures of a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad options (unknown suite, objective or algorithm; invalid numbers).
    #[error("{0}")]
    Options(String),
    /// A session configuration the service rejects.
    #[error("session configuration: {0}")]
    Config(String),
    /// An objective that cannot be built.
    #[error("objective: {0}")]
    Objective(String),
    #[error("policy: {0}")]
    Policy(String),
    /// The server answered with an error or could not be reached.
    #[error("server: {0}")]
    Http(String),
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
    /// The thread's CPU clock could not be read.
    #[error("reading the thread's CPU clock: {0}")]
    Clock(std::io::Error),
}

/// `message` (the service's validation message of a create request or of a search space)
/// with every field path `parameters[i]` replaced by the parameter's name, `names[i]`:
/// `parameters[2].low: must be > 0` reads `parameter "mmap_mib", low: must be > 0`. An
/// index without a name in `names` is left as it is.
pub fn name_parameters(message: &str, names: &[&str]) -> String {
    const FIELD: &str = "parameters[";
    let mut named = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(FIELD) {
        named.push_str(&rest[..start]);
        let after = &rest[start + FIELD.len()..];
        let index = after
            .find(']')
            .and_then(|end| Some((after[..end].parse::<usize>().ok()?, end)));
        match index.and_then(|(i, end)| Some((names.get(i)?, end))) {
            Some((name, end)) => {
                named.push_str(&format!("parameter {name:?}"));
                rest = &after[end + 1..];
                if let Some(field) = rest.strip_prefix('.') {
                    named.push_str(", ");
                    rest = field;
                }
            }
            None => {
                named.push_str(FIELD);
                rest = after;
            }
        }
    }
    named.push_str(rest);
    named
}

impl From<PolicyError> for BenchError {
    fn from(e: PolicyError) -> Self {
        BenchError::Policy(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_indices_read_as_names() {
        let names = ["codec", "mmap_mib"];
        assert_eq!(
            name_parameters(
                "parameters[1].low: must be > 0 for a log-scaled parameter",
                &names
            ),
            "parameter \"mmap_mib\", low: must be > 0 for a log-scaled parameter"
        );
        assert_eq!(
            name_parameters("parameters[0]: bad; parameters[1].high: no", &names),
            "parameter \"codec\": bad; parameter \"mmap_mib\", high: no"
        );
        // Other fields, indices without a name and broken paths stay as they are.
        for kept in [
            "parameters: needs at least one parameter",
            "parameters[2].low: must be > 0",
            "parameters[x].low",
            "arms[0].params.x1: is missing",
            "parameters[1",
        ] {
            assert_eq!(name_parameters(kept, &names), kept);
        }
    }
}
