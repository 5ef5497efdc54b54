//! The life of a session over HTTP: listing, batches, pending points, time, insight, deletion.

use crate::common;

use common::{TestServer, client_session};
use serde_json::json;

backend_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    sessions_are_listed_newest_first_with_cursor_paging,
    batches_pending_points_and_insight,
    resets_mark_observations_inactive_with_a_reason,
    wall_clock_sessions_place_observations_at_their_measurement,
    deleting_a_session_forgets_its_idempotency_records,
    the_model_reports_server_compute_time,
    stepped_parameters_are_suggested_on_their_grids,
    resuming_by_name_under_concurrent_callers_makes_one_session,
    failed_and_abandoned_runs_release_their_suggestions_and_add_no_observation,
    metadata_is_kept_with_its_run_and_returned,
    context_parameters_are_given_and_the_rest_chosen_for_them,
    a_mixed_space_is_suggested_observed_and_forgotten_over,
);

/// A categorical parameter beside a float one, under BOLT with a small dataset (so that
/// the relevance over the mixed space forgets): suggestions carry choices, observations
/// name them, bad choices are refused, the model reports l_C, and the session learns
/// which choice is best.
async fn a_mixed_space_is_suggested_observed_and_forgotten_over(server: TestServer) {
    let id = server
        .create(json!({
            "parameters": [
                {"name": "codec", "type": "categorical", "choices": ["lz4", "zstd", "none"]},
                {"name": "x", "low": 0, "high": 1},
            ],
            "algorithm": {"name": "bolt", "max_dataset_size": 16},
            "model": {"warmup": 6},
            "time": {"source": "client"},
            "seed": 2,
        }))
        .await;
    let (suggest, observe) = (
        format!("/v1/sessions/{id}/suggestions"),
        format!("/v1/sessions/{id}/observations"),
    );
    let value = |codec: &str, x: f64| {
        let base = match codec {
            "zstd" => 1.0,
            "lz4" => 0.3,
            _ => -0.5,
        };
        base - (x - 0.6).powi(2)
    };
    let mut late = Vec::new();
    for round in 0..40 {
        let t = f64::from(round);
        let (status, answer) = server.post(&suggest, &json!({"t": t})).await;
        assert_eq!(status, 201, "{answer}");
        let s = &answer["suggestions"][0];
        let codec = s["params"]["codec"].as_str().expect("a choice").to_string();
        assert!(["lz4", "zstd", "none"].contains(&codec.as_str()), "{s}");
        let x = s["params"]["x"].as_f64().unwrap();
        let (status, answer) = server
            .post(
                &observe,
                &json!({"suggestion_id": s["id"], "value": value(&codec, x), "t": t + 0.5}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
        if round >= 30 {
            late.push(codec);
        }
    }
    let zstd = late.iter().filter(|c| *c == "zstd").count();
    assert!(zstd >= 7, "the last 10 suggestions: {late:?}");
    let (status, answer) = server
        .post(
            &observe,
            &json!({"params": {"codec": "none", "x": 0.5}, "value": 0, "t": 41}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    for (codec, message) in [(json!("gzip"), "is not one of"), (json!(2), "as a string")] {
        let (status, answer) = server
            .post(
                &observe,
                &json!({"params": {"codec": codec, "x": 0.5}, "value": 0, "t": 42}),
            )
            .await;
        assert_eq!(
            (status, answer["field"].as_str()),
            (422, Some("params.codec")),
            "{answer}"
        );
        assert!(
            answer["detail"].as_str().unwrap().contains(message),
            "{answer}"
        );
    }
    let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert!(
        model["hyperparameters"]["categorical_lengthscale"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{model}"
    );
    assert!(model["dataset_size"].as_i64().unwrap() <= 16, "{model}");
    let (_, listing) = server
        .get(&format!("{observe}?include_pruned=true&limit=100"))
        .await;
    let forgotten = listing["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["removed_reason"] == "relevance")
        .count();
    assert!(forgotten > 0, "BOLT forgot nothing over the mixed space");
    let (status, best) = server.get(&format!("/v1/sessions/{id}/best")).await;
    assert_eq!(
        (status, best["params"]["codec"].as_str()),
        (200, Some("zstd")),
        "{best}"
    );
}

/// A context parameter (`load`) is never chosen: every suggest gives it (`fixed`), the
/// suggestion carries the value given, and once the model has learnt that the best
/// `x` follows the load, the suggestions for a low and a high load differ accordingly.
/// Fixing a parameter that is not a context one holds it too.
async fn context_parameters_are_given_and_the_rest_chosen_for_them(server: TestServer) {
    let id = server
        .create(json!({
            "parameters": [
                {"name": "x", "low": 0, "high": 1},
                {"name": "load", "low": 0, "high": 1, "context": true},
                {"name": "threads", "type": "int", "low": 1, "high": 8},
            ],
            "algorithm": {"name": "gp-ucb"},
            "model": {"warmup": 4},
            "time": {"source": "client"},
            "seed": 9,
        }))
        .await;
    let (server, suggest) = (&server, format!("/v1/sessions/{id}/suggestions"));
    let observe = format!("/v1/sessions/{id}/observations");
    let (status, answer) = server.post(&suggest, &json!({"t": 0})).await;
    assert_eq!(
        (status, answer["field"].as_str()),
        (422, Some("fixed.load")),
        "{answer}"
    );
    for (fixed, field) in [
        (json!({"load": 1.5}), "fixed.load"),
        (json!({"load": 0.5, "nope": 1}), "fixed.nope"),
        (json!({"load": 0.5, "threads": 2.5}), "fixed.threads"),
    ] {
        let (status, answer) = server
            .post(&suggest, &json!({"t": 0, "fixed": fixed}))
            .await;
        assert_eq!(
            (status, answer["field"].as_str()),
            (422, Some(field)),
            "{answer}"
        );
    }
    let (status, answer) = server
        .post(
            &observe,
            &json!({"params": {"x": 0.5, "threads": 2}, "value": 0, "t": 0}),
        )
        .await;
    assert_eq!(
        (status, answer["field"].as_str()),
        (422, Some("params.load")),
        "{answer}"
    );
    // The best x is the load; threads do not matter.
    let mut round = 0.0;
    for k in 0..24 {
        let load = [0.13, 0.5, 0.87][k % 3];
        round += 1.0;
        let (status, answer) = server
            .post(&suggest, &json!({"t": round, "fixed": {"load": load}}))
            .await;
        assert_eq!(status, 201, "{answer}");
        let s = &answer["suggestions"][0];
        assert_eq!(s["params"]["load"], json!(load), "{s}");
        let x = s["params"]["x"].as_f64().unwrap();
        let (status, answer) = server
            .post(
                &observe,
                &json!({"suggestion_id": s["id"], "value": -(x - load).powi(2), "t": round}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let mut chosen = Vec::new();
    for load in [0.13, 0.87] {
        let (_, answer) = server
            .post(
                &suggest,
                &json!({"t": round + 1.0, "fixed": {"load": load, "threads": 3}}),
            )
            .await;
        let s = &answer["suggestions"][0];
        assert_eq!(
            (
                s["params"]["load"].as_f64(),
                s["params"]["threads"].as_i64()
            ),
            (Some(load), Some(3)),
            "{s}"
        );
        chosen.push(s["params"]["x"].as_f64().unwrap());
    }
    assert!(
        chosen[0] < 0.45 && chosen[1] > 0.55,
        "x for loads 0.13 and 0.87: {chosen:?}"
    );
}

/// An observation's and a failed run's `metadata` come back as sent in the listing, the
/// timeline and observe's answer; more than 4096 bytes, or not an object, is a 422.
async fn metadata_is_kept_with_its_run_and_returned(server: TestServer) {
    let id = server.create(client_session("gp-ucb", 4)).await;
    let path = format!("/v1/sessions/{id}/observations");
    let notes = json!({"host": "db-3", "build": 1742, "flags": ["jit", "lz4"]});
    let (status, answer) = server
        .post(
            &path,
            &json!({"observations": [
                {"params": {"x": 0.1, "y": 0.2}, "value": 1.0, "t": 1, "metadata": notes},
                {"params": {"x": 0.3, "y": 0.4}, "value": 2.0, "t": 2},
                {"params": {"x": 0.5, "y": 0.6}, "failed": true, "t": 3, "metadata": {"exit": 137}},
            ]}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["observations"][0]["metadata"], notes);
    assert_eq!(answer["failed"][0]["metadata"], json!({"exit": 137}));
    let (_, listing) = server.get(&path).await;
    assert_eq!(listing["observations"][0]["metadata"], notes);
    assert_eq!(listing["observations"][1]["metadata"], json!(null));
    let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    assert_eq!(timeline["observations"][0]["metadata"], notes);
    assert_eq!(timeline["ended_runs"][0]["metadata"], json!({"exit": 137}));
    // The model is built from the same two observations either way.
    let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert_eq!(model["dataset_size"], 2, "{model}");
    let big = json!({"log": "x".repeat(5000)});
    for metadata in [big, json!(5), json!(["a"])] {
        let (status, answer) = server
            .post(
                &path,
                &json!({"params": {"x": 0.1, "y": 0.1}, "value": 0, "t": 4, "metadata": metadata}),
            )
            .await;
        assert_eq!(
            (status, answer["field"].as_str()),
            (422, Some("metadata")),
            "{answer}"
        );
    }
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(session["observation_count"], 2, "{session}");
}

/// A failed measurement and an abandoned suggestion are recorded (observe's answer, the
/// timeline), release their suggestions, and add no observation (the dataset size does
/// not move; a failed run reaches the model as an imputed point: `failed_runs.rs`);
/// neither can be observed afterwards, and an observed suggestion cannot be abandoned.
async fn failed_and_abandoned_runs_release_their_suggestions_and_add_no_observation(
    server: TestServer,
) {
    let id = server.create(client_session("gp-ucb", 3)).await;
    let (status, answer) = server
        .post(
            &format!("/v1/sessions/{id}/suggestions"),
            &json!({"count": 3, "t": 0}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let sid = |i: usize| answer["suggestions"][i]["id"].as_str().unwrap().to_string();
    let (server, id) = (&server, id.as_str());
    let observe = |body: serde_json::Value| {
        let path = format!("/v1/sessions/{id}/observations");
        async move { server.post(&path, &body).await }
    };
    let (status, _) = observe(json!({"suggestion_id": sid(0), "value": 1.0, "t": 1})).await;
    assert_eq!(status, 201);
    let (status, failed) =
        observe(json!({"suggestion_id": sid(1), "failed": true, "reason": "timeout", "t": 1}))
            .await;
    assert_eq!(status, 201, "{failed}");
    assert_eq!(failed["observations"], json!([]));
    assert_eq!(failed["failed"][0]["kind"], "failed");
    assert_eq!(failed["failed"][0]["reason"], "timeout");
    let abandon = |sid: String| {
        let request = axum::http::Request::delete(format!("/v1/sessions/{id}/suggestions/{sid}"))
            .body(axum::body::Body::empty())
            .unwrap();
        async move { server.send(request).await.status().as_u16() }
    };
    assert_eq!(abandon(sid(2)).await, 204);
    let version = |session: serde_json::Value| session["version"].as_i64().unwrap();
    let before = version(server.get(&format!("/v1/sessions/{id}")).await.1);
    assert_eq!(abandon(sid(2)).await, 204, "abandoning twice is harmless");
    let after = version(server.get(&format!("/v1/sessions/{id}")).await.1);
    assert_eq!(after, before, "and changes nothing");
    assert_eq!(abandon(sid(0)).await, 409, "an observed suggestion");
    assert_eq!(abandon(uuid::Uuid::new_v4().to_string()).await, 404);
    for (i, message) in [(1, "reported failed"), (2, "abandoned")] {
        let (status, answer) =
            observe(json!({"suggestion_id": sid(i), "value": 2.0, "t": 2})).await;
        assert_eq!(status, 409, "{answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(message),
            "{answer}"
        );
    }
    // A failed setting of the client's own.
    let (status, answer) =
        observe(json!({"params": {"x": 0.5, "y": 0.5}, "failed": true, "t": 2})).await;
    assert_eq!(status, 201, "{answer}");
    // Bad input names its field and changes nothing.
    for (body, field) in [
        (
            json!({"suggestion_id": sid(0), "failed": true, "value": 1.0, "t": 3}),
            "value",
        ),
        (json!({"params": {"x": 0.5, "y": 0.5}, "t": 3}), "value"),
        (
            json!({"params": {"x": 0.5, "y": 0.5}, "value": 1.0, "reason": "r", "t": 3}),
            "reason",
        ),
        (
            json!({"params": {"x": 0.5, "y": 0.5}, "failed": true, "regret": 0, "t": 3}),
            "regret",
        ),
        (
            json!({"params": {"x": 0.5, "y": 0.5}, "failed": true, "reason": "a\u{7}", "t": 3}),
            "reason",
        ),
    ] {
        let (status, answer) = observe(body).await;
        assert_eq!(
            (status, answer["field"].as_str()),
            (422, Some(field)),
            "{answer}"
        );
    }
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(session["pending_count"], 0, "{session}");
    assert_eq!(session["observation_count"], 1, "{session}");
    let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert_eq!(model["dataset_size"], 1, "{model}");
    let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    assert_eq!(timeline["ended_run_count"], 3, "{timeline}");
    let kinds: Vec<&str> = timeline["ended_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["failed", "abandoned", "failed"]);
    assert_eq!(timeline["ended_runs"][1]["suggestion_id"], sid(2).as_str());
    assert_eq!(timeline["ended_runs"][2]["suggestion_id"], json!(null));
    // The session goes on.
    let (status, answer) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": 4}))
        .await;
    assert_eq!(status, 201, "{answer}");
}

/// Eight workers resuming the same name at once get one session (one 201, seven 200s);
/// a plain create makes a second session of the name, which a resume then answers; a
/// resume with another configuration is a 409 naming the field, one without a name a 422.
async fn resuming_by_name_under_concurrent_callers_makes_one_session(server: TestServer) {
    let body = json!({
        "name": "nightly cache",
        "resume": true,
        "parameters": [{"name": "size_mb", "type": "int", "low": 16, "high": 4096}],
    });
    // Over the socket, each caller a task of its own, as eight workers would be.
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let request = server
                .client
                .post(server.url("/v1/sessions"))
                .json(&body)
                .send();
            tokio::spawn(async move { TestServer::read(request.await.unwrap()).await })
        })
        .collect();
    let mut answers = Vec::new();
    for caller in callers {
        answers.push(caller.await.unwrap());
    }
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(created, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(status, _)| [200, 201].contains(status))
    );
    let id = &answers[0].1["id"];
    assert!(answers.iter().all(|(_, a)| &a["id"] == id), "{answers:?}");
    let (_, list) = server.get("/v1/sessions").await;
    let named = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "nightly cache")
        .count();
    assert_eq!(named, 1, "{list}");
    // A plain create makes another session of the name; a resume then answers the newest.
    let newer = server
        .create(json!({
            "name": "nightly cache",
            "parameters": [{"name": "size_mb", "type": "int", "low": 16, "high": 4096}],
        }))
        .await;
    let (status, answer) = server.post("/v1/sessions", &body).await;
    assert_eq!(
        (status, answer["id"].as_str()),
        (200, Some(newer.as_str())),
        "{answer}"
    );
    let mut other = body.clone();
    other["parameters"][0]["high"] = json!(8192);
    let (status, answer) = server.post("/v1/sessions", &other).await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["field"], "parameters[0].high", "{answer}");
    let mut nameless = body.clone();
    nameless.as_object_mut().unwrap().remove("name");
    let (status, answer) = server.post("/v1/sessions", &nameless).await;
    assert_eq!(
        (status, answer["field"].as_str()),
        (422, Some("name")),
        "{answer}"
    );
}

/// Parameters with a `step` are suggested on their grids, past the warm-up too, and an
/// observation off a grid is refused naming the parameter.
async fn stepped_parameters_are_suggested_on_their_grids(server: TestServer) {
    let id = server
        .create(json!({
            "parameters": [
                {"name": "ratio", "low": 0, "high": 1, "step": 0.25},
                {"name": "threads", "type": "int", "low": 1, "high": 16, "step": 3},
            ],
            "algorithm": {"name": "gp-ucb"},
            "model": {"warmup": 3},
            "time": {"source": "client"},
            "seed": 5,
        }))
        .await;
    for round in 0..8 {
        let t = round as f64;
        let (status, answer) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{answer}");
        let suggestion = &answer["suggestions"][0];
        let ratio = suggestion["params"]["ratio"].as_f64().unwrap();
        // An int parameter is a JSON integer.
        assert!(suggestion["params"]["threads"].is_i64(), "{suggestion}");
        let threads = suggestion["params"]["threads"].as_f64().unwrap();
        assert_eq!((ratio * 4.0).fract(), 0.0, "round {round}: {suggestion}");
        assert!(
            [1.0, 4.0, 7.0, 10.0, 13.0, 16.0].contains(&threads),
            "round {round}: {suggestion}"
        );
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": suggestion["id"], "value": ratio - threads / 16.0, "t": t}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let (status, answer) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"params": {"ratio": 0.5, "threads": 5}, "value": 0, "t": 9}),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["field"]
            .as_str()
            .unwrap()
            .ends_with("params.threads"),
        "{answer}"
    );
    // And in the listing, the best setting and the timeline.
    let (_, listed) = server.get(&format!("/v1/sessions/{id}/observations")).await;
    let (_, best) = server.get(&format!("/v1/sessions/{id}/best")).await;
    let (_, timeline) = server.get(&format!("/v1/sessions/{id}/timeline")).await;
    for params in [
        &listed["observations"][0]["params"],
        &best["params"],
        &timeline["observations"][0]["params"],
    ] {
        assert!(params["threads"].is_i64(), "{params}");
    }
    server.stop().await;
}

async fn sessions_are_listed_newest_first_with_cursor_paging(server: TestServer) {
    let mut ids = Vec::new();
    for seed in 0..5 {
        ids.push(server.create(client_session("gp-ucb", seed)).await);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/sessions?limit=2&cursor={c}"),
            None => "/v1/sessions?limit=2".to_string(),
        };
        let (status, page) = server.get(&path).await;
        assert_eq!(status, 200, "{page}");
        for s in page["sessions"].as_array().unwrap() {
            seen.push(s["id"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    ids.reverse();
    assert_eq!(seen, ids);
    let (status, _) = server
        .client
        .delete(server.url(&format!("/v1/sessions/{}", ids[0])))
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .unwrap();
    assert_eq!(status, 204);
    let (status, _) = server.get(&format!("/v1/sessions/{}", ids[0])).await;
    assert_eq!(status, 404);
    server.stop().await;
}

async fn batches_pending_points_and_insight(server: TestServer) {
    let id = server.create(client_session("tv-gp-ucb", 3)).await;
    let objective = |x: f64, y: f64| -(x - 0.3).powi(2) - (y - 0.6).powi(2);
    let mut t = 0.0;
    for round in 0..6 {
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/suggestions"),
                &json!({"count": 4, "t": t}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let suggestions = body["suggestions"].as_array().unwrap().clone();
        assert_eq!(suggestions.len(), 4);
        let points: Vec<(f64, f64)> = suggestions
            .iter()
            .map(|s| {
                (
                    s["params"]["x"].as_f64().unwrap(),
                    s["params"]["y"].as_f64().unwrap(),
                )
            })
            .collect();
        for (i, a) in points.iter().enumerate() {
            for b in &points[i + 1..] {
                assert!(a != b, "round {round}: duplicate suggestion {a:?}");
            }
        }
        let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
        assert_eq!(session["pending_count"], 4);
        // Measured two seconds after they were handed out: the lead becomes 2.
        let batch: Vec<_> = suggestions
            .iter()
            .zip(&points)
            .map(|(s, (x, y))| json!({"suggestion_id": s["id"], "value": objective(*x, *y), "t": t + 2.0}))
            .collect();
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"observations": batch}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["observations"].as_array().unwrap().len(), 4);
        t += 5.0;
    }
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(session["pending_count"], 0);
    assert_eq!(session["observation_count"], 24);
    assert_eq!(session["dataset_size"], 24);

    let (status, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert_eq!(status, 200, "{model}");
    assert_eq!(model["lead"], 2.0);
    let samples = model["response_time"]["samples"].as_array().unwrap();
    assert_eq!(
        samples.len(),
        5,
        "one sample per pair of consecutive suggest calls, each at its own n"
    );
    assert_eq!(samples[1], json!({"n": 4, "seconds": 5.0, "count": 1}));
    let hyper = &model["hyperparameters"];
    assert!(hyper["temporal_lengthscale"].as_f64().unwrap() > 0.0);
    assert!(hyper["epsilon"].as_f64().unwrap() > 0.0);

    // The next suggestion targets t + lead.
    let (_, body) = server
        .post(
            &format!("/v1/sessions/{id}/suggestions"),
            &json!({"t": 40.0}),
        )
        .await;
    assert_eq!(body["suggestions"][0]["t"], 42.0);

    let (status, best) = server.get(&format!("/v1/sessions/{id}/best?t=40")).await;
    assert_eq!(status, 200, "{best}");
    let (bx, by) = (
        best["params"]["x"].as_f64().unwrap(),
        best["params"]["y"].as_f64().unwrap(),
    );
    assert!(
        (bx - 0.3).abs() < 0.25 && (by - 0.6).abs() < 0.25,
        "best {best}"
    );
    let (status, prediction) = server
        .post(
            &format!("/v1/sessions/{id}/predict"),
            &json!({"points": [{"x": 0.3, "y": 0.6}, {"x": 1.0, "y": 0.0}], "t": 40.0}),
        )
        .await;
    assert_eq!(status, 200, "{prediction}");
    let near = prediction["predictions"][0]["mean"].as_f64().unwrap();
    let far = prediction["predictions"][1]["mean"].as_f64().unwrap();
    assert!(near > far, "{prediction}");

    let (status, regret) = server.get(&format!("/v1/sessions/{id}/regret")).await;
    assert_eq!(status, 200);
    let points = regret["points"].as_array().unwrap();
    assert_eq!(points.len(), 24);
    assert!(
        points
            .iter()
            .all(|p| p["estimated"] == true && p["regret"].as_f64().unwrap() >= 0.0)
    );

    // Paging through observations.
    let (_, page) = server
        .get(&format!("/v1/sessions/{id}/observations?limit=10"))
        .await;
    assert_eq!(page["observations"].as_array().unwrap().len(), 10);
    assert_eq!(page["next_after"], 10);
    let (_, page) = server
        .get(&format!("/v1/sessions/{id}/observations?after=20&limit=10"))
        .await;
    assert_eq!(page["observations"].as_array().unwrap().len(), 4);
    assert!(page.get("next_after").is_none());
    server.stop().await;
}

async fn resets_mark_observations_inactive_with_a_reason(server: TestServer) {
    let mut body = client_session("r-gp-ucb", 1);
    body["algorithm"] = json!({"name": "r-gp-ucb", "reset_every": 4});
    let id = server.create(body).await;
    for step in 0..10 {
        let t = f64::from(step);
        let (status, _) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"params": {"x": 0.1 * t, "y": 0.5}, "value": t, "t": t}),
            )
            .await;
        assert_eq!(status, 201);
    }
    let (_, active) = server.get(&format!("/v1/sessions/{id}/observations")).await;
    let seqs: Vec<i64> = active["observations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, vec![9, 10]);
    let (_, all) = server
        .get(&format!(
            "/v1/sessions/{id}/observations?include_pruned=true"
        ))
        .await;
    let all = all["observations"].as_array().unwrap();
    assert_eq!(all.len(), 10);
    assert!(all[..8].iter().all(|o| o["active"] == false
        && o["removed_reason"] == "reset"
        && !o["removed_at"].is_null()));
    // Each reset is an event, stored with its step, in order, paged by seq.
    let (status, events) = server.get(&format!("/v1/sessions/{id}/events")).await;
    assert_eq!(status, 200, "{events}");
    let events = events["events"].as_array().unwrap().clone();
    let seen: Vec<(i64, &str, i64, f64)> = events
        .iter()
        .map(|e| {
            (
                e["seq"].as_i64().unwrap(),
                e["kind"].as_str().unwrap(),
                e["data"]["resets"].as_i64().unwrap(),
                e["t"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(1, "model-reset", 1, 3.0), (2, "model-reset", 2, 7.0)]
    );
    let (_, steps) = server.get(&format!("/v1/sessions/{id}/steps")).await;
    let step_ids: Vec<i64> = steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert!(
        events
            .iter()
            .all(|e| step_ids.contains(&e["step"].as_i64().unwrap()))
    );
    let (_, first) = server
        .get(&format!("/v1/sessions/{id}/events?limit=1"))
        .await;
    assert_eq!(first["events"].as_array().unwrap().len(), 1);
    assert_eq!(first["next_after"], 1);
    let (_, rest) = server
        .get(&format!("/v1/sessions/{id}/events?after=1"))
        .await;
    assert_eq!(rest["events"][0]["seq"], 2);
    assert!(rest.get("next_after").is_none());
    let (status, _) = server
        .get(&format!("/v1/sessions/{id}/events?limit=0"))
        .await;
    assert_eq!(status, 422);
    server.stop().await;
}

async fn wall_clock_sessions_place_observations_at_their_measurement(server: TestServer) {
    let id = server
        .create(json!({"parameters": [{"name": "x", "low": 0, "high": 1}], "model": {"warmup": 2}}))
        .await;
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({}))
        .await;
    assert_eq!(status, 201, "{body}");
    let measured_at = chrono::Utc::now();
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({
                "suggestion_id": body["suggestions"][0]["id"],
                "value": 1.5,
                "measured_at": measured_at.to_rfc3339(),
            }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (_, session) = server.get(&format!("/v1/sessions/{id}")).await;
    let created: chrono::DateTime<chrono::Utc> =
        session["created_at"].as_str().unwrap().parse().unwrap();
    let expected = (measured_at - created).num_microseconds().unwrap() as f64 * 1e-6;
    let t = body["observations"][0]["t"].as_f64().unwrap();
    assert!((t - expected).abs() < 1e-5, "t = {t}, expected {expected}");
    server.stop().await;
}

async fn deleting_a_session_forgets_its_idempotency_records(server: TestServer) {
    let id = server.create(client_session("gp-ucb", 9)).await;
    let path = format!("/v1/sessions/{id}/suggestions");
    let send = || {
        server
            .client
            .post(server.url(&path))
            .header("idempotency-key", "retry-me")
            .json(&json!({"t": 1.0}))
            .send()
    };
    assert_eq!(send().await.unwrap().status().as_u16(), 201);
    let response = server
        .client
        .delete(server.url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert!(
        server
            .dump()
            .await
            .iter()
            .all(|row| !row.starts_with("idempotency|"))
    );
    let (status, body) = TestServer::read(send().await.unwrap()).await;
    assert_eq!(
        status, 404,
        "a retry after deletion must not replay: {body}"
    );
    server.stop().await;
}

async fn the_model_reports_server_compute_time(server: TestServer) {
    let id = server.create(client_session("gp-ucb", 4)).await;
    for step in 0..3 {
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{id}/suggestions"),
                &json!({"t": f64::from(step)}),
            )
            .await;
        assert_eq!(status, 201);
        let (status, _) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": body["suggestions"][0]["id"], "value": 1.0, "t": f64::from(step)}),
            )
            .await;
        assert_eq!(status, 201);
    }
    let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
    let calls = model["compute_time"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{model}");
    assert_eq!(calls[0]["kind"], "observe");
    assert_eq!(calls[1]["kind"], "suggest");
    assert!(
        calls
            .iter()
            .all(|c| c["count"] == 3 && c["mean_seconds"].as_f64().unwrap() >= 0.0)
    );
    server.stop().await;
}
