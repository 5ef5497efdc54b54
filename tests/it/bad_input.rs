//! Bad input over HTTP (docs/api.md): every bad request gets a 4xx
//! `application/problem+json` answer whose `field` names the offending field and whose
//! `detail` contains that name, no answer is a 5xx, and no bad request changes a single
//! stored row (the whole database is dumped before and after each one).
//!
//! The cases are tables of (description, method, path, headers, body, expected status,
//! accepted field names); every failing case is reported with its description, the
//! request and the actual answer, and all failures of a table are reported together.

use crate::common;

use common::TestServer;
use reqwest::Method;
use serde_json::{Value, json};

backend_tests!(
    #[tokio::test]
    session_create_rejects_bad_configurations,
    transport_errors_name_body_or_header,
    unknown_sessions_routes_and_methods,
    suggest_rejects_bad_requests,
    observe_rejects_bad_requests,
    predict_and_list_queries_reject_bad_requests,
    idempotent_observation_acts_once,
    idempotent_suggestion_acts_once,
    idempotent_session_create_acts_once,
    a_rejected_request_does_not_burn_its_idempotency_key,
    extreme_finite_numbers_never_answer_5xx,
);

/// One bad request and what the server must answer.
struct Case {
    what: String,
    method: Method,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    /// Accepted statuses (the first is the one a failure message names).
    statuses: Vec<u16>,
    /// Accepted values of the problem's `field` member; empty: no field is required
    /// (unknown routes and sessions, wrong methods).
    fields: &'static [&'static str],
}

/// parse_json appends the name of an unknown field to a path that already ends with it.
/// query_error picks the first known parameter name that occurs anywhere in the message.
/// observe decides "batch or single" by parsing into a Map, which fails on 1e999.
fn case(what: impl Into<String>, method: Method, path: impl Into<String>) -> Case {
    Case {
        what: what.into(),
        method,
        path: path.into(),
        headers: Vec::new(),
        body: None,
        statuses: Vec::new(),
        fields: &[],
    }
}

impl Case {
    /// A JSON body with `Content-Type: application/json`.
    fn json(self, body: Value) -> Case {
        self.raw(Some("application/json"), body.to_string())
    }

    /// A raw body with the given content type (none when `None`).
    fn raw(mut self, content_type: Option<&str>, body: impl Into<Vec<u8>>) -> Case {
        if let Some(ct) = content_type {
            self.headers.push(("content-type".into(), ct.into()));
        }
        self.body = Some(body.into());
        self
    }

    fn header(mut self, name: &str, value: &str) -> Case {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn expect(mut self, status: u16, fields: &'static [&'static str]) -> Case {
        self.statuses = vec![status];
        self.fields = fields;
        self
    }

    /// Also accepts `status`.
    fn or_status(mut self, status: u16) -> Case {
        self.statuses.push(status);
        self
    }

    /// 400 or 422: a query string that does not parse, or a value out of range.
    fn expect_4xx(self, fields: &'static [&'static str]) -> Case {
        self.expect(422, fields).or_status(400)
    }

    /// Sends the case to another path.
    fn at(mut self, path: impl Into<String>) -> Case {
        self.path = path.into();
        self
    }

    /// The request, for failure messages.
    fn request(&self) -> String {
        let body = self.body.as_ref().map_or(String::new(), |b| {
            let text = String::from_utf8_lossy(b);
            if text.chars().count() > 300 {
                format!(
                    " {}... ({} bytes)",
                    text.chars().take(300).collect::<String>(),
                    b.len()
                )
            } else {
                format!(" {text}")
            }
        });
        format!("{} {} {:?}{body}", self.method, self.path, self.headers)
    }
}

/// A response: status, content type and body text.
struct Answer {
    status: u16,
    content_type: String,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

async fn send(
    server: &TestServer,
    method: Method,
    path: &str,
    headers: &[(String, String)],
    body: Option<Vec<u8>>,
) -> Answer {
    let mut request = axum::http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request
        .body(body.map_or_else(axum::body::Body::empty, axum::body::Body::from))
        .unwrap_or_else(|e| panic!("{path}: not a request: {e}"));
    let response = server.send(request).await;
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (status, text) = TestServer::text(response).await;
    Answer {
        status,
        content_type,
        text,
    }
}

/// Sends a JSON POST with extra headers.
async fn post_with(server: &TestServer, path: &str, key: Option<&str>, body: &Value) -> Answer {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(key) = key {
        headers.push(("idempotency-key".into(), key.into()));
    }
    send(
        server,
        Method::POST,
        path,
        &headers,
        Some(body.to_string().into_bytes()),
    )
    .await
}

/// Rows in `after` and not in `before`, and the reverse, for failure messages.
fn diff(before: &[String], after: &[String]) -> String {
    let added: Vec<_> = after.iter().filter(|r| !before.contains(r)).collect();
    let removed: Vec<_> = before.iter().filter(|r| !after.contains(r)).collect();
    format!("rows added: {added:#?}\nrows removed or changed: {removed:#?}")
}

/// Checks one answer against the rules; `Err` describes what is wrong.
fn judge(
    what: &str,
    request: &str,
    statuses: &[u16],
    fields: &[&str],
    answer: &Answer,
    before: &[String],
    after: &[String],
) -> Result<(), String> {
    let mut wrong = Vec::new();
    if answer.status >= 500 {
        wrong.push(format!("answered {} (5xx)", answer.status));
    }
    if !statuses.contains(&answer.status) {
        wrong.push(format!("status {} instead of {statuses:?}", answer.status));
    }
    if !answer.content_type.starts_with("application/problem+json") {
        wrong.push(format!(
            "content type {:?} instead of application/problem+json",
            answer.content_type
        ));
    }
    let problem = answer.json();
    let detail = problem["detail"].as_str();
    if detail.is_none() {
        wrong.push("no `detail` string".into());
    }
    if problem["status"].as_u64() != Some(u64::from(answer.status)) {
        wrong.push("the problem's `status` is not the HTTP status".into());
    }
    if !fields.is_empty() {
        match problem["field"].as_str() {
            Some(field) if fields.contains(&field) => {
                if !detail.unwrap_or("").contains(field) {
                    wrong.push(format!("`detail` does not contain the field {field:?}"));
                }
            }
            Some(field) => wrong.push(format!("`field` is {field:?}, expected one of {fields:?}")),
            None => wrong.push(format!("no `field` member, expected one of {fields:?}")),
        }
    }
    if before != after {
        wrong.push(format!("stored rows changed:\n{}", diff(before, after)));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "CASE: {what}\n  request: {request}\n  answer: {} {} {}\n  wrong: {}",
            answer.status,
            answer.content_type,
            answer.text,
            wrong.join("; ")
        ))
    }
}

