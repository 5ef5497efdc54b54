//! Resume by name (`"resume": true` in a create request): whether the session found is
//! the one the request asks for.

use serde_json::Value;

use crate::domain::config::SessionConfig;

/// Whether a create request with `resume` found its session (200) or made it (201).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resumed {
    /// An existing session of the name was answered.
    Yes,
    /// There was none; the request made it.
    No,
}

/// The path of the first field (`model.warmup`, `parameters[1].high`) in which the
/// configurations differ, in their stored form; `None` when they are equal.
pub fn first_difference(requested: &SessionConfig, existing: &SessionConfig) -> Option<String> {
    let requested = serde_json::to_value(requested).expect("a configuration serialises");
    let existing = serde_json::to_value(existing).expect("a configuration serialises");
    difference(&requested, &existing, String::new())
}

fn difference(a: &Value, b: &Value, path: String) -> Option<String> {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            // Keys in order (serde_json's maps are sorted), a key on one side only
            // differing too.
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .find_map(|key| match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => difference(x, y, join(key)),
                    _ => Some(join(key)),
                })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| difference(x, y, format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(if path.is_empty() { "body".into() } else { path }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::CreateSession;

    fn config(body: serde_json::Value) -> SessionConfig {
        let request: CreateSession = serde_json::from_value(body).unwrap();
        SessionConfig::from_request(request, 7).unwrap()
    }

    #[test]
    fn names_the_first_field_that_differs() {
        let base = serde_json::json!({
            "name": "a",
            "parameters": [{"name": "x", "low": 0, "high": 1}, {"name": "y", "low": 0, "high": 2}],
            "model": {"warmup": 5}
        });
        let a = config(base.clone());
        assert_eq!(first_difference(&a, &a.clone()), None);
        let mut other = base.clone();
        other["parameters"][1]["high"] = 3.into();
        assert_eq!(
            first_difference(&a, &config(other)).as_deref(),
            Some("parameters[1].high")
        );
        let mut other = base.clone();
        other["model"]["warmup"] = 6.into();
        assert_eq!(
            first_difference(&a, &config(other)).as_deref(),
            Some("model.warmup")
        );
        let mut other = base.clone();
        other["parameters"][1]["step"] = 0.5.into();
        assert_eq!(
            first_difference(&a, &config(other)).as_deref(),
            Some("parameters[1].step")
        );
        let mut other = base;
        other["parameters"] = serde_json::json!([{"name": "x", "low": 0, "high": 1}]);
        assert_eq!(
            first_difference(&a, &config(other)).as_deref(),
            Some("parameters")
        );
    }
}
