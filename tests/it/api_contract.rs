//! The API keeps the contract its OpenAPI document states (issue 23, defects 5 and 8):
//! parameters sit where the document puts them, every answer the server can give is
//! documented, the request schemas are as strict as the server, and every error,
//! including the transport's own (timeout, oversized request heads), is problem+json
//! naming its field, in the API's words rather than the framework's.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestServer;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tvbo::store::{PoolSettings, SqliteStore};

backend_tests!(
    #[tokio::test]
    a_client_built_from_the_document_works,
    query_errors_name_the_parameter_in_the_apis_words,
    repeated_json_keys_are_refused_naming_their_path,
    arrays_where_objects_belong_are_refused,
    idempotency_keys_are_what_the_document_says,
    oversized_request_heads_are_problems,
);

/// The document the server serves.
fn document() -> Value {
    serde_json::from_str(&tvbo::api::openapi_json()).expect("the document is JSON")
}

/// Every operation of the document: (method, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            all.push((method.to_uppercase(), path.clone(), operation.clone()));
        }
    }
    all
}

/// The operation with the given id: (method, path, operation).
fn operation(doc: &Value, id: &str) -> (String, String, Value) {
    operations(doc)
        .into_iter()
        .find(|(_, _, op)| op["operationId"] == id)
        .unwrap_or_else(|| panic!("no operation {id}"))
}

/// A schema, following one `$ref` into `components/schemas`.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.trim_start_matches("#/components/schemas/");
            &doc["components"]["schemas"][name]
        }
        None => schema,
    }
}

/// The response an operation documents for `status`, following a `$ref` into
/// `components/responses`; None when the status is undocumented.
fn documented<'a>(doc: &'a Value, op: &'a Value, status: u16) -> Option<&'a Value> {
    let response = op["responses"].get(status.to_string())?;
    Some(match response["$ref"].as_str() {
        Some(reference) => {
            let name = reference.trim_start_matches("#/components/responses/");
            &doc["components"]["responses"][name]
        }
        None => response,
    })
}

/// A request built the way a client generated from the document builds it: each given
/// parameter goes where the document declares it (path, query or header), and a body,
/// if any, as JSON.
struct DocumentRequest {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
}

fn build(doc: &Value, operation_id: &str, values: &[(&str, &str)]) -> DocumentRequest {
    let (method, mut path, op) = operation(doc, operation_id);
    let mut request = DocumentRequest {
        method: method.parse().unwrap(),
        path: String::new(),
        query: Vec::new(),
        headers: Vec::new(),
    };
    let declared = op["parameters"].as_array().cloned().unwrap_or_default();
    for (name, value) in values {
        let parameter = declared
            .iter()
            .find(|p| p["name"] == *name)
            .unwrap_or_else(|| panic!("{operation_id} declares no parameter {name}"));
        match parameter["in"].as_str() {
            Some("path") => {
                let placeholder = format!("{{{name}}}");
                assert!(
                    path.contains(&placeholder),
                    "{operation_id}: the document puts `{name}` in the path {path}, which has \
                     no {placeholder}: a generated client cannot send it"
                );
                path = path.replace(&placeholder, value);
            }
            Some("query") => request.query.push((name.to_string(), value.to_string())),
            Some("header") => request.headers.push((name.to_string(), value.to_string())),
            other => panic!("{operation_id}: `{name}` is in {other:?}"),
        }
    }
    request.path = path;
    request
}

