//! Prior selection on arm sets (paper 003): the statistics of the lengthscale setup on a
//! CI-sized run, and an arms session with two empirical priors over HTTP across a restart.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};
use tvbo::policy::SelectionRule;
use tvbo_bench::experiments::{self, SeedOutcome, Setup};

/// 003 §5's lengthscale setup (500 arms, σ = 0.25, δ = 0.05) on 10 seeds and T = 200
/// (the full 50-seed, T = 500 run is `cargo bench --bench prior_selection`). The seeds
/// are fixed, so the outcome is deterministic: a regression fails every time.
#[test]
fn lengthscale_setup_statistics_match_003() {
    let setup = Setup::lengthscale(experiments::ARM_COUNT);
    let priors = setup.build_priors();
    let seeds = 10u64;
    let horizon = 200;
    let run = |rule: SelectionRule| -> Vec<SeedOutcome> {
        std::thread::scope(|scope| {
            let halves: Vec<_> = [0, 1]
                .map(|half| {
                    let (setup, priors) = (&setup, &priors);
                    scope.spawn(move || {
                        (0..seeds)
                            .filter(|s| s % 2 == half)
                            .map(|s| (s, experiments::run_seed(setup, priors, rule, s, horizon)))
                            .collect::<Vec<_>>()
                    })
                })
                .into_iter()
                .collect();
            let mut all: Vec<_> = halves.into_iter().flat_map(|h| h.join().unwrap()).collect();
            all.sort_by_key(|(s, _)| *s);
            all.into_iter().map(|(_, o)| o).collect()
        })
    };
    let hp = experiments::summarise("hp-gp-ts", &run(SelectionRule::HpGpTs));
    let pe_ts = experiments::summarise("pe-gp-ts", &run(SelectionRule::PeGpTs));
    let pe_ucb = experiments::summarise("pe-gp-ucb", &run(SelectionRule::PeGpUcb));
    for s in [&hp, &pe_ts, &pe_ucb] {
        println!("{s:?}");
    }
    assert!(
        hp.most_mass_on_true_prior > 0.5,
        "HP-GP-TS puts most hyperposterior mass on p* in the majority of seeds"
    );
    assert!(
        pe_ts.true_prior_eliminated <= experiments::DELTA,
        "PE-GP-TS eliminates p* in at most δ of the seeds"
    );
    assert!(
        hp.mean_final_regret <= pe_ts.mean_final_regret
            && pe_ts.mean_final_regret <= pe_ucb.mean_final_regret,
        "003 Fig. 4 (center): HP-GP-TS ≤ PE-GP-TS ≤ PE-GP-UCB in mean final regret"
    );
}

const ARMS: usize = 8;

/// Two empirical priors over 8 arms on a line: a smooth one (true here) and a rough one
/// with a different mean.
fn empirical_priors() -> Value {
    let points: Vec<f64> = (0..ARMS).map(|i| i as f64 / (ARMS - 1) as f64).collect();
    let covariance = |lengthscale: f64, variance: f64| -> Vec<Vec<f64>> {
        points
            .iter()
            .map(|a| {
                points
                    .iter()
                    .map(|b| {
                        variance * (-(a - b).powi(2) / (2.0 * lengthscale * lengthscale)).exp()
                    })
                    .collect()
            })
            .collect()
    };
    json!([
        {"name": "smooth", "mean": vec![0.0; ARMS], "covariance": covariance(0.4, 1.0)},
        {"name": "rough", "mean": vec![1.0; ARMS], "covariance": covariance(0.05, 0.5)},
    ])
}

fn arms_session(algorithm: &str) -> Value {
    let arms: Vec<Value> = (0..ARMS)
        .map(|i| json!({"name": format!("sensor-{i}"), "params": {"x": i as f64 / (ARMS - 1) as f64}}))
        .collect();
    json!({
        "name": "arms",
        "parameters": [{"name": "x", "low": 0, "high": 1}],
        "arms": arms,
        "algorithm": {"name": algorithm, "priors": empirical_priors()},
        "model": {"noise": 0.01},
        "time": {"source": "client"},
        "seed": 7,
    })
}

/// A smooth objective over the arms (a draw-like bump).
fn objective(x: f64) -> f64 {
    (-(x - 0.6).powi(2) / (2.0 * 0.15f64.powi(2))).exp() - 0.3
}

