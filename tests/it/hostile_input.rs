//! What a hostile or careless client used to get away with (docs/api.md, "Limits"), on
//! both backends, against servers with the settings a user gets (keys required, default
//! rate and caps):
//!
//! - a reported `regret` of 1e308 overflowed the running total (503 on PostgreSQL, a null
//!   total on SQLite): regrets are bounded as values are;
//! - one session row damaged by hand made the listing a 500 for its tenant: it is listed
//!   as unreadable, and `tvbo check` names it;
//! - an Idempotency-Key sent to two spellings of one session id, or with the same JSON
//!   re-serialised, acted twice or was refused: keys are scoped by the canonical id and
//!   bodies compared as canonical JSON;
//! - the cap on a tenant's sessions was checked outside the insert's transaction;
//! - a session at the active-observation cap kept handing out suggestions that could
//!   never be observed;
//! - predict's 10,000 points did not fit in a request body at d = 4;
//! - one suggest could ask for minutes of model work;
//! - a path naming no session answered a bare text 404.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};
use tvbo::engine::Limits;

// With the settings a user gets: keys required (each test's client presents one of its
// tenant's), the default rate and caps.
backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test]
    reported_regret_is_bounded_and_totals_stay_finite,
    an_unreadable_session_is_listed_and_checked,
    idempotency_keys_see_one_session_and_one_body,
    suggestions_that_could_never_be_observed_are_refused,
    predict_takes_its_documented_points,
    model_work_per_suggest_is_bounded,
    paths_naming_no_session_answer_problems,
);

fn observe_path(id: &str) -> String {
    format!("/v1/sessions/{id}/observations")
}

async fn reported_regret_is_bounded_and_totals_stay_finite(server: TestServer) {
    let server = server.with_key("hostile").await;
    let id = server.create(common::client_session("random", 1)).await;
    let observation = |regret: f64, t: f64| json!({"params": {"x": 0.5, "y": 0.5}, "value": 1.0, "t": t, "regret": regret});
    let before = server.dump().await;
    let (status, problem) = server
        .post(&observe_path(&id), &observation(1e308, 1.0))
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "regret");
    assert_eq!(server.dump().await, before);
    for t in [1.0, 2.0] {
        let (status, answer) = server
            .post(&observe_path(&id), &observation(1e100, t))
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let (status, report) = server.get(&format!("/v1/sessions/{id}/regret")).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report["cumulative_regret"].as_f64(),
        Some(2e100),
        "{report}"
    );
    let (status, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    assert_eq!(status, 200, "{timeline}");
}

async fn an_unreadable_session_is_listed_and_checked(server: TestServer) {
    let server = server.with_key("hostile").await;
    let kept = server.create(common::client_session("random", 1)).await;
    let damaged = server.create(common::client_session("gp-ucb", 2)).await;
    server
        .execute(
            "UPDATE sessions SET config = '{\"hand\": \"edited\"}' WHERE id = $1",
            &damaged,
        )
        .await;
    for _ in 0..2 {
        let (status, page) = server.get("/v1/sessions").await;
        assert_eq!(status, 200, "{page}");
        let ids: Vec<&str> = page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec![kept.as_str()]);
        assert_eq!(
            page["unreadable"],
            json!([{"id": damaged, "unreadable": true}])
        );
    }
    let report = tvbo::session::check::check_database(server.store().as_ref())
        .await
        .unwrap();
    assert_eq!(report.sessions, 2);
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    assert_eq!(report.damaged[0].id.to_string(), damaged);
    assert!(
        report.damaged[0].problems[0].contains("session config"),
        "{report:?}"
    );
}

async fn post_with_key(
    server: &TestServer,
    path: &str,
    key: &str,
    body: &str,
) -> (u16, Value, bool) {
    let response = server
        .client
        .post(server.url(path))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let replayed = response.headers().contains_key("idempotent-replayed");
    let (status, value) = TestServer::read(response).await;
    (status, value, replayed)
}

