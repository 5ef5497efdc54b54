//! API keys and tenants, on SQLite and PostgreSQL: no key, a bad key and a revoked key are
//! 401; a key never reaches another tenant's session (404 on every operation, and nothing
//! changes); an admin key sees every tenant; idempotency keys are per tenant; the rate
//! limit answers 429 with Retry-After, the default one not to a busy client, a key's own
//! rate to that key alone; a tenant's session cap answers 409.

use crate::common;

use std::num::NonZeroU32;

use common::{TestServer, client_session};
use serde_json::{Value, json};
use tvbo::api::RouterSettings;
use tvbo::api::auth::AccessSettings;
use tvbo::server::ConnectionSettings;

/// Keys required, no rate limit (the rate test sets its own).
fn secured() -> RouterSettings {
    RouterSettings {
        access: AccessSettings {
            rate_per_second: None,
            ..AccessSettings::default()
        },
        ..Default::default()
    }
}

/// Makes a key in the server's database, as `tvbo keys create` does.
async fn key(server: &TestServer, name: &str, tenant: &str, admin: bool) -> String {
    let made = tvbo::keys::new_key(name, Some(tenant), admin).unwrap();
    server.store().insert_api_key(&made.row).await.unwrap();
    made.key
}

/// A request with `key` as its bearer: status and JSON body (Null when none).
async fn call(
    server: &TestServer,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = axum::http::Request::builder().method(method).uri(path);
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let request = match body {
        Some(body) => request
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string())),
        None => request.body(axum::body::Body::empty()),
    }
    .unwrap();
    TestServer::parsed(server.send(request).await).await
}

