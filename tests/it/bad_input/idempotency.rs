//! Idempotency keys: a retried request acts once, a rejected one burns no key.

use super::*;

backend_tests!(
    #[tokio::test]
    idempotent_observation_acts_once,
    idempotent_suggestion_acts_once,
    idempotent_session_create_acts_once,
    a_rejected_request_does_not_burn_its_idempotency_key,
);

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
