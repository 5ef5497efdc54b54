//! Prometheus metrics (docs/operations.md, "Metrics"): traffic through a live server
//! shows in `/metrics`, parsed with a real parser; and with a listener of their own, the
//! metrics leave the main router.
//!
//! The recorder is process-global, so these tests run alone ([`crate::ALONE`]) and
//! compare scrapes before and after their own traffic.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::TestServer;
use prom_text_format_parser::{Metric, Sample, Scrape, Type, ValueType};
use serde_json::json;
use tvbo::store::{PoolSettings, SqliteStore, Store};

/// Suggest/observe rounds of the traffic test; the first `WARMUP` suggestions are random.
const ROUNDS: usize = 8;
const WARMUP: usize = 3;

const SUGGEST_ROUTE: &str = "/v1/sessions/{id}/suggestions";

/// The metric families and their types.
const FAMILIES: [(&str, Type); 13] = [
    ("tvbo_http_requests_total", Type::Counter),
    ("tvbo_events_total", Type::Counter),
    ("tvbo_http_request_duration_seconds", Type::Histogram),
    ("tvbo_model_work_seconds", Type::Histogram),
    ("tvbo_model_work_queue_depth", Type::Gauge),
    ("tvbo_model_work_running", Type::Gauge),
    ("tvbo_model_work_wait_seconds", Type::Histogram),
    ("tvbo_step_dataset_size", Type::Histogram),
    ("tvbo_step_bolt_n_star", Type::Histogram),
    ("tvbo_step_pending_suggestions", Type::Histogram),
    ("tvbo_store_operation_seconds", Type::Histogram),
    ("tvbo_store_pool_connections", Type::Gauge),
    ("tvbo_store_pool_max_connections", Type::Gauge),
];

/// Puts the metrics' timer of model work into the process's subscriber (once; model work
/// runs on the blocking pool, which only a global subscriber reaches).
fn time_model_work() {
    use tracing_subscriber::layer::SubscriberExt;
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(tvbo::telemetry::model_work_layer());
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
    });
}

/// GETs `url` and parses it as Prometheus text (checking the content type); the families
/// by name.
pub(crate) async fn scrape(client: &reqwest::Client, url: &str) -> BTreeMap<String, Metric> {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200, "GET {url}");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = response.text().await.unwrap();
    let scrape = Scrape::parse(&text).unwrap_or_else(|e| panic!("{e:?} in:\n{text}"));
    let mut families = BTreeMap::new();
    for metric in scrape.metrics {
        let name = metric.name.clone();
        assert!(
            families.insert(name.clone(), metric).is_none(),
            "{name} twice"
        );
    }
    families
}

fn label<'a>(sample: &'a Sample, key: &str) -> Option<&'a str> {
    sample
        .labels
        .iter()
        .find(|l| l.key == key)
        .map(|l| l.value.as_str())
}

/// The sum of `metric`'s samples of type `of` whose labels include every pair of
/// `labels` (0 when there are none).
fn sum_of(
    scrape: &BTreeMap<String, Metric>,
    metric: &str,
    of: ValueType,
    labels: &[(&str, &str)],
) -> f64 {
    scrape.get(metric).map_or(0.0, |m| {
        m.samples
            .iter()
            .filter(|s| s.value.value_type == of)
            .filter(|s| labels.iter().all(|(k, v)| label(s, k) == Some(*v)))
            .map(|s| s.value.value.as_f64())
            .sum()
    })
}

/// A counter's or gauge's value, summed over the matching label sets.
fn value(scrape: &BTreeMap<String, Metric>, metric: &str, labels: &[(&str, &str)]) -> f64 {
    sum_of(scrape, metric, ValueType::Sample, labels)
}

/// A histogram's number of observations, summed over the matching label sets.
fn observations(scrape: &BTreeMap<String, Metric>, metric: &str, labels: &[(&str, &str)]) -> f64 {
    sum_of(scrape, metric, ValueType::Count, labels)
}

/// Requests answered on the API's routes (under `/v1`), whatever their method and status.
pub(crate) fn v1_requests(scrape: &BTreeMap<String, Metric>) -> f64 {
    scrape.get("tvbo_http_requests_total").map_or(0.0, |m| {
        m.samples
            .iter()
            .filter(|s| label(s, "route").is_some_and(|r| r.starts_with("/v1/")))
            .map(|s| s.value.value.as_f64())
            .sum()
    })
}

/// Whether `text` holds a UUID (hyphenated or simple).
fn holds_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    [36, 32].into_iter().any(|width| {
        bytes.len() >= width
            && (0..=bytes.len() - width).any(|i| {
                text.get(i..i + width)
                    .is_some_and(|window| uuid::Uuid::try_parse(window).is_ok())
            })
    })
}

/// One label set of a histogram: its buckets (`le`, count) in order, and its count.
#[derive(Default)]
struct Series {
    buckets: Vec<(f64, f64)>,
    count: Option<f64>,
}

