//! Regression tests of accepted requests that used to break a session for good, and of
//! the caps on one session's work (docs/api.md, "Limits"):
//!
//! - a log-scaled parameter whose bounds have the same logarithm in f64 is refused at
//!   creation (it used to store `unit: null` and answer 500 ever after);
//! - control characters in any stored text are a 422 on both backends (U+0000 used to be
//!   a 503 on PostgreSQL, forever for an arm name); name limits count characters;
//! - default seeds fit in a double exactly and larger seeds are refused;
//! - `time.lead` and `time.pending_timeout` are bounded, and so is the `t` of best and
//!   predict (at −1.8e308 best answered 200 with a null mean);
//! - a grid's `step` is at least 1024 ulp of its bounds' magnitude (finer grids' points
//!   are not distinct in f64: every suggest answered 500), and every suggestion on an
//!   accepted grid is accepted back by observe;
//! - `events.optimum_moved.relative_value` is at most 100;
//! - pending suggestions and the active dataset of non-forgetting algorithms are capped,
//!   with a 409 that names the cap.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};
use tvbo::engine::Limits;

backend_tests!(
    #[tokio::test]
    log_bounds_with_equal_logarithms_are_refused,
    control_characters_in_stored_texts_are_refused,
    seeds_fit_in_a_double,
    time_settings_are_bounded,
    query_times_are_bounded,
    grids_are_representable,
    relative_values_are_bounded,
);

/// POSTs a session; asserts a 422 naming `field` that stored nothing.
async fn refused(server: &TestServer, body: Value, field: &str) {
    let before = server.dump().await;
    let (status, problem) = server.post("/v1/sessions", &body).await;
    assert_eq!(status, 422, "{body} → {problem}");
    assert_eq!(problem["field"], json!(field), "{body} → {problem}");
    assert_eq!(server.dump().await, before, "{body} changed the database");
}

fn parameter(name: &str) -> Value {
    json!({"name": name, "low": 0.0, "high": 1.0})
}

async fn log_bounds_with_equal_logarithms_are_refused(server: TestServer) {
    for algorithm in ["bolt", "gp-ucb", "random"] {
        let body = json!({
            "parameters": [
                {"name": "x", "low": 1e10, "high": 10000000000.000002, "scale": "log"}
            ],
            "algorithm": {"name": algorithm},
        });
        refused(&server, body, "parameters[0].high").await;
    }
    // The narrowest linear range still maps into [0, 1]: accepted, observed, read back.
    let id = server
        .create(json!({
            "parameters": [{"name": "x", "low": 1e10, "high": 10000000000.000002}],
            "time": {"source": "client"},
        }))
        .await;
    let (status, answer) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"params": {"x": 10000000000.000002}, "value": 1.0, "t": 1.0}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let (status, list) = server.get(&format!("/v1/sessions/{id}/observations")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["observations"].as_array().unwrap().len(), 1);
}

async fn control_characters_in_stored_texts_are_refused(server: TestServer) {
    for bad in ["a\u{0}b", "line\nbreak", "del\u{7f}", "c1\u{85}"] {
        refused(
            &server,
            json!({"name": bad, "parameters": [parameter("x")]}),
            "name",
        )
        .await;
        refused(
            &server,
            json!({"parameters": [parameter("x"), parameter(bad)]}),
            "parameters[1].name",
        )
        .await;
        refused(
            &server,
            json!({
                "parameters": [parameter("x")],
                "arms": [{"params": {"x": 0.0}}, {"name": bad, "params": {"x": 1.0}}],
                "algorithm": {"name": "gp-ucb"},
            }),
            "arms[1].name",
        )
        .await;
        refused(
            &server,
            json!({
                "parameters": [parameter("x")],
                "arms": [{"params": {"x": 0.0}}, {"params": {"x": 1.0}}],
                "algorithm": {"name": "hp-gp-ts", "priors": [
                    {"name": bad, "kernel": "rbf", "lengthscale": 0.5}
                ]},
                "model": {"noise": 0.01},
            }),
            "algorithm.priors[0].name",
        )
        .await;
    }
    // Limits count characters, not bytes: 100 three-byte characters make a valid name,
    // stored and read back unchanged on both backends.
    let long = "€".repeat(100);
    let session_name = "é".repeat(200);
    let id = server
        .create(json!({
            "name": session_name,
            "parameters": [{"name": long, "low": 0.0, "high": 1.0}],
            "arms": [{"name": long, "params": {long.clone(): 0.5}}],
            "algorithm": {"name": "gp-ucb"},
        }))
        .await;
    let (status, session) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["name"], json!(session_name));
    assert_eq!(session["parameters"][0]["name"], json!(long));
    assert_eq!(session["arms"][0]["name"], json!(long));
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({}))
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["suggestions"][0]["arm"], json!(long));
    refused(
        &server,
        json!({"parameters": [{"name": "€".repeat(101), "low": 0.0, "high": 1.0}]}),
        "parameters[0].name",
    )
    .await;
}

