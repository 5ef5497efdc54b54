//! Retries that race their original — the same request with the same `Idempotency-Key`,
//! sent concurrently — all get the original's answer, and the request acts once (on every
//! backend; `tests/it/slow/scale_out.rs` does the same across two server processes).

use crate::common;

use common::{TestServer, client_session};
use serde_json::{Value, json};

backend_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    concurrent_retries_of_an_observe_get_the_first_answer,
    concurrent_retries_of_a_suggest_get_the_first_answer,
);

/// Copies of one request in flight at once.
const COPIES: usize = 8;

/// Sends `body` to `path` with `key`, [`COPIES`] times at once; every answer must be 201,
/// and all must be equal. Returns the answer.
async fn send_concurrently(server: &TestServer, path: &str, key: &str, body: &Value) -> Value {
    let mut sends = tokio::task::JoinSet::new();
    for _ in 0..COPIES {
        let request = server
            .client
            .post(server.url(path))
            .header("idempotency-key", key)
            .json(body);
        sends.spawn(async move { TestServer::read(request.send().await.unwrap()).await });
    }
    let mut answers = Vec::new();
    while let Some(answered) = sends.join_next().await {
        let (status, answer) = answered.unwrap();
        assert_eq!(status, 201, "{answer}");
        answers.push(answer);
    }
    assert!(
        answers.iter().all(|a| a == &answers[0]),
        "the copies were answered differently: {answers:?}"
    );
    answers.swap_remove(0)
}

/// Rows of `table` in the server's database.
async fn rows(server: &TestServer, table: &str) -> usize {
    let prefix = format!("{table}|");
    server
        .dump()
        .await
        .iter()
        .filter(|row| row.starts_with(&prefix))
        .count()
}

async fn concurrent_retries_of_an_observe_get_the_first_answer(server: TestServer) {
    let id = server.create(client_session("gp-ucb", 3)).await;
    let (status, suggested) = server
        .post(
            &format!("/v1/sessions/{id}/suggestions"),
            &json!({"t": 1.0}),
        )
        .await;
    assert_eq!(status, 201, "{suggested}");
    let suggestion = suggested["suggestions"][0]["id"].as_str().unwrap();
    let body = json!({"suggestion_id": suggestion, "value": 0.5, "t": 2.0});
    let path = format!("/v1/sessions/{id}/observations");
    let answer = send_concurrently(&server, &path, "observe-once", &body).await;
    assert_eq!(
        answer["observations"][0]["suggestion_id"],
        json!(suggestion)
    );
    assert_eq!(rows(&server, "observations").await, 1);
    server.stop().await;
}

async fn concurrent_retries_of_a_suggest_get_the_first_answer(server: TestServer) {
    let id = server.create(client_session("gp-ucb", 4)).await;
    let path = format!("/v1/sessions/{id}/suggestions");
    let answer = send_concurrently(
        &server,
        &path,
        "suggest-once",
        &json!({"count": 2, "t": 1.0}),
    )
    .await;
    assert_eq!(answer["suggestions"].as_array().unwrap().len(), 2);
    assert_eq!(rows(&server, "suggestions").await, 2);
    server.stop().await;
}
