//! Load generator: `--sessions` concurrent sessions, each a loop of suggest → observe,
//! reporting calls per second and latency percentiles (docs/scaling.md has measurements).
//!
//! It drives running servers (`--target URL`, repeatable: calls go round-robin over them, as
//! a load balancer would send them), or starts `--replicas` servers in this process over
//! `--database-url`, each with its own connection pool, per-session locks and model
//! workers, as separate processes would have:
//!
//! ```sh
//! cargo bench --bench load                     # 1 replica, temporary SQLite file
//! createdb -h 127.0.0.1 -U postgres tvbo_load
//! cargo bench --bench load -- --database-url postgres://postgres@127.0.0.1:5432/tvbo_load --replicas 2
//! cargo bench --bench load -- --target http://10.0.0.1:8080 --target http://10.0.0.2:8080
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Parser;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tvbo::api::RouterSettings;
use tvbo::store::PoolSettings;

/// The server's allocator (see `src/main.rs`), so that this measures what it runs.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Drive tvbo with concurrent suggest → observe loops and report throughput and latency.
#[derive(Debug, Parser)]
struct Args {
    /// Passed by `cargo bench` to every bench; ignored.
    #[arg(long, hide = true)]
    bench: bool,
    /// A running server to drive (repeat for several replicas); none: start servers here.
    #[arg(long)]
    target: Vec<String>,
    /// Database of the servers started here (default: a temporary SQLite file).
    #[arg(long)]
    database_url: Option<String>,
    /// Servers to start here over `--database-url` (more than one needs PostgreSQL).
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Connections of each server's pool (TVBO_DB_MAX_CONNECTIONS of a real server).
    #[arg(long, default_value_t = 10)]
    db_max_connections: u32,
    /// Concurrent sessions, one client loop each.
    #[arg(long, default_value_t = 50)]
    sessions: usize,
    /// Suggest → observe rounds per session.
    #[arg(long, default_value_t = 40)]
    rounds: usize,
    /// Algorithm of every session.
    #[arg(long, default_value = "bolt")]
    algorithm: String,
    /// Random suggestions before the model decides.
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// API key for `--target` servers (`tvbo keys create`); the servers started here need
    /// none.
    #[arg(long, env = "TVBO_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The servers started here require keys, as a deployment's do: the clients present
    /// one key (made here, with a rate of its own far above the load, so that the rate
    /// limit does not bound the run). Measures what the key check costs.
    #[arg(long)]
    keys: bool,
}

/// Latencies of the calls of one kind, and the failed calls by status.
#[derive(Default)]
struct Samples {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    failures: BTreeMap<String, usize>,
}

/// Servers started in this process; they stop when this is dropped.
struct LocalServers {
    bases: Vec<String>,
    /// The key the clients present, with `--keys`.
    key: Option<String>,
    _shutdown: Vec<tokio::sync::oneshot::Sender<()>>,
    _database: Option<tempfile::TempDir>,
}

async fn start_local_servers(args: &Args) -> anyhow::Result<LocalServers> {
    let (url, database) = match &args.database_url {
        Some(url) => (url.clone(), None),
        None => {
            let dir = tempfile::tempdir().context("temporary directory")?;
            let url = format!("sqlite://{}", dir.path().join("load.db").display());
            (url, Some(dir))
        }
    };
    if args.replicas > 1 && url.starts_with("sqlite:") {
        bail!(
            "--replicas {} needs PostgreSQL: a SQLite database is a file on one machine with \
             one writer at a time, so replicas could neither run on other machines nor write \
             in parallel",
            args.replicas
        );
    }
    ensure!(args.replicas >= 1, "--replicas must be at least 1");
    let pool = PoolSettings {
        max_connections: args.db_max_connections,
        ..PoolSettings::default()
    };
    let mut bases = Vec::new();
    let mut shutdown = Vec::new();
    for _ in 0..args.replicas {
        let store = tvbo::server::open_store(&url, &pool).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        bases.push(format!("http://{}", listener.local_addr()?));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        shutdown.push(stop);
        // Without --keys no keys and no rate limit: this measures the service, not the
        // gate. Every session's connection comes from this address: no cap per address.
        let access = if args.keys {
            tvbo::api::auth::AccessSettings::default()
        } else {
            tvbo::api::auth::AccessSettings::open()
        };
        let settings = RouterSettings {
            access,
            ..RouterSettings::default()
        };
        let connections = tvbo::server::ConnectionSettings {
            max_connections_per_peer: None,
            ..Default::default()
        };
        tokio::spawn(tvbo::server::serve(
            listener,
            store,
            settings,
            connections,
            async {
                let _ = stopped.await;
            },
        ));
    }
    let key = if args.keys {
        let store = tvbo::server::open_store(&url, &pool).await?;
        let mut made = tvbo::keys::new_key("load", None, false)?;
        made.row.rate_limit = std::num::NonZeroU32::new(1_000_000);
        store.insert_api_key(&made.row).await?;
        Some(made.key)
    } else {
        None
    };
    Ok(LocalServers {
        bases,
        key,
        _shutdown: shutdown,
        _database: database,
    })
}

/// The objective the clients "measure": a bump that drifts slowly with time.
fn objective(x: f64, y: f64, seconds: f64) -> f64 {
    let centre = 0.5 + 0.3 * (seconds / 60.0).sin();
    -(x - centre).powi(2) - (y - 0.4).powi(2)
}

/// POSTs `body` to `url`; the answer's JSON on 2xx, else the status (0: no answer).
async fn post(client: &reqwest::Client, url: &str, body: &Value) -> Result<Value, u16> {
    let response = client.post(url).json(body).send().await.map_err(|_| 0u16)?;
    let status = response.status();
    if !status.is_success() {
        return Err(status.as_u16());
    }
    response.json().await.map_err(|_| 0u16)
}

