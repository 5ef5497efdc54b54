//! Checks of a JSON body that serde's derived types leave out, made against the body's
//! schema in the API's own document (so the server holds bodies to what the document
//! says): no object has a key twice (serde would keep the last value), and no value is an
//! array where its schema admits none (serde's derived structs and internally tagged
//! enums also take their fields as an array, in order).

use std::collections::HashSet;
use std::fmt;
use std::sync::OnceLock;

use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use utoipa::OpenApi;

/// The first thing wrong with a body's shape, with the path of the value at fault
/// (`observations[0].params.x`; empty for the body itself).
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeError {
    /// A key that occurs twice in one object.
    RepeatedKey(String),
    /// An array where the schema admits none; the types it admits, e.g. `object or null`.
    UnexpectedArray(String, String),
}

/// Walks a whole JSON document (so syntax errors anywhere are still reported) and
/// returns the first shape error in document order, checking arrays against the
/// document's schema `schema` (a name in `components/schemas`).
pub fn check(bytes: &[u8], schema: &str) -> Result<Option<ShapeError>, serde_json::Error> {
    let components = components();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let walker = Walker {
        path: "",
        schemas: Schemas::of(components, components.get(schema)),
    };
    let found = walker.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found)
}

/// The schemas of the API's document, generated once.
fn components() -> &'static Map<String, Value> {
    static COMPONENTS: OnceLock<Map<String, Value>> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let document = serde_json::to_value(crate::api::ApiDoc::openapi())
            .expect("the OpenAPI document serialises");
        match &document["components"]["schemas"] {
            Value::Object(schemas) => schemas.clone(),
            _ => Map::new(),
        }
    })
}

/// The schemas a value must match one of: the alternatives of `oneOf` and `anyOf`, with
/// `$ref`s resolved. `None`: the value may be anything.
#[derive(Clone)]
struct Schemas<'s> {
    components: &'s Map<String, Value>,
    alternatives: Option<Vec<&'s Value>>,
}

impl<'s> Schemas<'s> {
    fn of(components: &'s Map<String, Value>, schema: Option<&'s Value>) -> Self {
        let mut alternatives = Vec::new();
        let constrained = schema.is_some_and(|s| flatten(components, s, &mut alternatives));
        Schemas {
            components,
            alternatives: constrained.then_some(alternatives),
        }
    }

    fn anything(components: &'s Map<String, Value>) -> Self {
        Schemas::of(components, None)
    }

    /// The alternatives that admit values of JSON type `kind` (all of them when the value
    /// may be anything).
    fn admitting(&self, kind: &str) -> Option<Vec<&'s Value>> {
        self.alternatives
            .as_ref()
            .map(|all| all.iter().copied().filter(|s| admits(s, kind)).collect())
    }

    fn admits_array(&self) -> bool {
        self.admitting("array")
            .is_none_or(|arrays| !arrays.is_empty())
    }

    /// The types the schemas admit, e.g. `object or null`.
    fn types(&self) -> String {
        let mut types: Vec<&str> = Vec::new();
        for schema in self.alternatives.iter().flatten() {
            let named = match &schema["type"] {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for t in named {
                if !types.contains(&t) {
                    types.push(t);
                }
            }
        }
        types.join(" or ")
    }

    /// The schemas of member `key` of an object.
    fn member(&self, key: &str) -> Self {
        self.children("object", |schema| {
            match schema.get("properties").and_then(|p| p.get(key)) {
                Some(property) => Some(property),
                None => match schema.get("additionalProperties") {
                    Some(Value::Object(additional)) if !additional.is_empty() => {
                        schema.get("additionalProperties")
                    }
                    // Unknown members are the typed parse's to refuse, by name.
                    _ => None,
                },
            }
        })
    }

    /// The schemas of the elements of an array.
    fn items(&self) -> Self {
        self.children("array", |schema| schema.get("items"))
    }

    /// The union of `child` of every alternative admitting `kind`; anything when one of
    /// them does not constrain the child.
    fn children(&self, kind: &str, child: impl Fn(&'s Value) -> Option<&'s Value>) -> Self {
        let Some(parents) = self.admitting(kind) else {
            return Schemas::anything(self.components);
        };
        let mut alternatives = Vec::new();
        for parent in parents {
            match child(parent) {
                Some(schema) if flatten(self.components, schema, &mut alternatives) => {}
                _ => return Schemas::anything(self.components),
            }
        }
        Schemas {
            components: self.components,
            alternatives: Some(alternatives),
        }
    }
}

/// Adds the alternatives of `schema` to `out`; false when it does not constrain the value
/// (an empty schema, or a `$ref` that does not resolve).
fn flatten<'s>(
    components: &'s Map<String, Value>,
    schema: &'s Value,
    out: &mut Vec<&'s Value>,
) -> bool {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        return reference
            .strip_prefix("#/components/schemas/")
            .and_then(|name| components.get(name))
            .is_some_and(|target| flatten(components, target, out));
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(Value::Array(alternatives)) = schema.get(keyword) {
            return alternatives.iter().all(|a| flatten(components, a, out));
        }
    }
    if schema.get("type").is_none() {
        return false;
    }
    out.push(schema);
    true
}

