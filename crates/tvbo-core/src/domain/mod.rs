//! The domain: the types every layer shares and the rules that make them valid. The
//! bottom of the crate: it imports nothing from it.
//!
//! [`space`]: parameters, their scales and the map to the unit cube, arms; [`config`]:
//! a session's model, time and goal settings, and the create request; [`algorithm`]: the
//! algorithm's settings and β; [`checked`]: a configuration as its check leaves it, with
//! the search space, the arms' points and the policy's settings; [`hyperpriors`]: the priors a
//! model's hyperparameter fit may use, and what a fit reports; [`priors`]: prior specifications
//! of arm sets; [`kernel`]: the covariance families a model or a prior may use;
//! [`time`]: session time; [`input`]: a measurement as a client sends it; [`records`]: a
//! session's stored state and the changes to it; [`events`]: what a step found worth
//! telling the operator.

pub mod algorithm;
pub mod checked;
pub mod config;
pub mod events;
pub mod hyperpriors;
pub mod input;
pub mod kernel;
pub mod priors;
pub mod records;
pub mod space;
pub mod time;

/// Heap bytes of a vector of rows: the row headers and every row's values (from the
/// capacities, hence `&Vec`).
#[allow(clippy::ptr_arg)]
pub fn rows_heap_bytes(rows: &Vec<Vec<f64>>) -> usize {
    rows.capacity() * std::mem::size_of::<Vec<f64>>()
        + rows
            .iter()
            .map(|r| r.capacity() * std::mem::size_of::<f64>())
            .sum::<usize>()
}

/// A client error in a request: which field, and what was wrong with it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidInput {
    /// Dotted path of the offending field, e.g. `observations[2].value`.
    pub field: String,
    pub message: String,
}

impl InvalidInput {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        InvalidInput {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Checks a client-supplied text that will be stored: `min_chars..=max_chars` characters
/// (Unicode scalar values, not bytes) and no control characters (C0, DEL, C1, which
/// PostgreSQL cannot store (U+0000) or which corrupt logs and terminals), so that both
/// backends accept and return exactly the same texts.
pub fn validate_text(
    field: &str,
    text: &str,
    min_chars: usize,
    max_chars: usize,
) -> Result<(), InvalidInput> {
    let chars = text.chars().count();
    if chars < min_chars || chars > max_chars {
        return Err(InvalidInput::new(
            field,
            format!("must have {min_chars} to {max_chars} characters, has {chars}"),
        ));
    }
    if let Some((at, c)) = text.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(InvalidInput::new(
            field,
            format!(
                "must not contain control characters (U+{:04X} at character {at})",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::validate_text;

    #[test]
    fn texts_are_counted_in_characters_and_refuse_control_characters() {
        // 100 characters of 3 bytes each: within a 100-character limit.
        assert!(validate_text("name", &"€".repeat(100), 1, 100).is_ok());
        assert!(validate_text("name", &"€".repeat(101), 1, 100).is_err());
        assert!(validate_text("name", "", 1, 100).is_err());
        assert!(validate_text("name", "", 0, 100).is_ok());
        for bad in ["a\u{0}b", "tab\there", "line\n", "del\u{7f}", "c1\u{85}"] {
            let err = validate_text("arms[2].name", bad, 0, 100).unwrap_err();
            assert_eq!(err.field, "arms[2].name");
            assert!(err.message.contains("control"), "{bad:?}: {}", err.message);
        }
    }
}
