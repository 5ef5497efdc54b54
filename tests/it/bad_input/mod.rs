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

mod create;
mod idempotency;
mod requests;

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