async fn idempotency_keys_see_one_session_and_one_body(server: TestServer) {
    let server = server.with_key("hostile").await;
    let id = server.create(common::client_session("random", 1)).await;
    let simple = id.replace('-', "");
    let spellings = [
        id.clone(),
        id.to_uppercase(),
        simple.clone(),
        format!("{{{id}}}"),
        format!("urn:uuid:{id}"),
    ];
    let (status, first, replayed) = post_with_key(
        &server,
        &format!("/v1/sessions/{}/suggestions", spellings[1]),
        "k-1",
        r#"{"t": 1.0, "count": 2}"#,
    )
    .await;
    assert_eq!((status, replayed), (201, false), "{first}");
    for (i, spelling) in spellings.iter().enumerate() {
        // The same JSON with its keys in another order and other whitespace.
        let (status, again, replayed) = post_with_key(
            &server,
            &format!("/v1/sessions/{spelling}/suggestions"),
            "k-1",
            &format!("{{ \"count\" : 2,{}\"t\":1.0 }}", " ".repeat(i)),
        )
        .await;
        assert_eq!((status, replayed), (201, true), "{spelling}: {again}");
        assert_eq!(again, first, "{spelling}");
    }
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(
        session["pending_count"], 2,
        "the suggest acted once: {session}"
    );
    let (status, problem, _) = post_with_key(
        &server,
        &format!("/v1/sessions/{simple}/suggestions"),
        "k-1",
        r#"{"t": 1.0, "count": 3}"#,
    )
    .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "Idempotency-Key");
}

async fn suggestions_that_could_never_be_observed_are_refused(server: TestServer) {
    let server = server.with_key("hostile").await;
    let cap = Limits::DEFAULT_MAX_ACTIVE_OBSERVATIONS;
    for algorithm in ["random", "gp-ucb"] {
        let id = server.create(common::client_session(algorithm, 1)).await;
        let observations: Vec<Value> = (0..cap)
            .map(|i| {
                let x = (i as f64 + 0.5) / cap as f64;
                json!({"params": {"x": x, "y": 0.5}, "value": x, "t": i as f64})
            })
            .collect();
        for batch in observations.chunks(1000) {
            let (status, answer) = server
                .post(&observe_path(&id), &json!({"observations": batch}))
                .await;
            assert_eq!(status, 201, "{answer}");
        }
        let before = server.dump().await;
        let (status, problem) = server
            .post(
                &format!("/v1/sessions/{id}/suggestions"),
                &json!({"t": cap as f64}),
            )
            .await;
        assert_eq!(status, 409, "{algorithm}: {problem}");
        assert!(problem["type"].as_str().unwrap().ends_with("/dataset-full"));
        assert_eq!(problem["field"], "session");
        assert_eq!(server.dump().await, before, "{algorithm}");
    }
}

async fn predict_takes_its_documented_points(server: TestServer) {
    let server = server.with_key("hostile").await;
    let parameters: Vec<Value> = (0..4)
        .map(|i| json!({"name": format!("parameter_{i}"), "low": 0, "high": 1}))
        .collect();
    let id = server
        .create(json!({
            "parameters": parameters,
            "algorithm": {"name": "gp-ucb"},
            "time": {"source": "client"},
            "seed": 1,
        }))
        .await;
    let observations: Vec<Value> = (0..8)
        .map(|i| {
            let params: serde_json::Map<String, Value> = (0..4)
                .map(|d| {
                    (
                        format!("parameter_{d}"),
                        json!(((i * 7 + d * 3) % 10) as f64 / 10.0),
                    )
                })
                .collect();
            json!({"params": params, "value": i as f64, "t": i as f64})
        })
        .collect();
    let (status, answer) = server
        .post(&observe_path(&id), &json!({"observations": observations}))
        .await;
    assert_eq!(status, 201, "{answer}");
    // 10,000 points, values at full precision: about 1.2 MB, beyond the 1 MiB of other
    // bodies.
    let points: Vec<Value> = (0..10_000)
        .map(|i| {
            let params: serde_json::Map<String, Value> = (0..4)
                .map(|d| {
                    (
                        format!("parameter_{d}"),
                        json!(((i * 4 + d) as f64 / 40_003.0).fract() + 1e-17),
                    )
                })
                .collect();
            Value::Object(params)
        })
        .collect();
    let body = json!({"points": points, "t": 9.0});
    assert!(serde_json::to_vec(&body).unwrap().len() > 1 << 20);
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/predict"), &body)
        .await;
    assert_eq!(
        status,
        200,
        "{}",
        &answer.to_string()[..200.min(answer.to_string().len())]
    );
    assert_eq!(answer["predictions"].as_array().unwrap().len(), 10_000);
}

async fn model_work_per_suggest_is_bounded(server: TestServer) {
    let server = server.with_key("hostile").await;
    let id = server.create(common::client_session("gp-ucb", 1)).await;
    let n = 1500;
    let observations: Vec<Value> = (0..n)
        .map(|i| {
            let x = (i as f64 + 0.5) / n as f64;
            json!({"params": {"x": x, "y": 1.0 - x}, "value": (6.0 * x).sin(), "t": i as f64})
        })
        .collect();
    for batch in observations.chunks(1000) {
        let (status, answer) = server
            .post(&observe_path(&id), &json!({"observations": batch}))
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let most = tvbo::engine::max_suggestions_for(n);
    assert!(most < 64, "{most}");
    let before = server.dump().await;
    let (status, problem) = server
        .post(
            &format!("/v1/sessions/{id}/suggestions"),
            &json!({"t": n as f64, "count": most + 1}),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["field"], "count");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {most} ")),
        "{problem}"
    );
    assert_eq!(server.dump().await, before);
}

