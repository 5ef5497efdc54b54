//! Rows and reads one tenant could make unbounded (issue "Hardening 3"), on both
//! backends, against servers with the settings a user gets (keys required, default
//! caps; docs/api.md, "Limits"):
//!
//! - failed and abandoned runs had no cap (20,000 with 500-character reasons and 4 KiB of
//!   metadata were stored in under 2 s): a session keeps at most
//!   `TVBO_MAX_ENDED_RUNS`, beyond which a failed run or an abandon is a 409 naming it.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};
use tvbo::engine::Limits;

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test]
    failed_and_abandoned_runs_are_capped,
);

fn observe_path(id: &str) -> String {
    format!("/v1/sessions/{id}/observations")
}

/// A failed run of the client's own setting at session time `t`.
fn failed_run(t: f64) -> Value {
    json!({"params": {"x": 0.5, "y": 0.5}, "failed": true, "t": t})
}

/// Reports `count` failed runs in batches of 1000 (the most one observe takes).
async fn fail_runs(server: &TestServer, id: &str, count: usize) {
    for first in (0..count).step_by(1000) {
        let batch: Vec<Value> = (first..count.min(first + 1000))
            .map(|i| failed_run(i as f64))
            .collect();
        let (status, answer) = server
            .post(&observe_path(id), &json!({"observations": batch}))
            .await;
        assert_eq!(status, 201, "{answer}");
    }
}

/// The session's count of ended runs, as its timeline reports it.
async fn ended_run_count(server: &TestServer, id: &str) -> i64 {
    let (status, timeline) = server
        .get(&format!("/v1/sessions/{id}/timeline?points=100"))
        .await;
    assert_eq!(status, 200, "{timeline}");
    timeline["ended_run_count"].as_i64().unwrap()
}

/// Asserts a 409 `too-many-ended-runs` naming `field`.
fn assert_cap(status: u16, problem: &Value, field: &str) {
    assert_eq!(status, 409, "{problem}");
    assert_eq!(
        problem["type"], "https://tvbo.dev/problems/too-many-ended-runs",
        "{problem}"
    );
    assert_eq!(problem["field"], field, "{problem}");
}

async fn failed_and_abandoned_runs_are_capped(server: TestServer) {
    let server = server.with_key("bounded").await;
    let cap = Limits::DEFAULT_MAX_ENDED_RUNS;
    let id = server.create(common::client_session("random", 1)).await;
    let suggest = json!({"count": 2, "t": 0.0});
    let (status, handed) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &suggest)
        .await;
    assert_eq!(status, 201, "{handed}");
    let sid = |i: usize| handed["suggestions"][i]["id"].as_str().unwrap().to_string();
    let abandon = |sid: String| {
        let request = axum::http::Request::delete(format!("/v1/sessions/{id}/suggestions/{sid}"))
            .body(axum::body::Body::empty())
            .unwrap();
        async { TestServer::parsed(server.send(request).await).await }
    };
    fail_runs(&server, &id, cap - 1).await;
    let (status, _) = abandon(sid(0)).await;
    assert_eq!(status, 204, "the last one under the cap");
    assert_eq!(ended_run_count(&server, &id).await, cap as i64);

    // At the cap: one more failed run, alone or in a batch, and an abandon are refused,
    // and nothing of the request is stored.
    let (status, problem) = server.post(&observe_path(&id), &failed_run(1e6)).await;
    assert_cap(status, &problem, "failed");
    let value = json!({"params": {"x": 0.1, "y": 0.1}, "value": 1.0, "t": 1e6});
    let batch = json!({"observations": [value, failed_run(1e6)]});
    let (status, problem) = server.post(&observe_path(&id), &batch).await;
    assert_cap(status, &problem, "observations[1].failed");
    let (status, problem) = abandon(sid(1)).await;
    assert_cap(status, &problem, "suggestion_id");
    assert_eq!(ended_run_count(&server, &id).await, cap as i64);
    let (status, page) = server.get(&observe_path(&id)).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 0, "the refused batch stored nothing");

    // Values are still taken, the refused suggestion can still be observed, and an
    // abandon repeated changes nothing and is not refused.
    let observed = json!({"suggestion_id": sid(1), "value": 2.0, "t": 2e6});
    let (status, answer) = server.post(&observe_path(&id), &observed).await;
    assert_eq!(status, 201, "{answer}");
    let (status, _) = abandon(sid(0)).await;
    assert_eq!(status, 204);
}