/// Every family is present with its type; every histogram's buckets are cumulative up to
/// +Inf, which equals its count; no label value holds a UUID.
fn check_shape(scrape: &BTreeMap<String, Metric>) {
    for (family, expected) in FAMILIES {
        let metric = scrape
            .get(family)
            .unwrap_or_else(|| panic!("{family} missing from /metrics"));
        assert_eq!(metric.kind, expected, "{family}");
        assert!(!metric.samples.is_empty(), "{family} has no samples");
    }
    for metric in scrape.values() {
        for sample in &metric.samples {
            for l in sample.labels.iter() {
                assert!(
                    !holds_uuid(&l.value),
                    "{} has a label {}={} holding a UUID",
                    metric.name,
                    l.key,
                    l.value
                );
            }
        }
        if metric.kind != Type::Histogram {
            continue;
        }
        // Per label set (without `le`).
        let mut series: BTreeMap<String, Series> = BTreeMap::new();
        for sample in &metric.samples {
            let key: Vec<String> = sample
                .labels
                .iter()
                .filter(|l| l.key != "le")
                .map(|l| format!("{}={}", l.key, l.value))
                .collect();
            let entry = series.entry(key.join(",")).or_default();
            let value = sample.value.value.as_f64();
            match sample.value.value_type {
                ValueType::Sample => {
                    let le = label(sample, "le").expect("a bucket has `le`");
                    entry.buckets.push((le.parse().unwrap(), value));
                }
                ValueType::Count => entry.count = Some(value),
                ValueType::Sum => {}
            }
        }
        for (labels, Series { buckets, count }) in series {
            let name = &metric.name;
            assert!(
                buckets
                    .windows(2)
                    .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
                "{name}{{{labels}}}: buckets not cumulative: {buckets:?}"
            );
            let last = buckets.last().copied();
            assert_eq!(last.map(|b| b.0), Some(f64::INFINITY), "{name}{{{labels}}}");
            assert_eq!(
                last.map(|b| b.1),
                count,
                "{name}{{{labels}}}: +Inf != count"
            );
        }
    }
}

