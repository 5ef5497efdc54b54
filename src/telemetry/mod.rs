//! Prometheus metrics (docs/operations.md, "Metrics"): what is measured, the process's
//! recorder, and the `/metrics` answer.
//!
//! Recording goes through the `metrics` crate's process-global recorder, which
//! [`install`] sets once (a `metrics-exporter-prometheus` recorder, with a thread that
//! keeps its histograms drained); before that, recording costs nothing and keeps nothing.
//! Every label takes a bounded set of values: no session ids, no raw paths.
//!
//! - [`http`]: requests and latency by method and route template, and the log line of
//!   each request;
//! - [`request_id`]: the id a request carries through the logs;
//! - [`model_work`]: the `tracing` layer that times the stages of model work, which the
//!   policies and the engine mark with spans ([`crate::policy::Stage`]) without reading a
//!   clock;
//! - [`store`]: [`MeteredStore`], the store decorator that times every operation;
//! - here: the step figures ([`record_steps`]) and events ([`record_events`]), the fair scheduler's queue
//!   (`model_work_*`) and the scrape ([`scrape`], [`serve`]), which reads the connection
//!   pool's gauges.

pub mod http;
pub mod model_work;
pub mod request_id;
pub mod store;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use crate::domain::events::NewEvent;
use crate::domain::records::CallRecord;
use crate::store::Store;

pub use model_work::model_work_layer;
pub use store::MeteredStore;

/// Counter: HTTP requests answered, by `method`, `route` and `status`.
pub const HTTP_REQUESTS: &str = "tvbo_http_requests_total";
/// Histogram: seconds from a request's arrival to its answer's head, by `method`, `route`.
pub const HTTP_DURATION: &str = "tvbo_http_request_duration_seconds";
/// Histogram: seconds of model work by `stage` (`fit`, `acquisition`, `forgetting`,
/// `optimum`), each span's time minus that of the stages nested in it.
pub const MODEL_WORK_SECONDS: &str = "tvbo_model_work_seconds";
/// Gauge: model-work jobs waiting for their turn of the fair scheduler.
pub const MODEL_WORK_QUEUE_DEPTH: &str = "tvbo_model_work_queue_depth";
/// Gauge: model-work jobs running.
pub const MODEL_WORK_RUNNING: &str = "tvbo_model_work_running";
/// Histogram: seconds a model-work job waited for its turn before it started.
pub const MODEL_WORK_WAIT: &str = "tvbo_model_work_wait_seconds";
/// Histogram: active observations after each committed step, by `algorithm` and `kind`.
pub const STEP_DATASET_SIZE: &str = "tvbo_step_dataset_size";
/// Histogram: BOLT's n* after each committed step, by `algorithm` and `kind`.
pub const STEP_N_STAR: &str = "tvbo_step_bolt_n_star";
/// Histogram: pending suggestions when each committed step began, by `algorithm`, `kind`.
pub const STEP_PENDING: &str = "tvbo_step_pending_suggestions";
/// Counter: events committed with their steps (docs/events.md), by `kind`.
pub const EVENTS: &str = "tvbo_events_total";
/// Counter: webhook delivery attempts by `outcome` (`delivered`, `retry`, `failed`).
pub const WEBHOOK_ATTEMPTS: &str = "tvbo_webhook_attempts_total";
/// Counter: webhooks the circuit breaker paused.
pub const WEBHOOKS_PAUSED: &str = "tvbo_webhooks_paused_total";
/// Histogram: seconds of each store operation, by `operation` (the `Store` method).
pub const STORE_SECONDS: &str = "tvbo_store_operation_seconds";
/// Gauge: the connection pool's open connections by `state` (`in_use`, `idle`).
pub const POOL_CONNECTIONS: &str = "tvbo_store_pool_connections";
/// Gauge: the most connections the pool opens.
pub const POOL_MAX: &str = "tvbo_store_pool_max_connections";
/// Gauge: event streams open on this replica (`GET /v1/events`).
pub const EVENT_STREAMS: &str = "tvbo_event_streams_open";
/// Counter: committed changes by where the snapshot they were planned from came from
/// (`outcome`: `hit`, the snapshot this replica kept after the session's last change;
/// `stale`, a kept snapshot that another replica's change had outdated, read again;
/// `absent`, none kept, read from the store). Routing a session's calls to one replica
/// makes them hits.
pub const SNAPSHOT_LOOKUPS: &str = "tvbo_session_snapshots_total";
/// Gauge: rows (session, active observations, pending suggestions, response-time
/// summaries) of the snapshots kept, summed over the process's services.
pub const SNAPSHOT_ROWS: &str = "tvbo_session_snapshot_rows";
/// Counter: read-model lookups (predict, best, regret, model) by `outcome`: `hit`, the
/// cached model was built from the session's current version; `stale`, from an older
/// one; `absent`, none cached. The last two rebuild the model.
pub const MODEL_CACHE_LOOKUPS: &str = "tvbo_model_cache_lookups_total";
/// Gauge: bytes of the cached read models, as the cache counts them against its cap,
/// summed over the process's services.
pub const MODEL_CACHE_BYTES: &str = "tvbo_model_cache_bytes";

