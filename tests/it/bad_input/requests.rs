//! Bad requests to the routes of a session: transport, unknown routes and methods,
//! suggest, observe, predict and the listings' queries.

use super::*;

backend_tests!(
    #[tokio::test]
    transport_errors_name_body_or_header,
    unknown_sessions_routes_and_methods,
    suggest_rejects_bad_requests,
    observe_rejects_bad_requests,
    predict_and_list_queries_reject_bad_requests,
);

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
            (Method::GET, format!("{s}/suggestions"), None),
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
            "PUT suggestions",
            Method::PUT,
            format!("/v1/sessions/{session}/suggestions"),
        )
        .json(json!({}))
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
