//! The committed OpenAPI document is the one the code generates, and the server serves it.

use crate::common;

#[test]
fn committed_openapi_document_is_current() {
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json"))
            .expect("openapi/openapi.json exists");
    assert!(
        committed == tvbo::api::openapi_json(),
        "openapi/openapi.json is stale: run `cargo run -- openapi` and commit the result"
    );
}

#[tokio::test]
async fn the_server_serves_its_openapi_document() {
    let server = common::TestServer::start().await;
    let (status, served) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    let generated: serde_json::Value = serde_json::from_str(&tvbo::api::openapi_json()).unwrap();
    assert_eq!(served, generated);
    for path in [
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/sessions/{id}/suggestions",
        "/v1/sessions/{id}/observations",
        "/v1/sessions/{id}/regret",
        "/v1/sessions/{id}/model",
        "/v1/sessions/{id}/predict",
        "/v1/sessions/{id}/best",
    ] {
        assert!(served["paths"].get(path).is_some(), "{path} missing");
    }
    server.stop().await;
}

/// Parameter values are declared as an integer (an int parameter's), a number or a
/// string (a categorical choice), any of them (an integer is also a number, which
/// `oneOf` would refuse), wherever an answer or a request carries a setting.
#[test]
fn parameter_values_are_integers_numbers_or_choices() {
    let document: serde_json::Value = serde_json::from_str(&tvbo::api::openapi_json()).unwrap();
    let schemas = &document["components"]["schemas"];
    let kinds: Vec<&str> = schemas["ParamValue"]["anyOf"]
        .as_array()
        .expect("anyOf")
        .iter()
        .map(|k| k["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["integer", "number", "string"]);
    for (schema, property) in [
        ("Suggestion", "params"),
        ("Observation", "params"),
        ("Best", "params"),
        ("RecordedOptimum", "params"),
        ("ObservationInput", "params"),
        ("SuggestRequest", "fixed"),
    ] {
        let values = &schemas[schema]["properties"][property];
        let reference = values["additionalProperties"]["$ref"]
            .as_str()
            .or_else(|| values["oneOf"][0]["additionalProperties"]["$ref"].as_str())
            .or_else(|| values["anyOf"][0]["additionalProperties"]["$ref"].as_str());
        assert_eq!(
            reference,
            Some("#/components/schemas/ParamValue"),
            "{schema}.{property}: {values}"
        );
    }
}
