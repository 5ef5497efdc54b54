//! The benchmark harness and the server run one engine: for the same session request,
//! seed, times and values, `tvbo bench`'s in-process driver (`bench::runner::InProcess`,
//! over `engine::LocalSession`) and a live server hand out the same suggestions, bit for
//! bit, and keep the same active dataset, for algorithms that forget (BOLT, W-DBO, a
//! resetting one) and one that does not.

use crate::common;

use common::{TestServer, client_session};
use serde_json::{Value, json};
use tvbo::domain::config::CreateSession;
use tvbo::engine::new_session_config;
use tvbo_bench::runner::{Driver, InProcess};

backend_tests!(
    #[tokio::test]
    bench_and_server_suggest_the_same,
);

/// A drifting test objective on the unit square.
fn objective(x: f64, y: f64, t: f64) -> f64 {
    -((x - 0.3 - 0.02 * t).powi(2) + (y - 0.6).powi(2)) + 0.1 * (7.0 * x).sin()
}

async fn bench_and_server_suggest_the_same(server: TestServer) {
    for algorithm in ["bolt", "w-dbo", "r-gp-ucb", "gp-ucb"] {
        let mut request = client_session(algorithm, 11);
        request["model"] = json!({"warmup": 3});
        let create: CreateSession = serde_json::from_value(request.clone()).unwrap();
        let mut bench = InProcess::new(new_session_config(create, 11).unwrap()).unwrap();
        let id = server.create(request).await;
        for step in 0..14 {
            let t = 1.5 * f64::from(step);
            let handed = bench.suggest(t).unwrap();
            let (status, answer) = server
                .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
                .await;
            assert_eq!(status, 201, "{answer}");
            let suggestion = &answer["suggestions"][0];
            let served = [&suggestion["params"]["x"], &suggestion["params"]["y"]]
                .map(|v: &Value| v.as_f64().unwrap());
            assert_eq!(
                handed.x.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                served.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{algorithm}, step {step}: bench {:?}, server {served:?}",
                handed.x
            );
            let value = objective(served[0], served[1], t);
            let measured = t + 0.5;
            bench.observe(&handed, measured, value, 0.0).unwrap();
            let (status, answer) = server
                .post(
                    &format!("/v1/sessions/{id}/observations"),
                    &json!({"suggestion_id": suggestion["id"], "value": value, "t": measured}),
                )
                .await;
            assert_eq!(status, 201, "{answer}");
            let (_, model) = server.get(&format!("/v1/sessions/{id}/model")).await;
            assert_eq!(
                model["dataset_size"].as_u64().unwrap() as usize,
                bench.dataset_size().unwrap(),
                "{algorithm}, step {step}: active datasets differ"
            );
        }
    }
}