/// One session's loop; calls go round-robin over `bases`, starting at `offset`.
async fn run_session(
    client: reqwest::Client,
    bases: Arc<Vec<String>>,
    offset: usize,
    args: Arc<Args>,
    samples: Arc<Mutex<Samples>>,
    started: Instant,
) {
    let mut call = offset;
    let mut next_base = || {
        call += 1;
        bases[call % bases.len()].clone()
    };
    let create = json!({
        "name": format!("load-{offset}"),
        "parameters": [
            {"name": "x", "low": 0.0, "high": 1.0},
            {"name": "y", "low": 0.0, "high": 1.0}
        ],
        "algorithm": {"name": args.algorithm},
        "model": {"warmup": args.warmup},
    });
    let session = match post(&client, &format!("{}/v1/sessions", next_base()), &create).await {
        Ok(created) => created["id"].as_str().unwrap_or_default().to_string(),
        Err(status) => {
            *samples
                .lock()
                .await
                .failures
                .entry(format!("create {status}"))
                .or_default() += 1;
            return;
        }
    };
    let record = async |kind: &'static str, began: Instant, outcome: &Result<Value, u16>| {
        let mut samples = samples.lock().await;
        match outcome {
            Ok(_) => samples
                .latencies
                .entry(kind)
                .or_default()
                .push(began.elapsed()),
            Err(status) => {
                *samples
                    .failures
                    .entry(format!("{kind} {status}"))
                    .or_default() += 1
            }
        }
    };
    for _ in 0..args.rounds {
        let url = format!("{}/v1/sessions/{session}/suggestions", next_base());
        let began = Instant::now();
        let suggested = post(&client, &url, &json!({})).await;
        record("suggest", began, &suggested).await;
        let Ok(suggested) = suggested else { continue };
        let suggestion = &suggested["suggestions"][0];
        let (x, y) = (
            suggestion["params"]["x"].as_f64().unwrap_or(0.0),
            suggestion["params"]["y"].as_f64().unwrap_or(0.0),
        );
        let body = json!({
            "suggestion_id": suggestion["id"],
            "value": objective(x, y, started.elapsed().as_secs_f64()),
        });
        let url = format!("{}/v1/sessions/{session}/observations", next_base());
        let began = Instant::now();
        let observed = post(&client, &url, &body).await;
        record("observe", began, &observed).await;
    }
}

/// The `q`-quantile (0..=1) of sorted latencies, in milliseconds.
fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Arc::new(Args::parse());
    ensure!(
        args.sessions >= 1 && args.rounds >= 1,
        "--sessions and --rounds must be ≥ 1"
    );
    let local = if args.target.is_empty() {
        Some(start_local_servers(&args).await?)
    } else {
        None
    };
    let bases = Arc::new(match &local {
        Some(servers) => servers.bases.clone(),
        None => args
            .target
            .iter()
            .map(|t| t.trim_end_matches('/').to_string())
            .collect(),
    });
    let mut headers = reqwest::header::HeaderMap::new();
    let local_key = local.as_ref().and_then(|servers| servers.key.clone());
    if let Some(key) = local_key.as_ref().or(args.api_key.as_ref()) {
        let mut bearer = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}"))?;
        bearer.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, bearer);
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .default_headers(headers)
        .build()?;
    let samples = Arc::new(Mutex::new(Samples::default()));
    let started = Instant::now();
    let loops: Vec<_> = (0..args.sessions)
        .map(|offset| {
            tokio::spawn(run_session(
                client.clone(),
                bases.clone(),
                offset,
                args.clone(),
                samples.clone(),
                started,
            ))
        })
        .collect();
    for session_loop in loops {
        session_loop.await?;
    }
    let elapsed = started.elapsed().as_secs_f64();

    let samples = samples.lock().await;
    let mut all: Vec<Duration> = samples.latencies.values().flatten().copied().collect();
    all.sort();
    let backend = match (&local, &args.database_url) {
        (None, _) => "given servers",
        (Some(_), Some(url)) if url.starts_with("postgres") => "PostgreSQL",
        (Some(_), _) => "SQLite",
    };
    println!(
        "{backend}, {} replica(s), {} sessions × {} rounds of suggest → observe ({}, warm-up {})",
        bases.len(),
        args.sessions,
        args.rounds,
        args.algorithm,
        args.warmup
    );
    let observed = samples.latencies.get("observe").map_or(0, Vec::len);
    println!(
        "{} calls in {elapsed:.1} s: {:.1} calls/s, {:.1} observations/s",
        all.len(),
        all.len() as f64 / elapsed,
        observed as f64 / elapsed
    );
    let mut kinds: Vec<(&str, Vec<Duration>)> = samples
        .latencies
        .iter()
        .map(|(kind, latencies)| (*kind, latencies.clone()))
        .collect();
    kinds.push(("all", all));
    for (kind, mut latencies) in kinds {
        latencies.sort();
        if latencies.is_empty() {
            continue;
        }
        println!(
            "  {kind:8} n = {:5}  p50 {:7.1} ms  p99 {:7.1} ms  max {:7.1} ms",
            latencies.len(),
            quantile_ms(&latencies, 0.50),
            quantile_ms(&latencies, 0.99),
            quantile_ms(&latencies, 1.0),
        );
    }
    if samples.failures.is_empty() {
        println!("  no failed calls");
    } else {
        println!(
            "  failed calls (status 0: no answer): {:?}",
            samples.failures
        );
    }
    Ok(())
}