async fn paths_naming_no_session_answer_problems(server: TestServer) {
    let server = server.with_key("hostile").await;
    for (method, path) in [
        ("GET", "/v1/sessions/not-a-uuid"),
        ("GET", "/v1/sessions/not-a-uuid/best"),
        ("POST", "/v1/sessions/not-a-uuid/suggestions"),
        ("GET", "/v1/sessions/%FF"),
        ("DELETE", "/v1/sessions/1234"),
        (
            "GET",
            "/v1/sessions/00000000-0000-0000-0000-000000000000/nothing",
        ),
    ] {
        let response = server
            .client
            .request(method.parse().unwrap(), server.url(path))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{method} {path}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(content_type, "application/problem+json", "{method} {path}");
        let (_, problem) = TestServer::read(response).await;
        assert_eq!(problem["status"], 404, "{method} {path}: {problem}");
    }
    // A dashboard address that names no session is read by a person: a page that says
    // so, still a 404.
    for path in ["/sessions/not-a-uuid", "/sessions/%FF"] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(content_type, "text/html; charset=utf-8", "{path}");
        let page = response.text().await.unwrap();
        assert!(page.contains(r#"data-view="not-found""#), "{path}: {page}");
    }
}

/// The tenant cap, with default settings but that a tenant may own 5 sessions.
mod capped {
    use super::common::{self, TestServer};

    backend_tests!(
        settings = super::capped_tenants();
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        concurrent_creates_hold_the_tenant_cap,
    );

    fn capped_tenants() -> tvbo::api::RouterSettings {
        let mut settings = tvbo::api::RouterSettings::default();
        settings.access.max_sessions_per_tenant = 5;
        settings
    }

    async fn concurrent_creates_hold_the_tenant_cap(server: TestServer) {
        let server = server.with_key("hostile").await;
        let mut creates = tokio::task::JoinSet::new();
        for i in 0..20 {
            let (client, url) = (server.client.clone(), server.url("/v1/sessions"));
            creates.spawn(async move {
                let body = common::client_session("random", i);
                TestServer::read(client.post(url).json(&body).send().await.unwrap()).await
            });
        }
        let answers = creates.join_all().await;
        let created = answers.iter().filter(|(status, _)| *status == 201).count();
        assert_eq!(created, 5, "{answers:?}");
        for (status, answer) in answers.iter().filter(|(status, _)| *status != 201) {
            assert_eq!(*status, 409, "{answer}");
            assert!(
                answer["type"]
                    .as_str()
                    .unwrap()
                    .ends_with("/too-many-sessions")
            );
        }
        let (_, page) = server.get("/v1/sessions").await;
        assert_eq!(page["sessions"].as_array().unwrap().len(), 5);
    }
}

/// `tvbo check` on a SQLite file with a session damaged by hand: it names the session,
/// leaves the other alone, and exits 1; on the repaired file (the session deleted), 0.
#[tokio::test]
async fn the_check_command_names_the_damaged_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checked.db");
    let server = TestServer::start_on(path.clone()).await;
    let kept = server.create(common::client_session("random", 1)).await;
    let damaged = server.create(common::client_session("gp-ucb", 2)).await;
    server
        .execute(
            "UPDATE sessions SET state = 'not json' WHERE id = $1",
            &damaged,
        )
        .await;
    let (status, page) = server.get("/v1/sessions").await;
    assert_eq!(status, 200, "{page}");
    server.stop().await;
    let check = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tvbo"))
            .arg("check")
            .env("DATABASE_URL", format!("sqlite://{}", path.display()))
            .output()
            .unwrap()
    };
    let found = check();
    let stdout = String::from_utf8(found.stdout).unwrap();
    assert_eq!(found.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(&format!("session {damaged}: ")), "{stdout}");
    assert!(!stdout.contains(&kept), "{stdout}");
    let stderr = String::from_utf8(found.stderr).unwrap();
    assert!(
        stderr.contains("2 sessions read, 1 with rows that do not read back"),
        "{stderr}"
    );

    let server = TestServer::start_on(path.clone()).await;
    let response = server
        .client
        .delete(server.url(&format!("/v1/sessions/{damaged}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    server.stop().await;
    let repaired = check();
    assert_eq!(repaired.status.code(), Some(0), "{repaired:?}");
}