/// Sessions, suggests and observes, a 404 with a UUID in its path: every family shows,
/// the suggest route's counter moves by the calls made, model work is split by stage.
async fn traffic_shows_in_metrics(server: TestServer) {
    time_model_work();
    let before = scrape(&server.client, &server.url("/metrics")).await;
    let suggest_201 = [
        ("method", "POST"),
        ("route", SUGGEST_ROUTE),
        ("status", "201"),
    ];

    let mut body = common::client_session("bolt", 11);
    body["model"]["warmup"] = json!(WARMUP);
    let id = server.create(body).await;
    for round in 0..ROUNDS {
        let t = round as f64;
        let (status, answer) = server
            .post(&format!("/v1/sessions/{id}/suggestions"), &json!({"t": t}))
            .await;
        assert_eq!(status, 201, "{answer}");
        let suggestion = &answer["suggestions"][0];
        let (x, y) = (
            suggestion["params"]["x"].as_f64().unwrap(),
            suggestion["params"]["y"].as_f64().unwrap(),
        );
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{id}/observations"),
                &json!({"suggestion_id": suggestion["id"], "value": x - y * y, "t": t}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let (status, _) = server.get(&format!("/no/such/{id}")).await;
    assert_eq!(status, 404);
    // An R-GP-UCB session that resets twice: two events.
    let mut body = common::client_session("r-gp-ucb", 12);
    body["algorithm"] = json!({"name": "r-gp-ucb", "reset_every": 2});
    let resetting = server.create(body).await;
    for step in 0..4 {
        let t = f64::from(step);
        let (status, answer) = server
            .post(
                &format!("/v1/sessions/{resetting}/observations"),
                &json!({"params": {"x": 0.2 * t, "y": 0.5}, "value": t, "t": t}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }

    let after = scrape(&server.client, &server.url("/metrics")).await;
    check_shape(&after);
    let moved = |metric: &str, labels: &[(&str, &str)]| {
        observations(&after, metric, labels) - observations(&before, metric, labels)
    };
    assert_eq!(
        value(&after, "tvbo_http_requests_total", &suggest_201)
            - value(&before, "tvbo_http_requests_total", &suggest_201),
        ROUNDS as f64,
        "suggest requests counted"
    );
    let suggest_route = [("method", "POST"), ("route", SUGGEST_ROUTE)];
    assert_eq!(
        moved("tvbo_http_request_duration_seconds", &suggest_route),
        ROUNDS as f64
    );
    let unmatched = [("route", "unmatched"), ("status", "404")];
    assert!(value(&after, "tvbo_http_requests_total", &unmatched) >= 1.0);

    for stage in ["fit", "acquisition", "forgetting", "optimum"] {
        let fitted = moved("tvbo_model_work_seconds", &[("stage", stage)]);
        assert!(fitted > 0.0, "no {stage} timed");
    }
    // Every suggest and observe took a turn of the scheduler, and the session's creation.
    assert!(moved("tvbo_model_work_wait_seconds", &[]) >= (2 * ROUNDS + 1) as f64);

    for kind in ["suggest", "observe"] {
        let labels = [("algorithm", "bolt"), ("kind", kind)];
        assert_eq!(moved("tvbo_step_dataset_size", &labels), ROUNDS as f64);
        assert_eq!(
            moved("tvbo_step_pending_suggestions", &labels),
            ROUNDS as f64
        );
    }
    assert!(moved("tvbo_step_bolt_n_star", &[("kind", "observe")]) > 0.0);
    let resets = [("kind", "model-reset")];
    assert_eq!(
        value(&after, "tvbo_events_total", &resets) - value(&before, "tvbo_events_total", &resets),
        2.0
    );

    // A replica that shares its database reads a session's version before planning from
    // the snapshot it kept while it may miss another replica's change (PostgreSQL before
    // its listener is up), and not once it hears every writer's changes (PostgreSQL's
    // notices) or owns the database (SQLite): at least one of the two holds.
    if server.store().shared() {
        let read = moved(
            "tvbo_store_operation_seconds",
            &[("operation", "session_version")],
        );
        let heard = server.store().change_feed().hears_every_writer();
        assert!(
            read > 0.0 || heard,
            "a kept snapshot used unchecked and unheard"
        );
    }
    for operation in ["create_session", "load_history", "commit"] {
        let timed = moved("tvbo_store_operation_seconds", &[("operation", operation)]);
        assert!(timed > 0.0, "store operation {operation} not timed");
    }
    assert!(
        moved("tvbo_store_operation_seconds", &[("operation", "commit")]) >= (2 * ROUNDS) as f64
    );

    let max = value(&after, "tvbo_store_pool_max_connections", &[]);
    assert_eq!(max, f64::from(PoolSettings::default().max_connections));
    let in_use = value(
        &after,
        "tvbo_store_pool_connections",
        &[("state", "in_use")],
    );
    let idle = value(&after, "tvbo_store_pool_connections", &[("state", "idle")]);
    assert!(
        in_use >= 0.0 && idle >= 0.0 && in_use + idle <= max,
        "{in_use} {idle}"
    );
    assert!(in_use + idle >= 1.0, "the pool has a connection open");
    // Nothing waits or runs between requests.
    assert_eq!(value(&after, "tvbo_model_work_queue_depth", &[]), 0.0);
    assert_eq!(value(&after, "tvbo_model_work_running", &[]), 0.0);
    server.stop().await;
}

// Each test takes its turn before its server starts: a server starting (a database
// created, migrated) is load that the fairness test must not see.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_shows_in_metrics_on_sqlite() {
    let _alone = crate::ALONE.lock().await;
    traffic_shows_in_metrics(TestServer::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_shows_in_metrics_on_postgres() {
    let _alone = crate::ALONE.lock().await;
    if let Some(server) = TestServer::start_postgres("traffic_shows_in_metrics").await {
        traffic_shows_in_metrics(server).await;
    }
}

/// With the metrics on a listener of their own (`TVBO_METRICS_BIND`), the main router
/// answers 404 for `/metrics`, and that listener serves what the main router measures.
#[tokio::test]
async fn a_metrics_listener_takes_metrics_off_the_main_router() {
    let _alone = crate::ALONE.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tvbo.db").display());
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .unwrap(),
    );
    let settings = tvbo::api::RouterSettings {
        serve_metrics: false,
        ..Default::default()
    };
    let app = tvbo::api::router(store.clone(), settings);
    let main = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let main_url = format!("http://{}", main.local_addr().unwrap());
    let main_server = tokio::spawn(async move { axum::serve(main, app).await });
    let metrics = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics_url = format!("http://{}/metrics", metrics.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let metrics_server = tokio::spawn(tvbo::telemetry::serve(metrics, store.clone(), async {
        let _ = stopped.await;
    }));

    let client = reqwest::Client::new();
    let healthz = [("route", "/healthz"), ("status", "200")];
    let before = scrape(&client, &metrics_url).await;
    let response = client
        .get(format!("{main_url}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = client
        .get(format!("{main_url}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let after = scrape(&client, &metrics_url).await;
    assert_eq!(
        value(&after, "tvbo_http_requests_total", &healthz)
            - value(&before, "tvbo_http_requests_total", &healthz),
        1.0
    );
    assert_eq!(
        value(
            &after,
            "tvbo_http_requests_total",
            &[("route", "unmatched")]
        ) - value(
            &before,
            "tvbo_http_requests_total",
            &[("route", "unmatched")]
        ),
        1.0,
        "/metrics is an unknown path of the main router"
    );
    assert_eq!(
        value(&after, "tvbo_store_pool_max_connections", &[]),
        f64::from(PoolSettings::default().max_connections)
    );

    stop.send(()).unwrap();
    metrics_server.await.unwrap().unwrap();
    main_server.abort();
    store.close().await;
}