async fn seeds_fit_in_a_double(server: TestServer) {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    for _ in 0..20 {
        let (status, session) = server
            .post("/v1/sessions", &json!({"parameters": [parameter("x")]}))
            .await;
        assert_eq!(status, 201, "{session}");
        let seed = session["seed"].as_u64().unwrap();
        assert!(seed <= MAX_SAFE, "default seed {seed} is above 2^53 − 1");
    }
    let (status, session) = server
        .post(
            "/v1/sessions",
            &json!({"parameters": [parameter("x")], "seed": MAX_SAFE}),
        )
        .await;
    assert_eq!(status, 201, "{session}");
    assert_eq!(session["seed"], json!(MAX_SAFE));
    for seed in [MAX_SAFE + 1, u64::MAX] {
        refused(
            &server,
            json!({"parameters": [parameter("x")], "seed": seed}),
            "seed",
        )
        .await;
    }
}

async fn time_settings_are_bounded(server: TestServer) {
    for value in [1e308, 2592000.5] {
        refused(
            &server,
            json!({"parameters": [parameter("x")], "time": {"lead": value}}),
            "time.lead",
        )
        .await;
        refused(
            &server,
            json!({"parameters": [parameter("x")], "time": {"pending_timeout": value}}),
            "time.pending_timeout",
        )
        .await;
    }
    server
        .create(json!({
            "parameters": [parameter("x")],
            "time": {"lead": 2592000.0, "pending_timeout": 2592000.0},
        }))
        .await;
}

fn limits(max_pending: usize, max_active_observations: usize) -> Limits {
    Limits {
        max_pending,
        max_active_observations,
        ..Limits::default()
    }
}

#[tokio::test]
async fn pending_suggestions_are_capped() {
    let server = TestServer::start_with(limits(4, 100)).await;
    let id = server.create(common::client_session("random", 1)).await;
    let path = format!("/v1/sessions/{id}/suggestions");
    let (status, first) = server.post(&path, &json!({"count": 3, "t": 1.0})).await;
    assert_eq!(status, 201, "{first}");
    let before = server.dump().await;
    let (status, problem) = server.post(&path, &json!({"count": 2, "t": 2.0})).await;
    assert_eq!(status, 409, "{problem}");
    assert_eq!(problem["field"], json!("count"));
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("/too-many-pending")
    );
    assert_eq!(
        server.dump().await,
        before,
        "a refused suggest changed rows"
    );
    // Observing one frees a place.
    let suggestion = first["suggestions"][0]["id"].as_str().unwrap();
    let (status, answer) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"suggestion_id": suggestion, "value": 1.0, "t": 2.0}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = server.post(&path, &json!({"count": 2, "t": 3.0})).await;
    assert_eq!(status, 201, "{answer}");
}

