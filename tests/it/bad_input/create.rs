//! Bad session configurations, and numbers that are finite but extreme.

use super::*;

backend_tests!(
    #[tokio::test]
    session_create_rejects_bad_configurations,
    extreme_finite_numbers_never_answer_5xx,
);

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
            with_parameters(json!([{"name": "x", "low": 0, "high": 1, "stride": 0.1}])),
        )
        .expect(422, &["parameters[0].stride"]),
        create(
            "step 0",
            with_parameters(json!([{"name": "x", "low": 0, "high": 1, "step": 0}])),
        )
        .expect(422, &["parameters[0].step"]),
        create(
            "step on a log scale",
            with_parameters(
                json!([{"name": "x", "low": 1, "high": 100, "scale": "log", "step": 1}]),
            ),
        )
        .expect(422, &["parameters[0].step"]),
        create(
            "fractional step of an int",
            with_parameters(
                json!([{"name": "n", "type": "int", "low": 0, "high": 10, "step": 2.5}]),
            ),
        )
        .expect(422, &["parameters[0].step"]),
        create(
            "step longer than the bounds",
            with_parameters(json!([{"name": "x", "low": 0, "high": 1, "step": 2}])),
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
            "a context parameter in a session with arms",
            with(
                with_parameters(json!([
                    {"name": "x", "low": 0, "high": 1},
                    {"name": "y", "low": 0, "high": 1, "context": true}
                ])),
                "arms",
                json!([{"params": {"x": 0.5, "y": 0.5}}]),
            ),
        )
        .expect(422, &["parameters[1].context"]),
        create(
            "a context flag that is not a boolean",
            with_parameters(json!([{"name": "x", "low": 0, "high": 1, "context": 1}])),
        )
        .expect(422, &["parameters[0].context"]),
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
            "a drifting level for tv-gp-ucb over given priors",
            with(
                prior_session(json!({"name": "tv-gp-ucb", "priors": [rbf_prior()]})),
                "model",
                json!({"noise": 0.01, "level": "drifting"}),
            ),
        )
        .expect(422, &["model.level"]),
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