async fn round(server: &TestServer, id: &str, step: usize) -> Value {
    let t = step as f64;
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
        .await;
    assert_eq!(status, 201, "{body}");
    let suggestion = body["suggestions"][0].clone();
    let arm = suggestion["arm"]
        .as_str()
        .expect("arm sessions name the arm");
    assert!(arm.starts_with("sensor-"), "{suggestion}");
    let x = suggestion["params"]["x"].as_f64().unwrap();
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"suggestion_id": suggestion["id"], "value": objective(x), "t": t + 0.5}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    suggestion
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arms_session_with_empirical_priors_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("priors.db");
    for algorithm in ["hp-gp-ts", "pe-gp-ts", "map-gp-ts", "pe-gp-ucb"] {
        let server = TestServer::start_on(path.clone()).await;
        let a = server.create(arms_session(algorithm)).await;
        let b = server.create(arms_session(algorithm)).await;
        let (status, created) = server.get(&format!("/v1/sessions/{a}")).await;
        assert_eq!(status, 200);
        assert_eq!(created["model"]["warmup"], 0, "priors replace the warm-up");
        for step in 0..30 {
            let sa = round(&server, &a, step).await;
            let sb = round(&server, &b, step).await;
            assert_eq!(
                sa["params"], sb["params"],
                "{algorithm}: same seed, same choices"
            );
        }
        let (status, model) = server.get(&format!("/v1/sessions/{a}/model")).await;
        assert_eq!(status, 200, "{model}");
        let selection = &model["prior_selection"];
        assert_eq!(selection["steps"], 30, "{model}");
        assert_eq!(selection["history"].as_array().unwrap().len(), 30);
        let priors = selection["priors"].as_array().unwrap();
        assert_eq!(priors[0]["name"], "smooth");
        let total: f64 = priors
            .iter()
            .map(|p| p["probability"].as_f64().unwrap())
            .sum();
        assert!((total - 1.0).abs() < 1e-9);
        // The smooth prior, whose mean and scale fit the objective, wins the hyperposterior.
        assert!(
            priors[0]["probability"].as_f64().unwrap() > 0.9,
            "{algorithm}: {selection}"
        );
        assert!(selection["history"][29]["prior"].is_u64(), "{selection}");
        let entropy = selection["entropy"].as_f64().unwrap();
        assert!((0.0..=2f64.ln() + 1e-12).contains(&entropy));
        let running = round(&server, &a, 30).await;
        server.stop().await;

        let server = TestServer::start_on(path.clone()).await;
        let restarted = round(&server, &b, 30).await;
        assert_eq!(
            running["params"], restarted["params"],
            "{algorithm}: the restart changed the suggestion"
        );
        for step in 31..35 {
            let sa = round(&server, &a, step).await;
            let sb = round(&server, &b, step).await;
            assert_eq!(sa["params"], sb["params"]);
        }
        let (_, model_a) = server.get(&format!("/v1/sessions/{a}/model")).await;
        let (_, model_b) = server.get(&format!("/v1/sessions/{b}/model")).await;
        assert_eq!(model_a["prior_selection"], model_b["prior_selection"]);
        assert_eq!(model_a["prior_selection"]["steps"], 35);
        // Predictions and the recommendation come from the most probable prior.
        let (status, best) = server.get(&format!("/v1/sessions/{a}/best")).await;
        assert_eq!(status, 200, "{best}");
        assert!(best["arm"].as_str().unwrap().starts_with("sensor-"));
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{a}/predict"),
                &json!({"points": [{"x": 0.5}]}),
            )
            .await;
        assert_eq!(status, 422, "0.5 is not an arm: {body}");
        assert_eq!(body["field"], "points[0]");
        server.stop().await;
    }
}

/// `gp-ucb` and `tv-gp-ucb` with one empirical prior (003's sensor experiments use an
/// empirical covariance as the kernel): suggestions are arms, tv-gp-ucb learns ε, the
/// model answers at the arms, and a restart keeps the next suggestion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_prior_ucb_sessions_work_on_arms() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("single.db");
    for algorithm in ["gp-ucb", "tv-gp-ucb"] {
        let server = TestServer::start_on(path.clone()).await;
        let mut body = arms_session(algorithm);
        body["algorithm"]["priors"] = json!([empirical_priors()[0].clone()]);
        let a = server.create(body.clone()).await;
        let b = server.create(body).await;
        for step in 0..15 {
            let sa = round(&server, &a, step).await;
            let sb = round(&server, &b, step).await;
            assert_eq!(sa["params"], sb["params"], "{algorithm}");
        }
        let (status, model) = server.get(&format!("/v1/sessions/{a}/model")).await;
        assert_eq!(status, 200, "{model}");
        if algorithm == "tv-gp-ucb" {
            let epsilon = model["hyperparameters"]["epsilon"]
                .as_f64()
                .expect("ε is learned");
            assert!(epsilon > 0.0 && epsilon < 1.0, "{model}");
        } else {
            assert!(
                model["prior_selection"]["priors"][0]["probability"] == 1.0,
                "{model}"
            );
        }
        let (status, body) = server
            .post(
                &format!("/v1/sessions/{a}/predict"),
                &json!({"points": [{"x": 0.0}, {"x": 1.0}], "t": 15.0}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        for p in body["predictions"].as_array().unwrap() {
            assert!(p["mean"].as_f64().unwrap().is_finite() && p["std"].as_f64().unwrap() >= 0.0);
        }
        let (status, best) = server.get(&format!("/v1/sessions/{a}/best?t=15")).await;
        assert_eq!(status, 200, "{best}");
        let running = round(&server, &a, 15).await;
        server.stop().await;
        let server = TestServer::start_on(path.clone()).await;
        let restarted = round(&server, &b, 15).await;
        assert_eq!(running["params"], restarted["params"], "{algorithm}");
        server.stop().await;
    }
}