/// Bucket bounds of every `_seconds` histogram: 0.5 ms to 2 minutes (the request timeout).
const SECONDS_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
];
/// Bucket bounds of the step histograms (counts of observations or suggestions).
const COUNT_BUCKETS: [f64; 16] = [
    0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10_000.0,
    20_000.0, 50_000.0,
];
/// How often the histograms' recent samples are folded into their buckets when nobody
/// scrapes (a scrape folds them too), so that they never grow without bound.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The Prometheus content type of [`scrape`]'s answer.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Installs the process-global recorder once (later calls return the same handle), so
/// that every router of a process shares it. If another `metrics` recorder was installed
/// first (tvbo embedded in a program with its own), that one keeps recording and the
/// handle renders only tvbo's descriptions; a warning says so.
pub fn install() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Prefix("tvbo_step_".into()), &COUNT_BUCKETS)
            })
            .expect("the bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed: /metrics stays empty");
        }
        describe();
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("tvbo-metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(UPKEEP_INTERVAL);
                    upkeep.run_upkeep();
                }
            })
            .expect("spawning the metrics upkeep thread");
        handle
    })
}

/// The HELP text of every metric, and the gauges that exist before their first change.
fn describe() {
    describe_counter!(HTTP_REQUESTS, "HTTP requests answered");
    describe_histogram!(
        HTTP_DURATION,
        "Seconds from a request's arrival to its answer"
    );
    describe_histogram!(
        MODEL_WORK_SECONDS,
        "Seconds of model work by stage, nested stages excluded"
    );
    describe_gauge!(MODEL_WORK_QUEUE_DEPTH, "Model-work jobs waiting for a core");
    describe_gauge!(MODEL_WORK_RUNNING, "Model-work jobs running");
    describe_histogram!(MODEL_WORK_WAIT, "Seconds a model-work job waited to start");
    describe_histogram!(STEP_DATASET_SIZE, "Active observations after a step");
    describe_histogram!(
        STEP_N_STAR,
        "BOLT's recommended dataset size n* after a step"
    );
    describe_histogram!(STEP_PENDING, "Pending suggestions when a step began");
    describe_counter!(EVENTS, "Events committed with their steps");
    describe_counter!(WEBHOOK_ATTEMPTS, "Webhook delivery attempts by outcome");
    describe_counter!(WEBHOOKS_PAUSED, "Webhooks paused by the circuit breaker");
    describe_histogram!(STORE_SECONDS, "Seconds of a store operation");
    describe_gauge!(POOL_CONNECTIONS, "Open database connections by state");
    describe_gauge!(POOL_MAX, "Most database connections the pool opens");
    describe_gauge!(EVENT_STREAMS, "Event streams open on this replica");
    describe_counter!(
        SNAPSHOT_LOOKUPS,
        "Committed changes by where their snapshot came from"
    );
    describe_gauge!(SNAPSHOT_ROWS, "Rows of the session snapshots kept");
    describe_counter!(MODEL_CACHE_LOOKUPS, "Read-model cache lookups by outcome");
    describe_gauge!(MODEL_CACHE_BYTES, "Bytes of the cached read models");
    gauge!(MODEL_WORK_QUEUE_DEPTH).increment(0.0);
    gauge!(MODEL_WORK_RUNNING).increment(0.0);
}

/// The `/metrics` answer: the pool gauges of `store` read now, then every metric of the
/// process in the Prometheus text format.
pub fn scrape(store: &dyn Store) -> Response {
    let handle = install();
    let pool = store.pool_usage();
    gauge!(POOL_CONNECTIONS, "state" => "in_use").set(pool.in_use());
    gauge!(POOL_CONNECTIONS, "state" => "idle").set(pool.idle);
    gauge!(POOL_MAX).set(pool.max);
    ([(CONTENT_TYPE, TEXT_FORMAT)], handle.render()).into_response()
}

