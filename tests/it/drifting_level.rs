//! The drifting level through the server, with keys on and the default limits: a BOLT
//! session whose objective's level steps up while its shape stays, under `model.level:
//! drifting`, reports in `GET …/model` a level that holds the step and a shape that keeps
//! a longer memory than the papers' kernel (the default, which reports no level); an
//! algorithm whose kernel ignores time refuses the setting, naming it, and stores nothing.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    the_model_view_reports_a_level_that_holds_the_step,
    a_kernel_without_time_refuses_a_drifting_level,
);

/// A BOLT session of two settings (with `model`), 80 observations 5 s apart of
/// sin(6a) + b, plus 3 from t = 200 s on, one suggest (which fits the model), and the
/// `hyperparameters` of `GET …/model`.
async fn fitted(server: &TestServer, model: Value) -> Value {
    let id = server
        .create(json!({
            "parameters": [{"name": "a", "low": 0, "high": 1}, {"name": "b", "low": 0, "high": 1}],
            "time": {"source": "client"},
            "model": model,
            "seed": 3,
        }))
        .await;
    let observations: Vec<Value> = (0..80)
        .map(|i| {
            let (a, b) = (
                (0.5 + i as f64 * 2f64.sqrt()).fract(),
                (0.5 + i as f64 * 3f64.sqrt()).fract(),
            );
            let t = i as f64 * 5.0;
            let level = if t >= 200.0 { 3.0 } else { 0.0 };
            json!({"params": {"a": a, "b": b}, "value": (6.0 * a).sin() + b + level, "t": t})
        })
        .collect();
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/observations"),
            &json!({"observations": observations}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/suggestions"),
            &json!({"t": 400.0}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, view) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert_eq!(status, 200, "{view}");
    view["hyperparameters"].clone()
}

async fn the_model_view_reports_a_level_that_holds_the_step(server: TestServer) {
    let server = server.with_key("level").await;
    let drifting = fitted(&server, json!({"level": "drifting"})).await;
    let variance = drifting["level_variance"]
        .as_f64()
        .expect("a level variance");
    let lengthscale = drifting["level_lengthscale"]
        .as_f64()
        .expect("a level lengthscale");
    assert!(variance > 0.1, "{drifting}");
    assert!(
        lengthscale < 400.0,
        "the step is within the 400 s: {drifting}"
    );
    let plain = fitted(&server, json!({})).await;
    assert!(plain.get("level_variance").is_none(), "{plain}");
    let memory = |h: &Value| h["temporal_lengthscale"].as_f64().unwrap();
    assert!(
        memory(&drifting) > memory(&plain),
        "{drifting} against {plain}"
    );
}

async fn a_kernel_without_time_refuses_a_drifting_level(server: TestServer) {
    let server = server.with_key("level").await;
    let (status, body) = server
        .post(
            "/v1/sessions",
            &json!({
                "parameters": [{"name": "a", "low": 0, "high": 1}],
                "algorithm": {"name": "gp-ucb"},
                "model": {"level": "drifting"},
            }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["field"], "model.level", "{body}");
    let (status, listing) = server.get("/v1/sessions").await;
    assert_eq!(status, 200, "{listing}");
    assert_eq!(
        listing["sessions"].as_array().map(Vec::len),
        Some(0),
        "{listing}"
    );
    let (status, body) = server
        .post(
            "/v1/sessions",
            &json!({"parameters": [{"name": "a", "low": 0, "high": 1}], "model": {"level": "sideways"}}),
        )
        .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    assert!(body.to_string().contains("level"), "{body}");
}
