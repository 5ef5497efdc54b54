//! What the model learned matters, through the server with keys on and the default
//! limits: a session over five settings of which two matter (the value is a function of
//! `a` and `b` alone) reports, in `GET …/model`, a lengthscale per setting under
//! `model.lengthscales: per_parameter`, each of the three that do not matter at least
//! three times the longer of the two that do; under the default, `shared`, it reports
//! none.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

backend_tests!(
    settings = tvbo::api::RouterSettings::default();
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    the_model_view_reports_which_settings_matter,
);

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// A session of the five settings (with `model`), 40 observations of
/// sin(6a) + 4(b − 0.4)² at quasi-random settings, one suggest (which fits the model),
/// and the `hyperparameters` of `GET …/model`.
async fn fitted(server: &TestServer, model: Value) -> Value {
    let parameters: Vec<Value> = NAMES
        .iter()
        .map(|name| json!({"name": name, "low": 0, "high": 1}))
        .collect();
    let id = server
        .create(json!({
            "parameters": parameters,
            "time": {"source": "client"},
            "model": model,
            "seed": 7,
        }))
        .await;
    // Additive recurrences of the first five primes' square roots: spread-out settings.
    let roots = [2f64, 3.0, 5.0, 7.0, 11.0].map(f64::sqrt);
    let observations: Vec<Value> = (0..40)
        .map(|i| {
            let x: Vec<f64> = roots.iter().map(|r| (0.5 + i as f64 * r).fract()).collect();
            let params: serde_json::Map<String, Value> = NAMES
                .iter()
                .zip(&x)
                .map(|(n, v)| (n.to_string(), json!(v)))
                .collect();
            let value = (6.0 * x[0]).sin() + 4.0 * (x[1] - 0.4).powi(2);
            json!({"params": params, "value": value, "t": i as f64})
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
            &json!({"t": 40.0}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, view) = server.get(&format!("/v1/sessions/{id}/model")).await;
    assert_eq!(status, 200, "{view}");
    view["hyperparameters"].clone()
}

async fn the_model_view_reports_which_settings_matter(server: TestServer) {
    let server = server.with_key("importance").await;
    let hyper = fitted(&server, json!({"lengthscales": "per_parameter"})).await;
    let lengthscales = &hyper["lengthscales"];
    let l = |name: &str| {
        lengthscales[name]
            .as_f64()
            .unwrap_or_else(|| panic!("no lengthscale of {name}: {hyper}"))
    };
    let matter = l("a").max(l("b"));
    for name in ["c", "d", "e"] {
        assert!(l(name) >= 3.0 * matter, "{name}: {hyper}");
    }
    // l_S is their geometric mean.
    let mean = NAMES.iter().map(|n| l(n).ln()).sum::<f64>() / 5.0;
    let shared = hyper["spatial_lengthscale"].as_f64().unwrap();
    assert!((mean.exp() - shared).abs() < 1e-9 * shared, "{hyper}");

    let hyper = fitted(&server, json!({})).await;
    assert!(hyper.get("lengthscales").is_none(), "{hyper}");
    assert!(hyper["spatial_lengthscale"].as_f64().unwrap() > 0.0);
}