/// Runs every case (dumping the database before and after each) and fails with the
/// description of every case that broke a rule.
async fn run(server: &TestServer, cases: Vec<Case>) {
    let total = cases.len();
    let mut failures = Vec::new();
    for c in cases {
        let before = server.dump().await;
        let answer = send(
            server,
            c.method.clone(),
            &c.path,
            &c.headers,
            c.body.clone(),
        )
        .await;
        let after = server.dump().await;
        if let Err(e) = judge(
            &c.what,
            &c.request(),
            &c.statuses,
            c.fields,
            &answer,
            &before,
            &after,
        ) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A 2-D wall-clock session body.
fn wall_session() -> Value {
    json!({
        "name": "wall",
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": "gp-ucb"},
        "model": {"warmup": 5},
        "seed": 3
    })
}

/// `wall_session()` with `key` set to `value` at the top level.
fn with(mut body: Value, key: &str, value: Value) -> Value {
    body[key] = value;
    body
}

/// An arms session (three arms) with the given algorithm and a noise variance.
fn prior_session(algorithm: Value) -> Value {
    json!({
        "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
        "arms": [{"params": {"x": 0.0}}, {"params": {"x": 0.5}}, {"params": {"x": 1.0}}],
        "algorithm": algorithm,
        "model": {"noise": 0.01},
    })
}

fn rbf_prior() -> Value {
    rbf_prior_named("a")
}

fn rbf_prior_named(name: &str) -> Value {
    json!({"name": name, "kernel": "rbf", "lengthscale": 0.3})
}

/// `wall_session()` with its parameters replaced.
fn with_parameters(parameters: Value) -> Value {
    with(wall_session(), "parameters", parameters)
}

/// Rows of `table` in a dump.
fn count_rows(dump: &[String], table: &str) -> usize {
    let prefix = format!("{table}|");
    dump.iter().filter(|r| r.starts_with(&prefix)).count()
}

/// Hands out one suggestion of a wall-clock session and returns its id.
async fn suggestion_id(server: &TestServer, session: &str) -> String {
    let (status, body) = server
        .post(&format!("/v1/sessions/{session}/suggestions"), &json!({}))
        .await;
    assert_eq!(status, 201, "{body}");
    body["suggestions"][0]["id"].as_str().unwrap().to_string()
}

async fn session_create_rejects_bad_configurations(server: TestServer) {
    // Something stored already, so that "nothing changed" is a real check.
    server.create(wall_session()).await;
    let create = |what: &str, body: Value| case(what, Method::POST, "/v1/sessions").json(body);
    let cases = vec![
        create(
            "unknown top-level field",
            with(wall_session(), "bogus", json!(1)),
        )
        .expect(422, &["bogus"]),
        create(
            "unknown field in algorithm",
            with(
                wall_session(),
                "algorithm",
                json!({"name": "gp-ucb", "bogus": 1}),
            ),
        )
        .expect(422, &["algorithm.bogus"]),
        create(
            "unknown algorithm name",
            with(wall_session(), "algorithm", json!({"name": "gp-ucb-turbo"})),
        )
        .expect(422, &["algorithm.name", "algorithm"]),
        create(
            "algorithm without a name",
            with(wall_session(), "algorithm", json!({"epsilon": 0.1})),
        )
        .expect(422, &["algorithm.name", "algorithm"]),
        create(
            "unknown field in model",
            with(
                wall_session(),
                "model",
                json!({"warmup": 5, "kernel": "rbf"}),
            ),
        )
        .expect(422, &["model.kernel"]),
        create(
            "unknown field in time",
            with(
                wall_session(),
                "time",
                json!({"source": "wall", "zone": "UTC"}),
            ),
        )
        .expect(422, &["time.zone"]),
        create(
            "unknown time source",
            with(wall_session(), "time", json!({"source": "sundial"})),
        )
        .expect(422, &["time.source"]),
        create(
            "unknown goal",
            with(wall_session(), "goal", json!("maximise")),
        )
        .expect(422, &["goal"]),
        create("missing parameters", json!({"name": "p"})).expect(422, &["parameters"]),
        create("empty parameters", with_parameters(json!([]))).expect(422, &["parameters"]),
        create(
            "duplicate parameter name",
            with_parameters(json!([
                {"name": "x", "low": 0, "high": 1},
                {"name": "x", "low": 0, "high": 2}
            ])),
        )
        .expect(422, &["parameters[1].name"]),
        create(
            "empty parameter name",
            with_parameters(json!([{"name": "", "low": 0, "high": 1}])),
        )
        .expect(422, &["parameters[0].name"]),
        create(
            "low == high",
            with_parameters(json!([{"name": "x", "low": 1, "high": 1}])),
        )
        .expect(422, &["parameters[0].high", "parameters[0].low"]),
        create(
            "low > high",
            with_parameters(json!([{"name": "x", "low": 2, "high": 1}])),
        )
        .expect(422, &["parameters[0].high", "parameters[0].low"]),
        create(
            "log scale with low = 0",
            with_parameters(json!([{"name": "x", "low": 0, "high": 1, "scale": "log"}])),
        )
        .expect(422, &["parameters[0].low"]),
        create(
            "log scale with low < 0",
            with_parameters(json!([{"name": "x", "low": -1, "high": 1, "scale": "log"}])),
        )
        .expect(422, &["parameters[0].low"]),
        create(
            "unknown scale",
            with_parameters(json!([{"name": "x", "low": 1, "high": 2, "scale": "ln"}])),
        )
        .expect(422, &["parameters[0].scale"]),
        create(
            "int parameter with fractional bounds",
            with_parameters(json!([{"name": "n", "type": "int", "low": 0.5, "high": 4}])),
        )
        .expect(422, &["parameters[0].low"]),
        create(
            "string where a number goes",
            with_parameters(json!([{"name": "x", "low": "zero", "high": 1}])),
        )
        .expect(422, &["parameters[0].low"]),
        create(
            "unknown field in a parameter",
            with_parameters(json!([{"name": "x", "low": 0, "high": 1, "step": 0.1}])),
        )
        .expect(422, &["parameters[0].step"]),
        create(
            "tv-gp-ucb epsilon 1.5",
            with(
                wall_session(),
                "algorithm",
                json!({"name": "tv-gp-ucb", "epsilon": 1.5}),
            ),
        )
        .expect(422, &["algorithm.epsilon"]),
        create(
            "tv-gp-ucb epsilon so small that 1 - epsilon rounds to 1",
            with(
                wall_session(),
                "algorithm",
                json!({"name": "tv-gp-ucb", "epsilon": 1e-17}),
            ),
        )
        .expect(422, &["algorithm.epsilon"]),
        create(
            "noise beyond 1e100",
            with(wall_session(), "model", json!({"noise": 1e300})),
        )
        .expect(422, &["model.noise"]),
        create(
            "tv-gp-ucb epsilon 0",
            with(
                wall_session(),
                "algorithm",
                json!({"name": "tv-gp-ucb", "epsilon": 0}),
            ),
        )
        .expect(422, &["algorithm.epsilon"]),
        create(
            "negative beta",
            with(
                wall_session(),
                "algorithm",
                json!({"name": "gp-ucb", "beta": -1}),
            ),
        )
        .expect(422, &["algorithm.beta"]),
        create(
            "r-gp-ucb reset_every 0",
            with(
                wall_session(),
                "algorithm",
                json!({"name": "r-gp-ucb", "reset_every": 0}),
            ),
        )
        .expect(422, &["algorithm.reset_every"]),
        create(
            "temporal_kernel given for gp-ucb",
            with(
                wall_session(),
                "model",
                json!({"temporal_kernel": "matern32"}),
            ),
        )
        .expect(422, &["model.temporal_kernel"]),
        create(
            "unknown fit start",
            with(wall_session(), "model", json!({"fit_start": "warm"})),
        )
        .expect(422, &["model.fit_start"]),
        create(
            "unknown hyperpriors",
            with(wall_session(), "model", json!({"hyperpriors": "botorch"})),
        )
        .expect(422, &["model.hyperpriors"]),
        create(
            "negative noise",
            with(wall_session(), "model", json!({"noise": -0.1})),
        )
        .expect(422, &["model.noise"]),
        create(
            "negative lead",
            with(wall_session(), "time", json!({"lead": -1})),
        )
        .expect(422, &["time.lead"]),
        create(
            "arm outside the bounds",
            with(
                wall_session(),
                "arms",
                json!([{"name": "a", "params": {"x": 0.5, "y": 1.5}}]),
            ),
        )
        .expect(422, &["arms[0].params.y"]),
        create(
            "arm with an unknown parameter",
            with(
                wall_session(),
                "arms",
                json!([{"params": {"x": 0.5, "y": 0.5, "z": 0.5}}]),
            ),
        )
        .expect(422, &["arms[0].params.z"]),
        create(
            "arm missing a parameter",
            with(wall_session(), "arms", json!([{"params": {"x": 0.5}}])),
        )
        .expect(422, &["arms[0].params.y"]),
        create(
            "duplicate arm names",
            with(
                wall_session(),
                "arms",
                json!([
                    {"name": "a", "params": {"x": 0.1, "y": 0.1}},
                    {"name": "a", "params": {"x": 0.2, "y": 0.2}}
                ]),
            ),
        )
        .expect(422, &["arms[1].name"]),
        create("empty arms", with(wall_session(), "arms", json!([]))).expect(422, &["arms"]),
        create(
            "prior selection without arms",
            with(prior_session(json!({"name": "pe-gp-ts", "priors": [rbf_prior()]})), "arms", Value::Null),
        )
        .expect(422, &["arms"]),
        create(
            "prior selection without priors",
            prior_session(json!({"name": "hp-gp-ts", "priors": []})),
        )
        .expect(422, &["algorithm.priors"]),
        create(
            "prior selection with the priors missing",
            prior_session(json!({"name": "hp-gp-ts"})),
        )
        .expect(422, &["algorithm", "algorithm.priors"]),
        create(
            "kernel prior without a lengthscale",
            prior_session(json!({"name": "pe-gp-ts", "priors": [{"kernel": "rbf"}]})),
        )
        .expect(422, &["algorithm.priors[0].lengthscale"]),
        create(
            "kernel prior with an unknown field",
            prior_session(json!({"name": "pe-gp-ts", "priors": [{"kernel": "rbf", "lengthscale": 1, "nu": 2}]})),
        )
        .expect(422, &["algorithm.nu", "algorithm.priors[0].nu"]),
        create(
            "empirical prior with a covariance of the wrong size",
            prior_session(json!({"name": "hp-gp-ts", "priors": [
                {"mean": [0, 0, 0], "covariance": [[1, 0], [0, 1]]}
            ]})),
        )
        .expect(422, &["algorithm.priors[0].covariance"]),
        create(
            "empirical prior with a ragged covariance row",
            prior_session(json!({"name": "hp-gp-ts", "priors": [
                {"mean": [0, 0, 0], "covariance": [[1, 0, 0], [0, 1], [0, 0, 1]]}
            ]})),
        )
        .expect(422, &["algorithm.priors[0].covariance[1]"]),
        create(
            "empirical prior with an asymmetric covariance",
            prior_session(json!({"name": "hp-gp-ts", "priors": [
                {"mean": [0, 0, 0], "covariance": [[1, 0.5, 0], [0.2, 1, 0], [0, 0, 1]]}
            ]})),
        )
        .expect(422, &["algorithm.priors[0].covariance"]),
        create(
            "empirical prior whose covariance is not positive semi-definite",
            prior_session(json!({"name": "hp-gp-ts", "priors": [
                {"mean": [0, 0, 0], "covariance": [[1, 2, 0], [2, 1, 0], [0, 0, 1]]}
            ]})),
        )
        .expect(422, &["algorithm.priors[0].covariance"]),
        create(
            "empirical prior with a huge covariance entry",
            prior_session(json!({"name": "hp-gp-ts", "priors": [
                {"mean": [0, 0, 0], "covariance": [[1, 1e300, 0], [1e300, 1, 0], [0, 0, 1]]}
            ]})),
        )
        .expect(422, &["algorithm.priors[0].covariance[0][1]"]),
        create(
            "empirical prior with one mean too few",
            prior_session(json!({"name": "hp-gp-ts", "priors": [
                {"mean": [0, 0], "covariance": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}
            ]})),
        )
        .expect(422, &["algorithm.priors[0].mean"]),
        create(
            "hyperprior with the wrong length",
            prior_session(json!({"name": "hp-gp-ts", "priors": [rbf_prior()], "hyperprior": [0.5, 0.5]})),
        )
        .expect(422, &["algorithm.hyperprior"]),
        create(
            "negative hyperprior weight",
            prior_session(json!({"name": "map-gp-ts", "priors": [rbf_prior(), rbf_prior_named("b")], "hyperprior": [1, -1]})),
        )
        .expect(422, &["algorithm.hyperprior[1]"]),
        create(
            "prior selection without a noise variance",
            with(prior_session(json!({"name": "pe-gp-ts", "priors": [rbf_prior()]})), "model", json!({})),
        )
        .expect(422, &["model.noise"]),
        create(
            "gp-ucb with two priors",
            prior_session(json!({"name": "gp-ucb", "priors": [rbf_prior(), rbf_prior_named("b")]})),
        )
        .expect(422, &["algorithm.priors"]),
        create(
            "tv-gp-ucb with two priors",
            prior_session(json!({"name": "tv-gp-ucb", "priors": [rbf_prior(), rbf_prior_named("b")]})),
        )
        .expect(422, &["algorithm.priors"]),
        create(
            "elimination delta of 1",
            prior_session(json!({"name": "pe-gp-ucb", "priors": [rbf_prior()], "delta": 1})),
        )
        .expect(422, &["algorithm.delta"]),
        create("negative seed", with(wall_session(), "seed", json!(-1))).expect(422, &["seed"]),
        create("body is an array", json!([])).expect(422, &["body"]),
        create("body is null", Value::Null).expect(422, &["body"]),
        create(
            "name too long",
            with(wall_session(), "name", json!("n".repeat(201))),
        )
        .expect(422, &["name"]),
    ];
    run(&server, cases).await;
    server.stop().await;
}

async fn transport_errors_name_body_or_header(server: TestServer) {
    let session = server.create(wall_session()).await;
    let suggestions = format!("/v1/sessions/{session}/suggestions");
    let observations = format!("/v1/sessions/{session}/observations");
    let good = wall_session().to_string();
    // Valid JSON, just over 1 MiB.
    let oversize = json!({"name": "x".repeat((1 << 20) + 16), "parameters": []}).to_string();
    let cases = vec![
        case("malformed JSON", Method::POST, "/v1/sessions")
            .raw(Some("application/json"), "{\"name\": ")
            .expect(400, &["body"]),
        case("trailing garbage", Method::POST, "/v1/sessions")
            .raw(Some("application/json"), format!("{good} x"))
            .expect(400, &["body"]),
        case("empty body", Method::POST, "/v1/sessions")
            .raw(Some("application/json"), "")
            .expect(400, &["body"]),
        case(
            "malformed JSON to suggest",
            Method::POST,
            suggestions.clone(),
        )
        .raw(Some("application/json"), "{count: 1}")
        .expect(400, &["body"]),
        case(
            "malformed JSON to observe",
            Method::POST,
            observations.clone(),
        )
        .raw(Some("application/json"), "{\"value\": 1,}")
        .expect(400, &["body"]),
        case("text/plain content type", Method::POST, "/v1/sessions")
            .raw(Some("text/plain"), good.clone())
            .expect(415, &["Content-Type"]),
        case("missing content type", Method::POST, "/v1/sessions")
            .raw(None, good.clone())
            .expect(415, &["Content-Type"]),
        case(
            "application/jsonx content type",
            Method::POST,
            "/v1/sessions",
        )
        .raw(Some("application/jsonx"), good.clone())
        .expect(415, &["Content-Type"]),
        case("text/plain to suggest", Method::POST, suggestions.clone())
            .raw(Some("text/plain"), "{}")
            .expect(415, &["Content-Type"]),
        case(
            "missing content type to observe",
            Method::POST,
            observations.clone(),
        )
        .raw(None, "{\"params\": {\"x\": 0.5, \"y\": 0.5}, \"value\": 1}")
        .expect(415, &["Content-Type"]),
        case("body over 1 MiB", Method::POST, "/v1/sessions")
            .raw(Some("application/json"), oversize.clone())
            .expect(413, &["body"]),
        case(
            "body over 1 MiB to observe",
            Method::POST,
            observations.clone(),
        )
        .raw(Some("application/json"), oversize)
        .expect(413, &["body"]),
        case("empty Idempotency-Key", Method::POST, suggestions.clone())
            .json(json!({}))
            .header("idempotency-key", "")
            .expect(400, &["Idempotency-Key"]),
        case(
            "Idempotency-Key of 256 characters",
            Method::POST,
            suggestions,
        )
        .json(json!({}))
        .header("idempotency-key", &"k".repeat(256))
        .expect(400, &["Idempotency-Key"]),
    ];
    run(&server, cases).await;
    server.stop().await;
}

async fn unknown_sessions_routes_and_methods(server: TestServer) {
    let session = server.create(wall_session()).await;
    let observed = suggestion_id(&server, &session).await;
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{session}/observations"),
            &json!({"suggestion_id": observed, "value": 1.0}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let mut cases = Vec::new();
    for id in ["0b6f4d2e-0000-4000-8000-000000000000", "not-a-uuid"] {
        let s = format!("/v1/sessions/{id}");
        let routes: Vec<(Method, String, Option<Value>)> = vec![
            (Method::GET, s.clone(), None),
            (Method::DELETE, s.clone(), None),
            (Method::POST, format!("{s}/suggestions"), Some(json!({}))),
            (
                Method::POST,
                format!("{s}/observations"),
                Some(json!({"params": {"x": 0.5, "y": 0.5}, "value": 1.0})),
            ),
            (Method::GET, format!("{s}/observations"), None),
            (Method::GET, format!("{s}/regret"), None),
            (Method::GET, format!("{s}/model"), None),
            (
                Method::POST,
                format!("{s}/predict"),
                Some(json!({"points": [{"x": 0.5, "y": 0.5}]})),
            ),
            (Method::GET, format!("{s}/best"), None),
        ];
        for (method, path, body) in routes {
            let c = case(
                format!("unknown session {id}: {method} {path}"),
                method,
                path,
            );
            cases.push(
                match body {
                    Some(body) => c.json(body),
                    None => c,
                }
                .expect(404, &[]),
            );
        }
    }
    cases.extend([
        case("unknown route", Method::GET, "/v1/nope").expect(404, &[]),
        case(
            "unknown route under /v1/sessions",
            Method::GET,
            "/v1/sessions/x/y/z",
        )
        .expect(404, &[]),
        case(
            "unknown sub-resource of a session",
            Method::GET,
            format!("/v1/sessions/{session}/nope"),
        )
        .expect(404, &[]),
        case("PUT /v1/sessions", Method::PUT, "/v1/sessions")
            .json(wall_session())
            .expect(405, &[]),
        case("DELETE /v1/sessions", Method::DELETE, "/v1/sessions").expect(405, &[]),
        case(
            "GET suggestions",
            Method::GET,
            format!("/v1/sessions/{session}/suggestions"),
        )
        .expect(405, &[]),
        case(
            "PATCH a session",
            Method::PATCH,
            format!("/v1/sessions/{session}"),
        )
        .json(json!({"name": "renamed"}))
        .expect(405, &[]),
        case(
            "GET predict",
            Method::GET,
            format!("/v1/sessions/{session}/predict"),
        )
        .expect(405, &[]),
        case(
            "DELETE observations",
            Method::DELETE,
            format!("/v1/sessions/{session}/observations"),
        )
        .expect(405, &[]),
    ]);
    run(&server, cases).await;
    server.stop().await;
}

async fn suggest_rejects_bad_requests(server: TestServer) {
    let wall = server.create(wall_session()).await;
    let client = server.create(common::client_session("gp-ucb", 1)).await;
    let wall_path = format!("/v1/sessions/{wall}/suggestions");
    let client_path = format!("/v1/sessions/{client}/suggestions");
    // A suggestion stored already.
    let (status, body) = server.post(&client_path, &json!({"t": 1.0})).await;
    assert_eq!(status, 201, "{body}");
    let suggest =
        |what: &str, path: &str, body: Value| case(what, Method::POST, path.to_string()).json(body);
    let cases = vec![
        suggest("count 0", &wall_path, json!({"count": 0})).expect(422, &["count"]),
        suggest("count 65", &wall_path, json!({"count": 65})).expect(422, &["count"]),
        suggest("count -1", &wall_path, json!({"count": -1})).expect(422, &["count"]),
        suggest("count \"two\"", &wall_path, json!({"count": "two"})).expect(422, &["count"]),
        suggest("count 1.5", &wall_path, json!({"count": 1.5})).expect(422, &["count"]),
        suggest(
            "count 2^70",
            &wall_path,
            json!({"count": 1_180_591_620_717_411_303_424.0_f64}),
        )
        .expect(422, &["count"]),
        suggest("client t in a wall session", &wall_path, json!({"t": 5.0})).expect(422, &["t"]),
        suggest("missing t in a client session", &client_path, json!({})).expect(422, &["t"]),
        suggest("missing t with count", &client_path, json!({"count": 2})).expect(422, &["t"]),
        suggest("t as a string", &client_path, json!({"t": "soon"})).expect(422, &["t"]),
        suggest("t beyond 1e10", &client_path, json!({"t": 1e11})).expect(422, &["t"]),
        suggest("unknown field", &wall_path, json!({"cuont": 2})).expect(422, &["cuont"]),
        suggest("body is an array", &wall_path, json!([1])).expect(422, &["body"]),
        case("NaN t", Method::POST, client_path.clone())
            .raw(Some("application/json"), "{\"t\": NaN}")
            .expect(400, &["body"]),
    ];
    run(&server, cases).await;
    server.stop().await;
}

async fn observe_rejects_bad_requests(server: TestServer) {
    let wall = server.create(wall_session()).await;
    let client = server.create(common::client_session("gp-ucb", 1)).await;
    let wall_path = format!("/v1/sessions/{wall}/observations");
    let client_path = format!("/v1/sessions/{client}/observations");
    // One suggestion observed already, one pending.
    let observed = suggestion_id(&server, &wall).await;
    let (status, body) = server
        .post(
            &wall_path,
            &json!({"suggestion_id": observed, "value": 1.0}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let pending = suggestion_id(&server, &wall).await;
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let before_creation = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    let p = |x: f64, y: f64| json!({"x": x, "y": y});
    let observe = |what: &str, body: Value| case(what, Method::POST, wall_path.clone()).json(body);
    let raw = |what: &str, body: &str| {
        case(what, Method::POST, wall_path.clone()).raw(Some("application/json"), body.to_string())
    };
    let cases = vec![
        observe("param missing", json!({"params": {"x": 0.5}, "value": 1.0}))
            .expect(422, &["params.y"]),
        observe(
            "extra param",
            json!({"params": {"x": 0.5, "y": 0.5, "z": 0.5}, "value": 1.0}),
        )
        .expect(422, &["params.z"]),
        observe(
            "param out of bounds",
            json!({"params": p(1.5, 0.5), "value": 1.0}),
        )
        .expect(422, &["params.x"]),
        observe(
            "param as a string",
            json!({"params": {"x": "a", "y": 0.5}, "value": 1.0}),
        )
        .expect(422, &["params.x"]),
        observe("value missing", json!({"params": p(0.5, 0.5)})).expect(422, &["value"]),
        raw(
            "value NaN",
            "{\"params\": {\"x\": 0.5, \"y\": 0.5}, \"value\": NaN}",
        )
        .expect(400, &["body"]),
        raw(
            "value 1e999",
            "{\"params\": {\"x\": 0.5, \"y\": 0.5}, \"value\": 1e999}",
        )
        .expect(400, &["body", "value"])
        .or_status(422),
        raw(
            "value Infinity",
            "{\"params\": {\"x\": 0.5, \"y\": 0.5}, \"value\": Infinity}",
        )
        .expect(400, &["body"]),
        observe(
            "value as a string",
            json!({"params": p(0.5, 0.5), "value": "1.0"}),
        )
        .expect(422, &["value"]),
        observe("value null", json!({"params": p(0.5, 0.5), "value": null}))
            .expect(422, &["value"]),
        observe(
            "both suggestion_id and params",
            json!({"suggestion_id": pending, "params": p(0.5, 0.5), "value": 1.0}),
        )
        .expect(422, &["params", "suggestion_id"]),
        observe("neither suggestion_id nor params", json!({"value": 1.0}))
            .expect(422, &["suggestion_id", "params"]),
        observe(
            "unknown suggestion_id",
            json!({"suggestion_id": "0b6f4d2e-0000-4000-8000-000000000000", "value": 1.0}),
        )
        .expect(422, &["suggestion_id"]),
        observe(
            "suggestion_id not a UUID",
            json!({"suggestion_id": "s-1", "value": 1.0}),
        )
        .expect(422, &["suggestion_id"]),
        observe(
            "suggestion of another session",
            json!({"suggestion_id": pending, "value": 1.0, "t": 1.0}),
        )
        .at(client_path.clone())
        .expect(422, &["suggestion_id"]),
        observe(
            "second observation of a suggestion",
            json!({"suggestion_id": observed, "value": 2.0}),
        )
        .expect(409, &["suggestion_id"]),
        observe(
            "same suggestion twice in one batch",
            json!({"observations": [
                {"suggestion_id": pending, "value": 1.0},
                {"suggestion_id": pending, "value": 2.0}
            ]}),
        )
        .expect(409, &["observations[1].suggestion_id"]),
        observe(
            "batch: item 2 of 3 has a string value",
            json!({"observations": [
                {"params": p(0.1, 0.1), "value": 1.0},
                {"params": p(0.2, 0.2), "value": "high"},
                {"params": p(0.3, 0.3), "value": 3.0}
            ]}),
        )
        .expect(422, &["observations[1].value"]),
        observe(
            "batch: item 2 of 3 out of bounds",
            json!({"observations": [
                {"params": p(0.1, 0.1), "value": 1.0},
                {"params": p(0.2, 2.0), "value": 2.0},
                {"params": p(0.3, 0.3), "value": 3.0}
            ]}),
        )
        .expect(422, &["observations[1].params.y"]),
        observe(
            "batch: item 2 of 3 already observed",
            json!({"observations": [
                {"suggestion_id": pending, "value": 1.0},
                {"suggestion_id": observed, "value": 2.0},
                {"params": p(0.3, 0.3), "value": 3.0}
            ]}),
        )
        .expect(409, &["observations[1].suggestion_id"]),
        observe(
            "batch: item 3 of 3 has negative regret",
            json!({"observations": [
                {"params": p(0.1, 0.1), "value": 1.0},
                {"params": p(0.2, 0.2), "value": 2.0},
                {"params": p(0.3, 0.3), "value": 3.0, "regret": -1.0}
            ]}),
        )
        .expect(422, &["observations[2].regret"]),
        raw(
            "batch: item 2 of 3 has value 1e999",
            "{\"observations\": [{\"params\": {\"x\": 0.1, \"y\": 0.1}, \"value\": 1}, \
             {\"params\": {\"x\": 0.2, \"y\": 0.2}, \"value\": 1e999}, \
             {\"params\": {\"x\": 0.3, \"y\": 0.3}, \"value\": 3}]}",
        )
        .expect(400, &["body", "observations[1].value"])
        .or_status(422),
        observe(
            "batch: unknown field in item 1",
            json!({"observations": [{"params": p(0.1, 0.1), "value": 1.0, "vaule": 2}]}),
        )
        .expect(422, &["observations[0].vaule"]),
        observe("batch: empty", json!({"observations": []})).expect(422, &["observations"]),
        observe(
            "batch and single fields mixed",
            json!({"observations": [{"params": p(0.1, 0.1), "value": 1.0}], "value": 1.0}),
        )
        .expect(422, &["value"]),
        observe(
            "batch is not an array",
            json!({"observations": {"value": 1.0}}),
        )
        .expect(422, &["observations"]),
        observe(
            "client t in a wall session",
            json!({"params": p(0.5, 0.5), "value": 1.0, "t": 3.0}),
        )
        .expect(422, &["t"]),
        observe(
            "client t and measured_at in a wall session",
            json!({"params": p(0.5, 0.5), "value": 1.0, "t": 3.0,
                   "measured_at": chrono::Utc::now().to_rfc3339()}),
        )
        .expect(422, &["t"]),
        observe(
            "measured_at in a client session",
            json!({"params": p(0.5, 0.5), "value": 1.0, "t": 3.0,
                   "measured_at": chrono::Utc::now().to_rfc3339()}),
        )
        .at(client_path.clone())
        .expect(422, &["measured_at"]),
        observe(
            "missing t in a client session",
            json!({"params": p(0.5, 0.5), "value": 1.0}),
        )
        .at(client_path.clone())
        .expect(422, &["t"]),
        observe(
            "t beyond 1e10 in a client session",
            json!({"params": p(0.5, 0.5), "value": 1.0, "t": -1e12}),
        )
        .at(client_path.clone())
        .expect(422, &["t"]),
        observe(
            "measured_at an hour in the future",
            json!({"params": p(0.5, 0.5), "value": 1.0, "measured_at": future}),
        )
        .expect(422, &["measured_at"]),
        observe(
            "measured_at before the session was created",
            json!({"params": p(0.5, 0.5), "value": 1.0, "measured_at": before_creation}),
        )
        .expect(422, &["measured_at"]),
        observe(
            "measured_at not RFC 3339",
            json!({"params": p(0.5, 0.5), "value": 1.0, "measured_at": "yesterday at noon"}),
        )
        .expect(422, &["measured_at"]),
        observe(
            "measured_at without a zone",
            json!({"params": p(0.5, 0.5), "value": 1.0, "measured_at": "2030-01-01T00:00:00"}),
        )
        .expect(422, &["measured_at"]),
        observe(
            "measured_at as a number",
            json!({"params": p(0.5, 0.5), "value": 1.0, "measured_at": 1_700_000_000}),
        )
        .expect(422, &["measured_at"]),
        observe(
            "regret negative",
            json!({"params": p(0.5, 0.5), "value": 1.0, "regret": -0.5}),
        )
        .expect(422, &["regret"]),
        observe(
            "unknown field",
            json!({"params": p(0.5, 0.5), "value": 1.0, "weight": 2}),
        )
        .expect(422, &["weight"]),
    ];
    run(&server, cases).await;
    // The first observation of `observed` is the only one stored, and `pending` is
    // still unobserved.
    let (status, list) = server.get(&wall_path).await;
    assert_eq!(status, 200, "{list}");
    let stored = list["observations"].as_array().unwrap();
    assert_eq!(stored.len(), 1, "{list}");
    assert_eq!(stored[0]["suggestion_id"], json!(observed));
    assert_eq!(stored[0]["value"], json!(1.0));
    assert_eq!(count_rows(&server.dump().await, "observations"), 1);
    server.stop().await;
}

async fn predict_and_list_queries_reject_bad_requests(server: TestServer) {
    let wall = server.create(wall_session()).await;
    server.create(wall_session()).await;
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{wall}/observations"),
            &json!({"params": {"x": 0.5, "y": 0.5}, "value": 1.0}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let predict = format!("/v1/sessions/{wall}/predict");
    let observations = format!("/v1/sessions/{wall}/observations");
    let best = format!("/v1/sessions/{wall}/best");
    let post = |what: &str, body: Value| case(what, Method::POST, predict.clone()).json(body);
    let get = |what: &str, path: String| case(what, Method::GET, path);
    let cases = vec![
        post("predict: empty points", json!({"points": []})).expect(422, &["points"]),
        post("predict: points missing", json!({})).expect(422, &["points"]),
        post(
            "predict: a point with a missing param",
            json!({"points": [{"x": 0.5}]}),
        )
        .expect(422, &["points[0].y"]),
        post(
            "predict: second point with an unknown param",
            json!({"points": [{"x": 0.5, "y": 0.5}, {"x": 0.5, "y": 0.5, "w": 1}]}),
        )
        .expect(422, &["points[1].w"]),
        post(
            "predict: point out of bounds",
            json!({"points": [{"x": -0.5, "y": 0.5}]}),
        )
        .expect(422, &["points[0].x"]),
        post(
            "predict: unknown field",
            json!({"points": [{"x": 0.5, "y": 0.5}], "at": 3}),
        )
        .expect(422, &["at"]),
        post(
            "predict: t as a string",
            json!({"points": [{"x": 0.5, "y": 0.5}], "t": "now"}),
        )
        .expect(422, &["t"]),
        get("sessions: limit=0", "/v1/sessions?limit=0".into()).expect_4xx(&["limit"]),
        get("sessions: limit=1001", "/v1/sessions?limit=1001".into()).expect_4xx(&["limit"]),
        get("sessions: limit=abc", "/v1/sessions?limit=abc".into()).expect_4xx(&["limit"]),
        get("sessions: limit=-5", "/v1/sessions?limit=-5".into()).expect_4xx(&["limit"]),
        get("sessions: bad cursor", "/v1/sessions?cursor=garbage".into()).expect_4xx(&["cursor"]),
        get(
            "sessions: cursor with a bad id",
            "/v1/sessions?cursor=1700000000000000_nope".into(),
        )
        .expect_4xx(&["cursor"]),
        get(
            "sessions: unknown query parameter",
            "/v1/sessions?page=2".into(),
        )
        .expect_4xx(&["page"]),
        get("observations: limit=0", format!("{observations}?limit=0")).expect_4xx(&["limit"]),
        get(
            "observations: limit=abc",
            format!("{observations}?limit=abc"),
        )
        .expect_4xx(&["limit"]),
        get(
            "observations: after=abc",
            format!("{observations}?after=abc"),
        )
        .expect_4xx(&["after"]),
        get(
            "observations: include_pruned=maybe",
            format!("{observations}?include_pruned=maybe"),
        )
        .expect_4xx(&["include_pruned"]),
        get(
            "observations: unknown query parameter",
            format!("{observations}?cursor=1"),
        )
        .expect_4xx(&["cursor"]),
        get("best: t=abc", format!("{best}?t=abc")).expect_4xx(&["t"]),
        get("best: t=NaN", format!("{best}?t=NaN")).expect_4xx(&["t"]),
        get("best: t=inf", format!("{best}?t=inf")).expect_4xx(&["t"]),
        get("best: unknown query parameter", format!("{best}?at=3")).expect_4xx(&["at"]),
    ];
    run(&server, cases).await;
    server.stop().await;
}

async fn idempotent_observation_acts_once(server: TestServer) {
    let wall = server.create(wall_session()).await;
    let path = format!("/v1/sessions/{wall}/observations");
    let sid = suggestion_id(&server, &wall).await;
    let body = json!({"suggestion_id": sid, "value": 0.25});
    let first = post_with(&server, &path, Some("k1"), &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let stored = server.dump().await;
    assert_eq!(count_rows(&stored, "observations"), 1);

    let retry = post_with(&server, &path, Some("k1"), &body).await;
    assert_eq!(retry.status, first.status, "{}", retry.text);
    assert_eq!(retry.text, first.text, "a retry returns the first answer");
    let after = server.dump().await;
    assert_eq!(
        stored,
        after,
        "a retry changes nothing\n{}",
        diff(&stored, &after)
    );

    let (status, list) = server.get(&path).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["observations"].as_array().unwrap().len(), 1, "{list}");

    // The same key with a different body: refused, nothing changes.
    let before = server.dump().await;
    let other = post_with(
        &server,
        &path,
        Some("k1"),
        &json!({"params": {"x": 0.5, "y": 0.5}, "value": 9.0}),
    )
    .await;
    let after = server.dump().await;
    judge(
        "observation: Idempotency-Key reused with another body",
        "POST observations, Idempotency-Key: k1",
        &[422],
        &["Idempotency-Key"],
        &other,
        &before,
        &after,
    )
    .unwrap_or_else(|e| panic!("{e}"));

    // A different key is a different request: it may act (and is then stored once).
    let fresh = post_with(
        &server,
        &path,
        Some("k2"),
        &json!({"params": {"x": 0.5, "y": 0.5}, "value": 9.0}),
    )
    .await;
    assert_eq!(fresh.status, 201, "{}", fresh.text);
    assert_eq!(count_rows(&server.dump().await, "observations"), 2);
    server.stop().await;
}

async fn idempotent_suggestion_acts_once(server: TestServer) {
    let wall = server.create(wall_session()).await;
    let path = format!("/v1/sessions/{wall}/suggestions");
    let body = json!({"count": 2});
    let first = post_with(&server, &path, Some("s1"), &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let stored = server.dump().await;
    assert_eq!(count_rows(&stored, "suggestions"), 2);

    let retry = post_with(&server, &path, Some("s1"), &body).await;
    assert_eq!(retry.status, first.status, "{}", retry.text);
    assert_eq!(retry.text, first.text, "a retry returns the first answer");
    let ids = |a: &Answer| -> Vec<String> {
        a.json()["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&retry), ids(&first));
    let after = server.dump().await;
    assert_eq!(
        stored,
        after,
        "a retry changes nothing\n{}",
        diff(&stored, &after)
    );

    let before = server.dump().await;
    let other = post_with(&server, &path, Some("s1"), &json!({"count": 3})).await;
    let after = server.dump().await;
    judge(
        "suggestion: Idempotency-Key reused with another body",
        "POST suggestions {\"count\": 3}, Idempotency-Key: s1",
        &[422],
        &["Idempotency-Key"],
        &other,
        &before,
        &after,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(count_rows(&server.dump().await, "suggestions"), 2);
    server.stop().await;
}

async fn idempotent_session_create_acts_once(server: TestServer) {
    let first = post_with(&server, "/v1/sessions", Some("c1"), &wall_session()).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let stored = server.dump().await;
    let retry = post_with(&server, "/v1/sessions", Some("c1"), &wall_session()).await;
    assert_eq!(retry.status, 201, "{}", retry.text);
    assert_eq!(retry.text, first.text);
    assert_eq!(stored, server.dump().await);
    assert_eq!(count_rows(&stored, "sessions"), 1);

    let before = server.dump().await;
    let other = post_with(
        &server,
        "/v1/sessions",
        Some("c1"),
        &with(wall_session(), "name", json!("other")),
    )
    .await;
    let after = server.dump().await;
    judge(
        "create: Idempotency-Key reused with another body",
        "POST /v1/sessions, Idempotency-Key: c1",
        &[422],
        &["Idempotency-Key"],
        &other,
        &before,
        &after,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    server.stop().await;
}

async fn a_rejected_request_does_not_burn_its_idempotency_key(server: TestServer) {
    let wall = server.create(wall_session()).await;
    let path = format!("/v1/sessions/{wall}/observations");
    let bad = json!({"params": {"x": 5.0, "y": 0.5}, "value": 1.0});
    let before = server.dump().await;
    let rejected = post_with(&server, &path, Some("k9"), &bad).await;
    let after = server.dump().await;
    judge(
        "observation with a key, out of bounds",
        "POST observations, Idempotency-Key: k9",
        &[422],
        &["params.x"],
        &rejected,
        &before,
        &after,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // The same bad request again gets the same refusal (nothing was cached as a success).
    let again = post_with(&server, &path, Some("k9"), &bad).await;
    assert_eq!(again.status, 422, "{}", again.text);
    assert_eq!(count_rows(&server.dump().await, "observations"), 0);
    server.stop().await;
}

/// Finite but extreme numbers are valid JSON and pass the field checks; whatever the
/// server makes of them, it must not answer 5xx, on the request or on later ones.
async fn extreme_finite_numbers_never_answer_5xx(server: TestServer) {
    let mut answers = Vec::new();
    let session = server
        .create(with(wall_session(), "model", json!({"warmup": 0})))
        .await;
    let s = format!("/v1/sessions/{session}");
    let observations = json!({"observations": [
        {"params": {"x": 0.1, "y": 0.1}, "value": 1e308},
        {"params": {"x": 0.5, "y": 0.5}, "value": -1e308},
        {"params": {"x": 0.9, "y": 0.9}, "value": 0.0, "regret": 1e308}
    ]});
    let o = post_with(&server, &format!("{s}/observations"), None, &observations).await;
    answers.push(("observe values ±1e308".to_string(), o));
    let g = post_with(&server, &format!("{s}/suggestions"), None, &json!({})).await;
    answers.push(("suggest after values ±1e308".to_string(), g));
    let p = post_with(
        &server,
        &format!("{s}/predict"),
        None,
        &json!({"points": [{"x": 0.5, "y": 0.5}], "t": 1e308}),
    )
    .await;
    answers.push(("predict at t = 1e308".to_string(), p));
    for path in ["regret", "model", "best", "best?t=-1e308"] {
        let a = send(&server, Method::GET, &format!("{s}/{path}"), &[], None).await;
        answers.push((format!("GET {path} after values ±1e308"), a));
    }

    // Bounds whose width overflows to infinity.
    let wide = post_with(
        &server,
        "/v1/sessions",
        None,
        &with_parameters(json!([{"name": "x", "low": -1e308, "high": 1e308}])),
    )
    .await;
    let wide_id = wide.json()["id"].as_str().map(str::to_string);
    answers.push(("create with bounds ±1e308".to_string(), wide));
    if let Some(id) = wide_id {
        let g = post_with(
            &server,
            &format!("/v1/sessions/{id}/suggestions"),
            None,
            &json!({}),
        )
        .await;
        answers.push(("suggest with bounds ±1e308".to_string(), g));
        let o = post_with(
            &server,
            &format!("/v1/sessions/{id}/observations"),
            None,
            &json!({"params": {"x": 1e307}, "value": 1.0}),
        )
        .await;
        answers.push(("observe with bounds ±1e308".to_string(), o));
    }
    let failures: Vec<String> = answers
        .iter()
        .filter(|(_, a)| a.status >= 500)
        .map(|(what, a)| format!("CASE: {what}\n  answer: {} {}", a.status, a.text))
        .collect();
    for (what, a) in &answers {
        eprintln!(
            "{what}: {} {}",
            a.status,
            a.text.chars().take(300).collect::<String>()
        );
    }
    assert!(failures.is_empty(), "5xx answers:\n{}", failures.join("\n"));
    server.stop().await;
}