/// Serves `/metrics` alone on `listener` (`TVBO_METRICS_BIND`: metrics on an address of
/// their own, off the main router) until `shutdown` completes. It answers without an API
/// key; expose the address to the scraper only.
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn Store>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    install();
    let router = Router::new().route("/metrics", get(move || async move { scrape(&*store) }));
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Records the figures of committed steps: the dataset size and BOLT's n* from each
/// call's snapshot, and the `pending` suggestions the step began with, labelled by the
/// session's `algorithm` and the call's kind.
pub fn record_steps(algorithm: &'static str, pending: usize, calls: &[CallRecord]) {
    for call in calls {
        let labels = [("algorithm", algorithm), ("kind", call.kind)];
        histogram!(STEP_PENDING, &labels).record(pending as f64);
        if let Some(snapshot) = &call.snapshot {
            histogram!(STEP_DATASET_SIZE, &labels).record(snapshot.dataset_size as f64);
            if let Some(n_star) = snapshot.max_dataset_size {
                histogram!(STEP_N_STAR, &labels).record(n_star as f64);
            }
        }
    }
}

/// Counts the events of a committed change by kind.
pub fn record_events(events: &[NewEvent]) {
    for event in events {
        counter!(EVENTS, "kind" => event.kind.as_str()).increment(1);
    }
}

/// Counts a webhook delivery attempt by how it ended.
pub fn record_delivery(outcome: &crate::store::outbox::AttemptOutcome) {
    use crate::store::outbox::AttemptOutcome;
    let outcome = match outcome {
        AttemptOutcome::Delivered { .. } => "delivered",
        AttemptOutcome::Retry { .. } => "retry",
        AttemptOutcome::Failed { .. } => "failed",
    };
    counter!(WEBHOOK_ATTEMPTS, "outcome" => outcome).increment(1);
}

/// The number of event streams open on this replica now.
pub fn set_open_streams(open: usize) {
    gauge!(EVENT_STREAMS).set(open as f64);
}

/// Where a lookup in a replica's cache found what it looked for: the entry of the
/// session's current version (`Hit`), an older one (`Stale`), or none (`Absent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Stale,
    Absent,
}

impl CacheOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Stale => "stale",
            CacheOutcome::Absent => "absent",
        }
    }
}

/// Counts a committed change by where its snapshot came from ([`SNAPSHOT_LOOKUPS`]).
pub fn record_snapshot_lookup(outcome: CacheOutcome) {
    counter!(SNAPSHOT_LOOKUPS, "outcome" => outcome.as_str()).increment(1);
}

/// Moves the kept snapshots' rows by `delta` (each cache reports its own changes, so that
/// every service of a process adds to the gauge).
pub fn snapshot_rows_changed(delta: f64) {
    gauge!(SNAPSHOT_ROWS).increment(delta);
}

/// Counts a read-model lookup by outcome ([`MODEL_CACHE_LOOKUPS`]).
pub fn record_model_cache_lookup(outcome: CacheOutcome) {
    counter!(MODEL_CACHE_LOOKUPS, "outcome" => outcome.as_str()).increment(1);
}

/// Moves the cached read models' bytes by `delta` (see [`snapshot_rows_changed`]).
pub fn model_cache_bytes_changed(delta: f64) {
    gauge!(MODEL_CACHE_BYTES).increment(delta);
}

/// Counts a webhook the circuit breaker paused.
pub fn record_webhook_paused() {
    counter!(WEBHOOKS_PAUSED).increment(1);
}

/// A model-work job joined the fair scheduler's queue. The scheduler's gauges move by
/// steps, so that every scheduler of a process adds to them.
pub fn model_work_queued() {
    gauge!(MODEL_WORK_QUEUE_DEPTH).increment(1.0);
}

/// A job left the queue: it starts, or its request went away.
pub fn model_work_dequeued() {
    gauge!(MODEL_WORK_QUEUE_DEPTH).decrement(1.0);
}

/// A job was given a core.
pub fn model_work_started() {
    gauge!(MODEL_WORK_RUNNING).increment(1.0);
}

/// A running job gave its core back.
pub fn model_work_ended() {
    gauge!(MODEL_WORK_RUNNING).decrement(1.0);
}

/// A job's request took its turn after waiting `waited` for it (zero when a core was
/// free).
pub fn model_work_waited(waited: Duration) {
    histogram!(MODEL_WORK_WAIT).record(waited);
}