/// Sends a document-built request; checks that the answer's status and content type are
/// documented for the operation, and returns status and body.
async fn send(
    server: &TestServer,
    doc: &Value,
    operation_id: &str,
    values: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value) {
    let request = build(doc, operation_id, values);
    let mut url = reqwest::Url::parse(&server.url(&request.path)).unwrap();
    if !request.query.is_empty() {
        url.query_pairs_mut().extend_pairs(&request.query);
    }
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    let mut builder = axum::http::Request::builder()
        .method(request.method)
        .uri(target);
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    let request = match body {
        Some(body) => builder
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string())),
        None => builder.body(axum::body::Body::empty()),
    }
    .unwrap();
    let response = server.send(request).await;
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let (status, text) = TestServer::text(response).await;
    let (_, _, op) = operation(doc, operation_id);
    let answer = documented(doc, &op, status)
        .unwrap_or_else(|| panic!("{operation_id} answered {status}, undocumented: {text}"));
    if let Some(content_type) = content_type {
        let essence = content_type.split(';').next().unwrap().trim();
        assert!(
            answer["content"].get(essence).is_some(),
            "{operation_id} answered {status} as {content_type}, undocumented: {text}"
        );
    }
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A 2-D wall-clock session.
fn wall_session() -> Value {
    json!({
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": "gp-ucb"},
        "model": {"warmup": 2},
        "seed": 5
    })
}

