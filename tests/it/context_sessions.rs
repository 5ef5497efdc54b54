//! What a new user met (issue "Client and API 3"), through the server with keys on and
//! the default limits, on both backends:
//!
//! - `GET …/best` of a context session maximised over the context too: it holds the
//!   context at the newest observation's values, or at those of `fixed`;
//! - no API listed a session's pending suggestions: `GET …/suggestions?status=pending`;
//! - resuming by name needed the whole configuration: the name alone resumes.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    best_holds_a_context_given_or_the_newest,
    pending_suggestions_are_listed,
    the_name_alone_resumes_a_session,
);

/// A client-time context session (x chosen, load held) with 12 observations whose best
/// x is the load itself; the newest at load 0.25.
async fn context_session(server: &TestServer) -> String {
    let id = server
        .create(json!({
            "name": "context",
            "parameters": [
                {"name": "x", "low": 0, "high": 1},
                {"name": "load", "low": 0, "high": 1, "context": true},
            ],
            "algorithm": {"name": "gp-ucb"},
            "time": {"source": "client"},
            "seed": 3,
        }))
        .await;
    let mut observations = Vec::new();
    for i in 0..12 {
        let load = if i % 2 == 0 { 0.75 } else { 0.25 };
        let x = (i as f64 * 0.37) % 1.0;
        let value = -(x - load) * (x - load);
        observations.push(json!({"params": {"x": x, "load": load}, "value": value, "t": i as f64}));
    }
    let (status, answer) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"observations": observations}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    id
}

async fn best_holds_a_context_given_or_the_newest(server: TestServer) {
    let server = server.with_key("newcomer").await;
    let id = context_session(&server).await;
    let best = |query: &'static str| {
        let path = format!("/v1/sessions/{id}/best{query}");
        let server = &server;
        async move { server.get(&path).await }
    };
    let (status, newest) = best("").await;
    assert_eq!(status, 200, "{newest}");
    assert_eq!(newest["params"]["load"], 0.25, "{newest}");
    // `fixed={"load":0.75}`, URL-encoded.
    let (status, given) = best("?fixed=%7B%22load%22%3A0.75%7D").await;
    assert_eq!(status, 200, "{given}");
    assert_eq!(given["params"]["load"], 0.75, "{given}");
    let x = |best: &Value| best["params"]["x"].as_f64().unwrap();
    assert!(x(&given) > x(&newest), "{given} {newest}");
    for (query, field) in [
        ("?fixed=load", "fixed"),
        ("?fixed=%7B%22speed%22%3A1%7D", "fixed.speed"),
        ("?fixed=%7B%22load%22%3A2%7D", "fixed.load"),
    ] {
        let (status, problem) = best(query).await;
        assert_eq!(status, 422, "{query}: {problem}");
        assert_eq!(problem["field"], field, "{query}: {problem}");
    }
}

async fn pending_suggestions_are_listed(server: TestServer) {
    let server = server.with_key("newcomer").await;
    let id = server.create(common::client_session("random", 5)).await;
    let path = format!("/v1/sessions/{id}/suggestions");
    let (status, answer) = server.post(&path, &json!({"count": 3, "t": 1.0})).await;
    assert_eq!(status, 201, "{answer}");
    let handed: Vec<Value> = answer["suggestions"].as_array().unwrap().clone();
    let listed = |query: &'static str| {
        let path = format!("{path}{query}");
        let server = &server;
        async move { server.get(&path).await }
    };
    let (status, pending) = listed("?status=pending").await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["suggestions"], json!(handed));
    // One observed, one abandoned: the third is left.
    let body = json!({"suggestion_id": handed[0]["id"], "value": 1.0, "t": 2.0});
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/observations"), &body)
        .await;
    assert_eq!(status, 201, "{answer}");
    let abandon =
        axum::http::Request::delete(format!("{path}/{}", handed[1]["id"].as_str().unwrap()))
            .body(axum::body::Body::empty())
            .unwrap();
    assert_eq!(server.send(abandon).await.status(), 204);
    let (status, pending) = listed("").await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["suggestions"], json!([handed[2]]));
    let (status, problem) = listed("?status=observed").await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(problem["field"], "status", "{problem}");
}

async fn the_name_alone_resumes_a_session(server: TestServer) {
    let server = server.with_key("newcomer").await;
    let mut body = common::client_session("bolt", 9);
    body["name"] = json!("nightly");
    let id = server.create(body).await;
    let (status, resumed) = server
        .post("/v1/sessions", &json!({"name": "nightly", "resume": true}))
        .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["id"], id.as_str());
    let before = server.dump().await;
    let (status, problem) = server
        .post("/v1/sessions", &json!({"name": "weekly", "resume": true}))
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "parameters", "{problem}");
    // Without `resume`, the parameters are required as before.
    let (status, problem) = server
        .post("/v1/sessions", &json!({"name": "weekly"}))
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "parameters", "{problem}");
    assert_eq!(
        server.dump().await,
        before,
        "a refused create stored something"
    );
}