#[tokio::test]
async fn non_forgetting_sessions_are_capped_and_bolt_is_not() {
    let server = TestServer::start_with(limits(100, 5)).await;
    let observe = |id: String, i: usize| {
        let server = &server;
        async move {
            let body = json!({
                "params": {"x": (i as f64) / 10.0, "y": 0.5},
                "value": i as f64,
                "t": i as f64,
            });
            server
                .post(&format!("/v1/sessions/{id}/observations"), &body)
                .await
        }
    };
    let capped = server.create(common::client_session("gp-ucb", 1)).await;
    for i in 0..5 {
        let (status, answer) = observe(capped.clone(), i).await;
        assert_eq!(status, 201, "{answer}");
    }
    let before = server.dump().await;
    let (status, problem) = observe(capped.clone(), 5).await;
    assert_eq!(status, 409, "{problem}");
    assert!(problem["type"].as_str().unwrap().ends_with("/dataset-full"));
    assert!(problem["detail"].as_str().unwrap().contains("gp-ucb"));
    assert_eq!(
        server.dump().await,
        before,
        "a refused observe changed rows"
    );
    // The observe that reached the cap told so, once.
    let (_, events) = server.get(&format!("/v1/sessions/{capped}/events")).await;
    let full: Vec<&serde_json::Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "dataset-full")
        .collect();
    assert_eq!(full.len(), 1, "{events}");
    assert_eq!(full[0]["data"], json!({"active": 5, "cap": 5}));
    assert_eq!(full[0]["t"], 4.0);
    // R-GP-UCB resets every 3 observations: it never reaches the cap.
    let mut resetting = common::client_session("r-gp-ucb", 1);
    resetting["algorithm"]["reset_every"] = json!(3);
    let resetting = server.create(resetting).await;
    for i in 0..8 {
        let (status, answer) = observe(resetting.clone(), i).await;
        assert_eq!(status, 201, "{answer}");
    }
    // BOLT bounds its own dataset (max_dataset_size): the server's cap does not apply.
    let bolt = server.create(common::client_session("bolt", 1)).await;
    for i in 0..8 {
        let (status, answer) = observe(bolt.clone(), i).await;
        assert_eq!(status, 201, "{answer}");
    }
}

/// The time of a read is bounded like a client's time: far beyond it the posterior was
/// NaN, and best answered 200 with `"mean": null`.
async fn query_times_are_bounded(server: TestServer) {
    let id = server
        .create(json!({"parameters": [parameter("x")], "model": {"warmup": 2}}))
        .await;
    for x in [0.2, 0.7, 0.4] {
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"params": {"x": x}, "value": x}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    for t in ["-1.7976931348623157e308", "1e11"] {
        let (status, problem) = server.get(&format!("/v1/sessions/{id}/best?t={t}")).await;
        assert_eq!(status, 422, "best at {t}: {problem}");
        assert_eq!(problem["field"], json!("t"));
        let (status, problem) = server
            .post(
                &format!("/v1/sessions/{id}/predict"),
                &json!({"points": [{"x": 0.5}], "t": t.parse::<f64>().unwrap()}),
            )
            .await;
        assert_eq!(status, 422, "predict at {t}: {problem}");
        assert_eq!(problem["field"], json!("t"));
    }
    let (status, best) = server.get(&format!("/v1/sessions/{id}/best?t=-1e10")).await;
    assert_eq!(status, 200, "{best}");
    assert!(best["mean"].is_f64(), "{best}");
}

/// Grids whose points low + k·step are not distinct in f64 are refused at creation (the
/// fuzzed cases whose suggests all answered 500, and whose observations were all off the
/// grid); extreme grids that are accepted suggest, and observe what they suggested.
async fn grids_are_representable(server: TestServer) {
    let grid = |low: f64, high: f64, step: f64| {
        json!({
            "parameters": [{"name": "x", "low": low, "high": high, "step": step}],
            "model": {"warmup": 2},
            "time": {"source": "client"},
        })
    };
    for (low, high, step) in [
        (1e15, 1e15 + 10.0, 0.1),
        (-1e10, 1e10, 1e-6),
        (0.0, 1.0, 5e-324),
    ] {
        refused(&server, grid(low, high, step), "parameters[0].step").await;
    }
    for (low, high, step) in [(1e15, 1e15 + 4096.0, 128.0), (-1e10, 1e10, 0.01)] {
        let id = server.create(grid(low, high, step)).await;
        for i in 0..5 {
            let t = f64::from(i);
            let (status, answer) = server
                .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
                .await;
            assert_eq!(status, 201, "{low}..{high} by {step}: {answer}");
            let params = &answer["suggestions"][0]["params"];
            let (status, answer) = server
                .post(
                    &format!("/v1/sessions/{id}/observations"),
                    &json!({"params": params, "value": t, "t": t}),
                )
                .await;
            assert_eq!(status, 201, "{low}..{high} by {step}, {params}: {answer}");
        }
    }
}

/// `relative_value` is a fraction of the reference's |mean|, at most 100 (1e308 used to
/// be accepted).
async fn relative_values_are_bounded(server: TestServer) {
    let moved = |relative: f64| {
        json!({
            "parameters": [parameter("x")],
            "events": {"optimum_moved": {"relative_value": relative}},
        })
    };
    for relative in [1e308, 100.5] {
        refused(
            &server,
            moved(relative),
            "events.optimum_moved.relative_value",
        )
        .await;
    }
    server.create(moved(100.0)).await;
}