#[test]
fn parameters_sit_where_their_paths_can_hold_them() {
    let doc = document();
    let mut wrong = Vec::new();
    for (method, path, op) in operations(&doc) {
        let parameters = op["parameters"].as_array().cloned().unwrap_or_default();
        for p in &parameters {
            let name = p["name"].as_str().unwrap();
            let placeholder = format!("{{{name}}}");
            match p["in"].as_str().unwrap() {
                "path" if !path.contains(&placeholder) => {
                    wrong.push(format!(
                        "{method} {path}: path parameter {name} not in the path"
                    ));
                }
                "path" if p["required"] != true => {
                    wrong.push(format!(
                        "{method} {path}: path parameter {name} not required"
                    ));
                }
                "query" | "header" if p["required"] == true => {
                    wrong.push(format!(
                        "{method} {path}: optional {name} declared required"
                    ));
                }
                _ => {}
            }
        }
        for placeholder in path.split('{').skip(1) {
            let name = placeholder.split('}').next().unwrap();
            if !parameters
                .iter()
                .any(|p| p["name"] == name && p["in"] == "path")
            {
                wrong.push(format!("{method} {path}: {{{name}}} is not declared"));
            }
        }
    }
    for (id, names) in [
        (
            "list_sessions",
            &["limit", "cursor", "name", "algorithm", "sort", "order"][..],
        ),
        (
            "list_observations",
            &[
                "after",
                "limit",
                "offset",
                "state",
                "include_pruned",
                "sort",
                "order",
            ][..],
        ),
        ("best", &["t"][..]),
    ] {
        let (_, _, op) = operation(&doc, id);
        for name in names {
            let declared = op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == *name);
            match declared {
                Some(p) if p["in"] == "query" && p["required"] == false => {}
                other => wrong.push(format!("{id}: {name} is {other:?}, not an optional query")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_answer_the_server_can_give_is_documented() {
    let doc = document();
    let mut missing = Vec::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"].as_str().unwrap().to_string();
        let has_body = op.get("requestBody").is_some();
        let has_query_or_header = op["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["in"] != "path"));
        let mut expected = vec![414, 431, 503];
        if has_body {
            expected.extend([400, 413, 415, 422]);
        }
        if has_query_or_header {
            expected.push(400);
        }
        if path.contains("{id}") {
            expected.push(404);
        }
        expected.extend(match id.as_str() {
            "list_sessions" | "list_observations" | "best" => &[422][..],
            "suggest" | "observe" | "predict" => &[409][..],
            _ => &[],
        });
        if id == "best" {
            expected.push(409);
        }
        for status in expected {
            match documented(&doc, &op, status) {
                None => missing.push(format!("{method} {path} ({id}): {status}")),
                Some(answer) if status >= 400 => {
                    let schema = &answer["content"]["application/problem+json"]["schema"];
                    if schema["$ref"] != "#/components/schemas/Problem" {
                        missing.push(format!("{method} {path}: {status} is not a Problem"));
                    }
                    if answer["description"].as_str().is_none_or(str::is_empty) {
                        missing.push(format!("{method} {path}: {status} has no description"));
                    }
                }
                Some(_) => {}
            }
        }
    }
    assert!(missing.is_empty(), "undocumented:\n{}", missing.join("\n"));
}

#[test]
fn request_schemas_state_the_servers_bounds() {
    use tvbo::api::extract::{IDEMPOTENCY_KEY_PATTERN, MAX_KEY_LEN};
    use tvbo::domain::space::MAX_MAGNITUDE;
    use tvbo::domain::time::MAX_CLIENT_TIME;
    use tvbo::session::service::{
        MAX_OBSERVATIONS_PER_CALL, MAX_PREDICT_POINTS, MAX_SUGGESTIONS_PER_CALL,
    };

    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let suggest = &schemas["SuggestRequest"]["properties"];
    assert_eq!(suggest["count"]["minimum"], 1);
    assert_eq!(suggest["count"]["maximum"], MAX_SUGGESTIONS_PER_CALL);
    let input = &schemas["ObservationInput"]["properties"];
    for t in [&suggest["t"], &input["t"]] {
        assert_eq!(t["minimum"].as_f64(), Some(-MAX_CLIENT_TIME), "{t}");
        assert_eq!(t["maximum"].as_f64(), Some(MAX_CLIENT_TIME), "{t}");
    }
    assert_eq!(input["value"]["minimum"].as_f64(), Some(-MAX_MAGNITUDE));
    assert_eq!(input["value"]["maximum"].as_f64(), Some(MAX_MAGNITUDE));
    assert_eq!(input["regret"]["minimum"], 0);
    let observations = &schemas["ObservationBatch"]["properties"]["observations"];
    assert_eq!(observations["minItems"], 1);
    assert_eq!(observations["maxItems"], MAX_OBSERVATIONS_PER_CALL);
    let points = &schemas["PredictRequest"]["properties"]["points"];
    assert_eq!(points["minItems"], 1);
    assert_eq!(points["maxItems"], MAX_PREDICT_POINTS);
    // Observe takes one observation or a batch, and says so.
    let (_, _, observe) = operation(&doc, "observe");
    let body = resolve(
        &doc,
        &observe["requestBody"]["content"]["application/json"]["schema"],
    );
    assert_eq!(
        body["oneOf"],
        json!([
            {"$ref": "#/components/schemas/ObservationInput"},
            {"$ref": "#/components/schemas/ObservationBatch"}
        ])
    );
    for id in ["create_session", "suggest", "observe"] {
        let (_, _, op) = operation(&doc, id);
        let key = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "Idempotency-Key")
            .unwrap_or_else(|| panic!("{id} has no Idempotency-Key"));
        assert_eq!(key["in"], "header");
        assert_eq!(key["schema"]["pattern"], IDEMPOTENCY_KEY_PATTERN, "{id}");
        assert_eq!(key["schema"]["maxLength"], MAX_KEY_LEN, "{id}");
    }
    // The listing's cursor is described by the pattern the server parses by, and its
    // algorithm filter names every algorithm a session can have.
    let (_, _, list) = operation(&doc, "list_sessions");
    let parameter = |name: &str| {
        list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        parameter("cursor")["schema"]["pattern"],
        tvbo::session::listing::CURSOR_PATTERN
    );
    let algorithm = parameter("algorithm");
    let filter = resolve(&doc, &algorithm["schema"]);
    let mut filtered: Vec<&str> = filter["enum"]
        .as_array()
        .map(|names| names.iter().map(|n| n.as_str().unwrap()).collect())
        .unwrap_or_else(|| panic!("{filter}"));
    let mut algorithms: Vec<&str> = schemas["AlgorithmConfig"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| variant["properties"]["name"]["enum"][0].as_str().unwrap())
        .collect();
    filtered.sort_unstable();
    algorithms.sort_unstable();
    assert_eq!(filtered, algorithms);
}

#[test]
fn links_chain_create_suggest_and_observe() {
    let doc = document();
    let (_, _, create) = operation(&doc, "create_session");
    let links = &create["responses"]["201"]["links"];
    for target in [
        "suggest",
        "observe",
        "get_session",
        "best",
        "delete_session",
    ] {
        assert_eq!(links[target]["operationId"], target);
        assert_eq!(links[target]["parameters"]["id"], "$response.body#/id");
    }
    let (_, _, suggest) = operation(&doc, "suggest");
    let observe = &suggest["responses"]["201"]["links"]["observe"];
    assert_eq!(observe["parameters"]["id"], "$request.path.id");
    assert_eq!(
        observe["requestBody"]["suggestion_id"],
        "$response.body#/suggestions/0/id"
    );
}

/// Creates, observes, lists and recommends with requests built from the document alone.
async fn a_client_built_from_the_document_works(server: TestServer) {
    let doc = document();
    let (status, first) = send(&server, &doc, "create_session", &[], Some(&wall_session())).await;
    assert_eq!(status, 201, "{first}");
    let (status, _) = send(&server, &doc, "create_session", &[], Some(&wall_session())).await;
    assert_eq!(status, 201);
    let id = first["id"].as_str().unwrap();
    let (status, page) = send(&server, &doc, "list_sessions", &[("limit", "1")], None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["sessions"].as_array().unwrap().len(), 1, "{page}");
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let (status, next) = send(&server, &doc, "list_sessions", &[("cursor", cursor)], None).await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["sessions"].as_array().unwrap().len(), 1, "{next}");

    let (status, suggested) = send(
        &server,
        &doc,
        "suggest",
        &[("id", id), ("Idempotency-Key", "first-suggestion")],
        Some(&json!({"count": 2})),
    )
    .await;
    assert_eq!(status, 201, "{suggested}");
    let batch = json!({"observations": [
        {"suggestion_id": suggested["suggestions"][0]["id"], "value": 1.0},
        {"suggestion_id": suggested["suggestions"][1]["id"], "value": 2.0}
    ]});
    let (status, observed) = send(&server, &doc, "observe", &[("id", id)], Some(&batch)).await;
    assert_eq!(status, 201, "{observed}");
    let listed = [
        ("id", id),
        ("after", "1"),
        ("limit", "1"),
        ("include_pruned", "true"),
    ];
    let (status, page) = send(&server, &doc, "list_observations", &listed, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["observations"][0]["seq"], 2, "{page}");
    let (status, best) = send(&server, &doc, "best", &[("id", id), ("t", "1.5")], None).await;
    assert_eq!(status, 200, "{best}");
    assert_eq!(best["t"], 1.5, "{best}");
    let points = json!({"points": [{"x": 0.5, "y": 0.5}]});
    let (status, predicted) = send(&server, &doc, "predict", &[("id", id)], Some(&points)).await;
    assert_eq!(status, 200, "{predicted}");
    for read in ["get_session", "regret", "model"] {
        let (status, body) = send(&server, &doc, read, &[("id", id)], None).await;
        assert_eq!(status, 200, "{read}: {body}");
    }
    let (status, _) = send(&server, &doc, "delete_session", &[("id", id)], None).await;
    assert_eq!(status, 204);
    let (status, gone) = send(&server, &doc, "get_session", &[("id", id)], None).await;
    assert_eq!(status, 404, "{gone}");
    server.stop().await;
}

/// A problem+json answer: status, the problem, and the raw text for messages.
async fn problem(response: reqwest::Response) -> (u16, Value, String) {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    assert_eq!(
        content_type, "application/problem+json",
        "{status} {text:?} is not problem+json"
    );
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["status"], status, "{text}");
    (status, body, text)
}

/// Asserts a problem names `field` and says so first in its detail.
fn names(body: &Value, field: &str, text: &str) {
    assert_eq!(body["field"], field, "{text}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with(&format!("{field}: ")), "{text}");
}

async fn query_errors_name_the_parameter_in_the_apis_words(server: TestServer) {
    let session = server.create(wall_session()).await;
    let cases = [
        ("/v1/sessions?limit=abc".to_string(), "limit"),
        ("/v1/sessions?limit=1&limit=2".to_string(), "limit"),
        ("/v1/sessions?page=2".to_string(), "page"),
        ("/v1/sessions?cursor=%FF".to_string(), "cursor"),
        (
            "/v1/sessions?limit=99999999999999999999".to_string(),
            "limit",
        ),
        (
            format!("/v1/sessions/{session}/observations?include_pruned=maybe"),
            "include_pruned",
        ),
        (
            format!("/v1/sessions/{session}/observations?after=1.5"),
            "after",
        ),
        (format!("/v1/sessions/{session}/best?t=soon"), "t"),
    ];
    for (path, field) in cases {
        let before = server.dump().await;
        let response = server.client.get(server.url(&path)).send().await.unwrap();
        let (status, body, text) = problem(response).await;
        assert_eq!(status, 400, "{path}: {text}");
        assert_eq!(body["type"], "https://tvbo.dev/problems/invalid-query");
        names(&body, field, &text);
        for framework in ["Failed to deserialize", "query string", "Query"] {
            assert!(!text.contains(framework), "{path}: {text}");
        }
        assert_eq!(server.dump().await, before, "{path} changed rows");
    }
    // Values are percent-decoded like any form: `+` is a space, `%2B` a plus.
    let response = server
        .client
        .get(server.url(&format!("/v1/sessions/{session}/best?t=%2B1e0")))
        .send()
        .await
        .unwrap();
    assert_ne!(
        response.status().as_u16(),
        400,
        "{:?}",
        response.text().await
    );
    server.stop().await;
}

async fn repeated_json_keys_are_refused_naming_their_path(server: TestServer) {
    let session = server.create(wall_session()).await;
    let s = format!("/v1/sessions/{session}");
    let cases = [
        (
            format!("{s}/observations"),
            r#"{"params": {"x": 0.1, "y": 0.5, "x": 0.9}, "value": 1}"#,
            "params.x",
        ),
        (
            format!("{s}/observations"),
            r#"{"observations": [{"params": {"x": 0.1, "y": 0.5}, "value": 1},
                {"params": {"x": 0.2, "y": 0.5}, "value": 1, "value": 2}]}"#,
            "observations[1].value",
        ),
        (
            format!("{s}/suggestions"),
            r#"{"count": 1, "count": 64}"#,
            "count",
        ),
        (
            format!("{s}/predict"),
            r#"{"points": [{"x": 0.5, "y": 0.5, "y": 0.7}]}"#,
            "points[0].y",
        ),
        (
            "/v1/sessions".to_string(),
            r#"{"parameters": [{"name": "x", "low": 0, "high": 1}], "seed": 1, "seed": 2}"#,
            "seed",
        ),
        (
            "/v1/sessions".to_string(),
            r#"{"parameters": [{"name": "x", "low": 0, "high": 1, "low": 0.5}]}"#,
            "parameters[0].low",
        ),
    ];
    for (path, body, field) in cases {
        let before = server.dump().await;
        let response = server
            .client
            .post(server.url(&path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let (status, problem, text) = problem(response).await;
        assert_eq!(status, 422, "{path} {body}: {text}");
        names(&problem, field, &text);
        assert_eq!(server.dump().await, before, "{path} {body} changed rows");
    }
    // Equal keys in different objects are not repeats.
    let (status, body) = server
        .post(
            &format!("{s}/observations"),
            &json!({"observations": [
                {"params": {"x": 0.1, "y": 0.5}, "value": 1},
                {"params": {"x": 0.2, "y": 0.5}, "value": 2}
            ]}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    server.stop().await;
}

/// serde's derived structs (and internally tagged enums) also read their fields from an
/// array, in order; the document says object, and so does the server.
async fn arrays_where_objects_belong_are_refused(server: TestServer) {
    let session = server.create(wall_session()).await;
    let s = format!("/v1/sessions/{session}");
    let cases = [
        (format!("{s}/suggestions"), json!([null, null]), "body"),
        (format!("{s}/suggestions"), json!([2]), "body"),
        (
            format!("{s}/observations"),
            json!({"observations": [[null, {"x": 0.5, "y": 0.5}, 1.0]]}),
            "observations[0]",
        ),
        (
            "/v1/sessions".to_string(),
            json!({"parameters": [{"name": "x", "low": 0, "high": 1}], "algorithm": ["random"]}),
            "algorithm",
        ),
        (
            "/v1/sessions".to_string(),
            json!({"parameters": [["x", null, 0, 1]]}),
            "parameters[0]",
        ),
    ];
    for (path, body, field) in cases {
        let before = server.dump().await;
        let response = server
            .client
            .post(server.url(&path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, problem, text) = problem(response).await;
        assert_eq!(status, 422, "{path} {body}: {text}");
        names(&problem, field, &text);
        assert_eq!(server.dump().await, before, "{path} {body} changed rows");
    }
    server.stop().await;
}

async fn idempotency_keys_are_what_the_document_says(server: TestServer) {
    let session = server.create(wall_session()).await;
    let path = format!("/v1/sessions/{session}/suggestions");
    for key in ["a b", "k\tk", " ", &"k".repeat(256)] {
        let response = server
            .client
            .post(server.url(&path))
            .header("idempotency-key", key)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let (status, body, text) = problem(response).await;
        assert_eq!(status, 400, "{key:?}: {text}");
        names(&body, "Idempotency-Key", &text);
    }
    for key in ["!", "~", "a-b_c.d:e/f", &"k".repeat(255)] {
        let response = server
            .client
            .post(server.url(&path))
            .header("idempotency-key", key)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201, "{key:?}");
    }
    server.stop().await;
}

async fn oversized_request_heads_are_problems(server: TestServer) {
    use tvbo::api::transport::{MAX_HEADER_BYTES, MAX_URI_BYTES};
    let long = format!("/v1/sessions?cursor={}", "1".repeat(MAX_URI_BYTES));
    let response = server.client.get(server.url(&long)).send().await.unwrap();
    let (status, body, text) = problem(response).await;
    assert_eq!(status, 414, "{text}");
    names(&body, "URI", &text);
    let response = server
        .client
        .get(server.url("/v1/sessions"))
        .header("x-padding", "p".repeat(MAX_HEADER_BYTES))
        .send()
        .await
        .unwrap();
    let (status, body, text) = problem(response).await;
    assert_eq!(status, 431, "{text}");
    names(&body, "x-padding", &text);
    // Just inside the limits is fine.
    let response = server
        .client
        .get(server.url("/v1/sessions"))
        .header("x-padding", "p".repeat(MAX_HEADER_BYTES / 2))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    server.stop().await;
}

/// A request that takes longer than the time limit is a 503 problem, not an empty 503.
/// The body of the request never arrives, so the handler waits for it until the limit
/// (shortened to keep the test quick).
#[tokio::test]
async fn a_request_over_the_time_limit_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store = SqliteStore::connect(&url, &PoolSettings::default())
        .await
        .unwrap();
    let limit = Duration::from_millis(300);
    let settings = tvbo::api::RouterSettings {
        request_timeout: limit,
        access: tvbo::api::auth::AccessSettings::open(),
        ..Default::default()
    };
    let app = tvbo::api::router(Arc::new(store), settings);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = "POST /v1/sessions HTTP/1.1\r\nhost: tvbo\r\ncontent-type: application/json\r\n\
                content-length: 100\r\n\r\n{\"parameters\": ";
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let text = loop {
        let n = stream.read(&mut buffer).await.unwrap();
        answer.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&answer).to_string();
        if n == 0 || text.ends_with('}') {
            break text;
        }
    };
    assert!(
        started.elapsed() >= limit,
        "answered after {:?}: {text}",
        started.elapsed()
    );
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{text}"
    );
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    let problem: Value = serde_json::from_str(body).unwrap();
    assert_eq!(problem["status"], 503, "{text}");
    assert_eq!(
        problem["type"], "https://tvbo.dev/problems/timeout",
        "{text}"
    );
    server.abort();
}

/// A path whose id is not a UUID, or not UTF-8 once decoded, names no session: a 404
/// problem, never the framework's plain-text 400.
#[tokio::test]
async fn session_ids_that_are_not_uuids_are_404_problems() {
    let server = TestServer::start().await;
    for path in [
        "/v1/sessions/%FF",
        "/v1/sessions/%FF/best",
        "/v1/sessions/not-a-uuid/observations",
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        let (status, body, text) = problem(response).await;
        assert_eq!(status, 404, "{path}: {text}");
        assert_eq!(
            body["type"], "https://tvbo.dev/problems/not-found",
            "{text}"
        );
    }
    server.stop().await;
}