/// Whether a schema's `type` admits JSON values of type `kind`.
fn admits(schema: &Value, kind: &str) -> bool {
    match &schema["type"] {
        Value::String(t) => t == kind,
        Value::Array(ts) => ts.iter().any(|t| t == kind),
        _ => true,
    }
}

/// A value at `path` that must match one of `schemas`.
struct Walker<'p, 's> {
    path: &'p str,
    schemas: Schemas<'s>,
}

impl<'de> DeserializeSeed<'de> for Walker<'_, '_> {
    type Value = Option<ShapeError>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker<'_, '_> {
    type Value = Option<ShapeError>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut first = (!self.schemas.admits_array())
            .then(|| ShapeError::UnexpectedArray(self.path.to_string(), self.schemas.types()));
        let items = self.schemas.items();
        let mut index = 0;
        loop {
            let path = format!("{}[{index}]", self.path);
            let walker = Walker {
                path: &path,
                schemas: items.clone(),
            };
            let Some(found) = seq.next_element_seed(walker)? else {
                return Ok(first);
            };
            first = first.or(found);
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut keys = HashSet::new();
        let mut first = None;
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            let walker = Walker {
                path: &path,
                schemas: self.schemas.member(&key),
            };
            let repeated = (!keys.insert(key)).then(|| ShapeError::RepeatedKey(path.clone()));
            let inner = map.next_value_seed(walker)?;
            first = first.or(repeated).or(inner);
        }
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_checked_against_the_schema() {
        let found = check(br#"[null, null]"#, "SuggestRequest").unwrap();
        assert_eq!(
            found,
            Some(ShapeError::UnexpectedArray(String::new(), "object".into()))
        );
        let batch = br#"{"observations": [{"value": 1}, [null, null, 1.0]]}"#;
        let found = check(batch, "ObservationBatch").unwrap();
        assert_eq!(
            found,
            Some(ShapeError::UnexpectedArray(
                "observations[1]".into(),
                "object".into()
            ))
        );
        let algorithm = br#"{"parameters": [], "algorithm": ["random"]}"#;
        let found = check(algorithm, "CreateSession").unwrap();
        assert_eq!(
            found,
            Some(ShapeError::UnexpectedArray(
                "algorithm".into(),
                "object or null".into()
            ))
        );
        let fine = br#"{"parameters": [{"name": "x", "low": 0, "high": 1}], "arms": null}"#;
        assert_eq!(check(fine, "CreateSession").unwrap(), None);
    }

    #[test]
    fn repeated_keys_are_found_in_document_order() {
        let nested = br#"{"a": [{"b": 1}, {"c": {"d": 1, "d": 2}}], "a": 3}"#;
        assert_eq!(
            check(nested, "SuggestRequest").unwrap(),
            Some(ShapeError::RepeatedKey("a[1].c.d".into()))
        );
        assert!(check(br#"{"a": 1, "a": 2,}"#, "SuggestRequest").is_err());
    }
}