/// Session ids of a listing.
fn ids(list: &Value) -> Vec<String> {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

async fn keys_fence_tenants(server: TestServer) {
    let a = key(&server, "alice", "team-a", false).await;
    let b = key(&server, "bob", "team-b", false).await;
    let admin = key(&server, "ops", "ops", true).await;

    // No key, a malformed one, an unknown one: 401 with the bearer challenge.
    let response = server
        .client
        .get(server.url("/v1/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer realm=\"tvbo\""
    );
    let unknown = tvbo::keys::new_key("ghost", None, true).unwrap().key;
    // A's key with its last secret digit changed.
    let last = if a.ends_with('0') { "1" } else { "0" };
    let mistyped = format!("{}{last}", &a[..a.len() - 1]);
    for bad in ["tvbo_nope", unknown.as_str(), mistyped.as_str()] {
        let (status, problem) = call(&server, "GET", "/v1/sessions", Some(bad), None).await;
        assert_eq!(status, 401, "{bad}: {problem}");
        assert!(problem["type"].as_str().unwrap().ends_with("/unauthorized"));
    }
    let (status, _) = call(
        &server,
        "POST",
        "/v1/sessions",
        None,
        Some(client_session("bolt", 1)),
    )
    .await;
    assert_eq!(status, 401);
    // Pages without session data need no key.
    for path in ["/healthz", "/readyz", "/openapi.json", "/"] {
        let (status, _) = call(&server, "GET", path, None, None).await;
        assert_eq!(status, 200, "{path}");
    }

    let body = client_session("bolt", 1);
    let (status, session_a) = call(
        &server,
        "POST",
        "/v1/sessions",
        Some(&a),
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 201, "{session_a}");
    let (status, session_b) = call(&server, "POST", "/v1/sessions", Some(&b), Some(body)).await;
    assert_eq!(status, 201, "{session_b}");
    let sa = session_a["id"].as_str().unwrap().to_string();
    let sb = session_b["id"].as_str().unwrap().to_string();
    let (status, suggested) = call(
        &server,
        "POST",
        &format!("/v1/sessions/{sb}/suggestions"),
        Some(&b),
        Some(json!({"t": 1.0})),
    )
    .await;
    assert_eq!(status, 201, "{suggested}");
    let suggestion = suggested["suggestions"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A sees only its own session, B's is not found on every operation, and nothing
    // changes in the database.
    let (_, list) = call(&server, "GET", "/v1/sessions", Some(&a), None).await;
    assert_eq!(ids(&list), vec![sa.clone()]);
    let before = server.dump().await;
    let operations: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("/v1/sessions/{sb}"), None),
        (
            "POST",
            format!("/v1/sessions/{sb}/suggestions"),
            Some(json!({"t": 2.0})),
        ),
        (
            "POST",
            format!("/v1/sessions/{sb}/observations"),
            Some(json!({"suggestion_id": suggestion, "value": 1.0, "t": 2.0})),
        ),
        ("GET", format!("/v1/sessions/{sb}/observations"), None),
        ("GET", format!("/v1/sessions/{sb}/steps"), None),
        ("GET", format!("/v1/sessions/{sb}/events"), None),
        ("GET", format!("/v1/sessions/{sb}/timeline"), None),
        ("GET", format!("/v1/sessions/{sb}/regret"), None),
        ("GET", format!("/v1/sessions/{sb}/model"), None),
        (
            "POST",
            format!("/v1/sessions/{sb}/predict"),
            Some(json!({"points": [{"x": 0.5, "y": 0.5}], "t": 1.0})),
        ),
        ("GET", format!("/v1/sessions/{sb}/best"), None),
        ("DELETE", format!("/v1/sessions/{sb}"), None),
    ];
    let missing = uuid::Uuid::new_v4();
    for (method, path, body) in &operations {
        let (status, problem) = call(&server, method, path, Some(&a), body.clone()).await;
        assert_eq!(status, 404, "{method} {path}: {problem}");
        // Word for word what a session that does not exist gets.
        let other = path.replace(&sb, &missing.to_string());
        let (_, absent) = call(&server, method, &other, Some(&a), body.clone()).await;
        assert_eq!(problem, absent, "{method} {path}");
    }
    assert_eq!(
        server.dump().await,
        before,
        "a refused request changed nothing"
    );

    // The owner still reaches it; the admin sees both tenants' sessions and reaches each.
    let (status, _) = call(
        &server,
        "GET",
        &format!("/v1/sessions/{sb}"),
        Some(&b),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (_, list) = call(&server, "GET", "/v1/sessions", Some(&admin), None).await;
    let mut all = ids(&list);
    all.sort();
    let mut both = vec![sa.clone(), sb.clone()];
    both.sort();
    assert_eq!(all, both);
    for id in [&sa, &sb] {
        let (status, _) = call(
            &server,
            "GET",
            &format!("/v1/sessions/{id}/regret"),
            Some(&admin),
            None,
        )
        .await;
        assert_eq!(status, 200, "admin reads {id}");
    }

    // Revoked: refused once the replica reads its row again (within KEY_ROW_TTL).
    let a_id = tvbo::keys::key_id(&a).unwrap();
    assert!(server.store().revoke_api_key(a_id).await.unwrap());
    tokio::time::sleep(tvbo::keys::KEY_ROW_TTL).await;
    let (status, _) = call(
        &server,
        "GET",
        &format!("/v1/sessions/{sa}"),
        Some(&a),
        None,
    )
    .await;
    assert_eq!(status, 401);
    // B deletes its own session; the admin deletes A's.
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/v1/sessions/{sb}"),
        Some(&b),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = call(
        &server,
        "DELETE",
        &format!("/v1/sessions/{sa}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 204);
    server.stop().await;
}

async fn idempotency_keys_are_per_tenant(server: TestServer) {
    let a = key(&server, "alice", "team-a", false).await;
    let b = key(&server, "bob", "team-b", false).await;
    let mut made = Vec::new();
    for key in [&a, &b, &a] {
        let response = server
            .client
            .post(server.url("/v1/sessions"))
            .bearer_auth(key)
            .header("idempotency-key", "same-key")
            .json(&client_session("bolt", 7))
            .send()
            .await
            .unwrap();
        let (status, session) = TestServer::read(response).await;
        assert_eq!(status, 201, "{session}");
        made.push(session["id"].as_str().unwrap().to_string());
    }
    assert_ne!(made[0], made[1], "B's request is not A's replay");
    assert_eq!(made[0], made[2], "A's retry is replayed");
    let (_, list) = call(&server, "GET", "/v1/sessions", Some(&b), None).await;
    assert_eq!(ids(&list), vec![made[1].clone()]);
    server.stop().await;
}

backend_tests!(
    settings = super::secured();
    #[tokio::test] keys_fence_tenants, idempotency_keys_are_per_tenant
);

/// The tests of the default settings (a module of their own: one `backend_tests!` per
/// module).
mod default_settings {
    use super::*;

    backend_tests!(
        settings = super::defaults();
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        the_default_rate_lets_a_busy_client_through,
        a_key_with_its_own_rate_is_held_to_it,
    );

    /// Keys required, every limit at its default.
    fn defaults() -> RouterSettings {
        RouterSettings {
            access: AccessSettings::default(),
            ..Default::default()
        }
    }

    /// One key, 8 clients at once, 2,000 suggests and observes in all (1,000 rounds), with the
    /// default settings: not one 429 (at the old 50 per second, bursts of 100, most were).
    async fn the_default_rate_lets_a_busy_client_through(server: TestServer) {
        const CLIENTS: usize = 8;
        const ROUNDS: usize = 125;
        let key = key(&server, "busy", "busy", false).await;
        let server = std::sync::Arc::new(server);
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let server = server.clone();
                let key = key.clone();
                tokio::spawn(async move {
                    let (status, session) = call(
                        &server,
                        "POST",
                        "/v1/sessions",
                        Some(&key),
                        Some(client_session("random", client as u64)),
                    )
                    .await;
                    assert_eq!(status, 201, "{session}");
                    let id = session["id"].as_str().unwrap().to_string();
                    let mut statuses = Vec::new();
                    for round in 0..ROUNDS {
                        let t = round as f64;
                        let (status, suggested) = call(
                            &server,
                            "POST",
                            &format!("/v1/sessions/{id}/suggestions"),
                            Some(&key),
                            Some(json!({"t": t})),
                        )
                        .await;
                        statuses.push(status);
                        let Some(suggestion) = suggested["suggestions"][0]["id"].as_str() else {
                            continue;
                        };
                        let (status, _) = call(
                            &server,
                            "POST",
                            &format!("/v1/sessions/{id}/observations"),
                            Some(&key),
                            Some(json!({"suggestion_id": suggestion, "value": -t, "t": t})),
                        )
                        .await;
                        statuses.push(status);
                    }
                    statuses
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for client in clients {
            statuses.extend(client.await.unwrap());
        }
        assert_eq!(statuses.len(), 2 * CLIENTS * ROUNDS);
        let limited = statuses.iter().filter(|&&s| s == 429).count();
        assert_eq!(limited, 0, "{limited} of {} answered 429", statuses.len());
        assert!(statuses.iter().all(|&s| s == 201), "{statuses:?}");
        std::sync::Arc::into_inner(server).unwrap().stop().await;
    }

    /// A key made with `--rate 2` (2 per second, bursts of 4) is answered 429 past its own
    /// rate, naming it, while a key of the server's rate is not.
    async fn a_key_with_its_own_rate_is_held_to_it(server: TestServer) {
        let mut slow = tvbo::keys::new_key("slow", None, false).unwrap();
        slow.row.rate_limit = NonZeroU32::new(2);
        server.store().insert_api_key(&slow.row).await.unwrap();
        let listed = server.store().list_api_keys().await.unwrap();
        assert_eq!(
            listed[0].rate_limit,
            NonZeroU32::new(2),
            "stored and read back"
        );
        let fast = key(&server, "fast", "fast", false).await;
        for _ in 0..4 {
            let (status, _) = call(&server, "GET", "/v1/sessions", Some(&slow.key), None).await;
            assert_eq!(status, 200);
        }
        let response = server
            .client
            .get(server.url("/v1/sessions"))
            .bearer_auth(&slow.key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()["retry-after"], "1");
        let (_, problem) = TestServer::read(response).await;
        assert!(
            problem["detail"].as_str().unwrap().contains("--rate"),
            "{problem}"
        );
        for _ in 0..50 {
            let (status, _) = call(&server, "GET", "/v1/sessions", Some(&fast), None).await;
            assert_eq!(status, 200);
        }
        // Half a second later, one more of the slow key's (2 per second) passes.
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        let (status, _) = call(&server, "GET", "/v1/sessions", Some(&slow.key), None).await;
        assert_eq!(status, 200);
        server.stop().await;
    }
}

#[tokio::test]
async fn the_rate_limit_answers_429_with_retry_after() {
    let settings = RouterSettings {
        access: AccessSettings {
            rate_per_second: NonZeroU32::new(1),
            rate_burst: NonZeroU32::new(3).unwrap(),
            ..AccessSettings::default()
        },
        ..Default::default()
    };
    let server = TestServer::start_configured(settings, ConnectionSettings::default()).await;
    let a = key(&server, "alice", "team-a", false).await;
    let b = key(&server, "bob", "team-b", false).await;
    for _ in 0..3 {
        let (status, _) = call(&server, "GET", "/v1/sessions", Some(&a), None).await;
        assert_eq!(status, 200);
    }
    let response = server
        .client
        .get(server.url("/v1/sessions"))
        .bearer_auth(&a)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    let (_, problem) = TestServer::read(response).await;
    assert!(problem["type"].as_str().unwrap().ends_with("/rate-limited"));
    // Another key has its own rate; the health checks have none.
    let (status, _) = call(&server, "GET", "/v1/sessions", Some(&b), None).await;
    assert_eq!(status, 200);
    for _ in 0..5 {
        let (status, _) = call(&server, "GET", "/healthz", None, None).await;
        assert_eq!(status, 200);
    }
    server.stop().await;
}

#[tokio::test]
async fn a_tenant_owns_at_most_its_cap_of_sessions() {
    let mut settings = secured();
    settings.access.max_sessions_per_tenant = 2;
    let server = TestServer::start_configured(settings, ConnectionSettings::default()).await;
    let a = key(&server, "alice", "team-a", false).await;
    let a2 = key(&server, "alice-ci", "team-a", false).await;
    let b = key(&server, "bob", "team-b", false).await;
    for key in [&a, &a2] {
        let (status, _) = call(
            &server,
            "POST",
            "/v1/sessions",
            Some(key),
            Some(client_session("bolt", 1)),
        )
        .await;
        assert_eq!(status, 201);
    }
    let before = server.dump().await;
    let (status, problem) = call(
        &server,
        "POST",
        "/v1/sessions",
        Some(&a),
        Some(client_session("bolt", 1)),
    )
    .await;
    assert_eq!(status, 409, "{problem}");
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("/too-many-sessions")
    );
    assert_eq!(server.dump().await, before);
    // Two keys of one tenant share its sessions; another tenant has its own cap.
    let (_, list) = call(&server, "GET", "/v1/sessions", Some(&a2), None).await;
    assert_eq!(ids(&list).len(), 2);
    let (status, _) = call(
        &server,
        "POST",
        "/v1/sessions",
        Some(&b),
        Some(client_session("bolt", 1)),
    )
    .await;
    assert_eq!(status, 201);
    server.stop().await;
}

/// `tvbo keys create` prints the key alone on standard output (logs go to standard
/// error), so that `KEY=$(tvbo keys create ...)` works, on a new database too; `keys
/// list` shows it with its own rate (`--rate`, last column), `keys revoke` revokes it
/// once.
#[test]
fn the_keys_command_prints_the_key_alone() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("keys.db").display());
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tvbo"))
            .args(args)
            .env("DATABASE_URL", &url)
            .output()
            .unwrap()
    };
    let made = run(&["keys", "create", "--name", "ci", "--rate", "7"]);
    assert!(made.status.success(), "{made:?}");
    let stdout = String::from_utf8(made.stdout).unwrap();
    let key = stdout.trim_end();
    assert!(
        key.starts_with("tvbo_") && !key.contains('\n'),
        "{stdout:?}"
    );
    let id = tvbo::keys::key_id(key).unwrap().simple().to_string();
    let listed = String::from_utf8(run(&["keys", "list"]).stdout).unwrap();
    assert!(
        listed.contains(&format!("{id}\tci\tci\tfalse\t")),
        "{listed}"
    );
    assert!(listed.starts_with("id\tname\ttenant\tadmin\tcreated\trevoked\trate\n"));
    assert!(listed.trim_end().ends_with("\t-\t7"), "{listed}");
    let other = run(&["keys", "create", "--name", "other"]);
    assert!(other.status.success(), "{other:?}");
    let listed = String::from_utf8(run(&["keys", "list"]).stdout).unwrap();
    assert!(listed.trim_end().ends_with("\t-\tdefault"), "{listed}");
    assert!(
        !run(&["keys", "create", "--name", "x", "--rate", "0"])
            .status
            .success()
    );
    assert!(run(&["keys", "revoke", &id]).status.success());
    assert!(!run(&["keys", "revoke", &id]).status.success());
}
