//! Load generator: `--sessions` sessions, created first, then each doing `--rounds` rounds
//! of suggest → observe (and `--reads` reads), the rounds of all sessions interleaved and
//! at most `--concurrency` sessions in flight at once; it reports calls per second, latency
//! percentiles, the replicas' cache hit rates and memory (docs/scaling.md has
//! measurements).
//!
//! It drives running servers (`--target URL`, repeatable), or starts `--replicas` servers in
//! this process over `--database-url`, each with its own connection pool, per-session
//! locks, caches and model workers, as separate processes would have. Calls are spread over
//! the servers as a load balancer would: `--route session` (the default, as
//! docker/haproxy.cfg does) sends all of a session's calls to one server, chosen by a
//! consistent hash of its id; `--route round-robin` sends each call to the next server.
//!
//! ```sh
//! cargo bench --bench load                     # 1 replica, temporary SQLite file
//! createdb -h 127.0.0.1 -U postgres tvbo_load
//! cargo bench --bench load -- --database-url postgres://postgres@127.0.0.1:5432/tvbo_load --replicas 2
//! cargo bench --bench load -- --target http://10.0.0.1:8080 --target http://10.0.0.2:8080
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::{Parser, ValueEnum};
use serde_json::{Value, json};
use tvbo::api::RouterSettings;
use tvbo::store::PoolSettings;
use tvbo::telemetry::{MODEL_CACHE_BYTES, MODEL_CACHE_LOOKUPS, SNAPSHOT_LOOKUPS, SNAPSHOT_ROWS};

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
    /// Where to read the servers' metrics (repeat for each replica), when `--target` is a
    /// load balancer in front of them (default: each `--target`'s `/metrics`).
    #[arg(long)]
    metrics: Vec<String>,
    /// Database of the servers started here (default: a temporary SQLite file).
    #[arg(long)]
    database_url: Option<String>,
    /// Servers to start here over `--database-url` (more than one needs PostgreSQL).
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Connections of each server's pool (TVBO_DB_MAX_CONNECTIONS of a real server).
    #[arg(long, default_value_t = 10)]
    db_max_connections: u32,
    /// Sessions, all active: each does a round, then waits for every other session's
    /// turn before its next one.
    #[arg(long, default_value_t = 50)]
    sessions: usize,
    /// Sessions with a call in flight at once (the clients; default: every session).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Suggest → observe rounds per session.
    #[arg(long, default_value_t = 40)]
    rounds: usize,
    /// Reads after each observe, alternately the recommendation (`best`) and the regret,
    /// as a client or dashboard that follows the session does: they use the read-model
    /// cache, which only a second read of the same version on the same replica hits.
    #[arg(long, default_value_t = 0)]
    reads: usize,
    /// How calls are spread over the servers: `session`, every call of a session to one
    /// server (a consistent hash of its id, as docker/haproxy.cfg routes); `round-robin`,
    /// each call to the next server. Creates go round robin either way.
    #[arg(long, value_enum, default_value_t = Route::Session)]
    route: Route,
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
    /// Every suggest and observe carries a fresh `Idempotency-Key`, as the Python client's
    /// POSTs do: the server stores each key with its answer in the change's transaction.
    #[arg(long)]
    idempotency_keys: bool,
}

/// How calls are spread over the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Route {
    /// Each call to the next server, over all sessions' calls (HAProxy's `roundrobin`).
    RoundRobin,
    /// Every call of a session to the server its id hashes to.
    Session,
}

/// Picks the server of each call.
struct Routing {
    bases: Vec<String>,
    route: Route,
    next: AtomicUsize,
}

impl Routing {
    /// The next server in turn.
    fn any(&self) -> &str {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.bases[turn % self.bases.len()]
    }

    /// The server of a call of `session`. By session: the server whose hash with the id is
    /// highest (rendezvous hashing), which is consistent: when a server leaves, only its
    /// sessions move, spread over the others, as on HAProxy's consistent-hash ring.
    fn of(&self, session: &str) -> &str {
        match self.route {
            Route::RoundRobin => self.any(),
            Route::Session => self
                .bases
                .iter()
                .max_by_key(|base| {
                    let mut hasher = std::hash::DefaultHasher::new();
                    (session, base.as_str()).hash(&mut hasher);
                    hasher.finish()
                })
                .expect("at least one server"),
        }
    }
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

/// POSTs `body` to `url`, with `Idempotency-Key: key` if given; the answer's JSON on 2xx,
/// else the status (0: no answer).
async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    key: Option<String>,
) -> Result<Value, u16> {
    let mut request = client.post(url).json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    answer(request.send().await).await
}

/// GETs `url`, as [`post`].
async fn get(client: &reqwest::Client, url: &str) -> Result<Value, u16> {
    answer(client.get(url).send().await).await
}

async fn answer(sent: reqwest::Result<reqwest::Response>) -> Result<Value, u16> {
    let response = sent.map_err(|_| 0u16)?;
    let status = response.status();
    if !status.is_success() {
        return Err(status.as_u16());
    }
    response.json().await.map_err(|_| 0u16)
}

/// What the sessions' clients share.
struct Clients {
    client: reqwest::Client,
    routing: Routing,
    args: Args,
    samples: Mutex<Samples>,
    started: Instant,
}

impl Clients {
    /// Records a call of `kind` that began at `began`.
    fn record<T>(&self, kind: &'static str, began: Instant, outcome: &Result<T, u16>) {
        let mut samples = self.samples.lock().expect("samples poisoned");
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
    }

    /// Creates the `index`-th session; its id.
    async fn create(&self, index: usize) -> Option<String> {
        let args = &self.args;
        let body = json!({
            "name": format!("load-{index}"),
            "parameters": [
                {"name": "x", "low": 0.0, "high": 1.0},
                {"name": "y", "low": 0.0, "high": 1.0}
            ],
            "algorithm": {"name": args.algorithm},
            "model": {"warmup": args.warmup},
        });
        let url = format!("{}/v1/sessions", self.routing.any());
        let began = Instant::now();
        let created = post(&self.client, &url, &body, None).await;
        self.record("create", began, &created);
        Some(created.ok()?["id"].as_str()?.to_string())
    }

    /// A fresh idempotency key for the `round`-th round's `call` of `session`, with
    /// `--idempotency-keys`.
    fn idempotency_key(&self, session: &str, round: usize, call: &str) -> Option<String> {
        self.args
            .idempotency_keys
            .then(|| format!("load-{session}-{round}-{call}"))
    }

    /// The `number`-th round of `session`: suggest, measure, observe, then the reads.
    async fn round(&self, session: &str, number: usize) {
        let base = || self.routing.of(session);
        let url = format!("{}/v1/sessions/{session}/suggestions", base());
        let began = Instant::now();
        let key = self.idempotency_key(session, number, "suggest");
        let suggested = post(&self.client, &url, &json!({}), key).await;
        self.record("suggest", began, &suggested);
        let Ok(suggested) = suggested else { return };
        let suggestion = &suggested["suggestions"][0];
        let (x, y) = (
            suggestion["params"]["x"].as_f64().unwrap_or(0.0),
            suggestion["params"]["y"].as_f64().unwrap_or(0.0),
        );
        let body = json!({
            "suggestion_id": suggestion["id"],
            "value": objective(x, y, self.started.elapsed().as_secs_f64()),
        });
        let url = format!("{}/v1/sessions/{session}/observations", base());
        let began = Instant::now();
        let key = self.idempotency_key(session, number, "observe");
        let observed = post(&self.client, &url, &body, key).await;
        self.record("observe", began, &observed);
        for read in 0..self.args.reads {
            let kind = if read % 2 == 0 { "best" } else { "regret" };
            let url = format!("{}/v1/sessions/{session}/{kind}", base());
            let began = Instant::now();
            let outcome = get(&self.client, &url).await;
            self.record(kind, began, &outcome);
        }
    }
}

/// Runs `work` on every item of `queue` with `workers` tasks; an item for which `work`
/// answers `Some` goes back to the end of the queue.
async fn drain<T, F, Fut>(queue: VecDeque<T>, workers: usize, work: F)
where
    T: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<T>> + Send,
{
    let queue = Arc::new(Mutex::new(queue));
    let work = Arc::new(work);
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (queue, work) = (queue.clone(), work.clone());
            tokio::spawn(async move {
                loop {
                    let item = queue.lock().expect("queue poisoned").pop_front();
                    let Some(item) = item else { break };
                    if let Some(again) = work(item).await {
                        queue.lock().expect("queue poisoned").push_back(again);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client task panicked");
    }
}

/// The replicas' metrics summed over the servers, by series (name and labels): this
/// process's recorder for the servers started here, else each `--metrics` URL, else each
/// `--target`'s `/metrics` (None if one does not answer).
async fn server_metrics(
    local: bool,
    client: &reqwest::Client,
    bases: &[String],
    urls: &[String],
) -> Option<BTreeMap<String, f64>> {
    let texts = if local {
        vec![tvbo::telemetry::install().render()]
    } else {
        let urls: Vec<String> = if urls.is_empty() {
            bases.iter().map(|base| format!("{base}/metrics")).collect()
        } else {
            urls.to_vec()
        };
        let mut texts = Vec::new();
        for url in urls {
            let response = client.get(url).send().await.ok()?;
            texts.push(response.error_for_status().ok()?.text().await.ok()?);
        }
        texts
    };
    let mut series = BTreeMap::new();
    for line in texts.iter().flat_map(|text| text.lines()) {
        if line.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = line.rsplit_once(' ')
            && let Ok(value) = value.parse::<f64>()
        {
            *series.entry(name.to_string()).or_default() += value;
        }
    }
    Some(series)
}

/// `metric{outcome="…"}` counts between two scrapes, as "hit 80.0 %, …" and their total.
fn outcomes(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    metric: &str,
) -> (String, f64) {
    let count = |outcome: &str| {
        let key = format!("{metric}{{outcome=\"{outcome}\"}}");
        after.get(&key).copied().unwrap_or(0.0) - before.get(&key).copied().unwrap_or(0.0)
    };
    let counts = ["hit", "stale", "absent"].map(|o| (o, count(o)));
    let total: f64 = counts.iter().map(|(_, n)| n).sum();
    let shares = counts
        .iter()
        .map(|(o, n)| format!("{o} {:.1} %", 100.0 * n / total.max(1.0)))
        .collect::<Vec<_>>()
        .join(", ");
    (shares, total)
}

/// This process's resident memory (VmRSS), in bytes; None off Linux.
fn resident_bytes() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// CPU seconds so far of this process and of the whole machine (busy, all cores), from
/// /proc (in USER_HZ = 100 ticks per second); None off Linux.
fn cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses: utime and stime are
    // the 14th and 15th of the line, the 12th and 13th after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    let process = (ticks(11)? + ticks(12)?) / 100.0;
    let machine = std::fs::read_to_string("/proc/stat").ok()?;
    let all: Vec<f64> = machine
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    let busy: f64 = all.iter().take(8).sum::<f64>() - all.get(3)? - all.get(4)?;
    Some((process, busy / 100.0))
}

/// The `q`-quantile (0..=1) of sorted latencies, in milliseconds.
fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e3
}

/// One line of latency percentiles.
fn print_latencies(kind: &str, latencies: &mut [Duration]) {
    latencies.sort();
    if latencies.is_empty() {
        return;
    }
    println!(
        "  {kind:8} n = {:6}  p50 {:7.1} ms  p99 {:7.1} ms  max {:7.1} ms",
        latencies.len(),
        quantile_ms(latencies, 0.50),
        quantile_ms(latencies, 0.99),
        quantile_ms(latencies, 1.0),
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.sessions >= 1 && args.rounds >= 1,
        "--sessions and --rounds must be ≥ 1"
    );
    let concurrency = args.concurrency.unwrap_or(args.sessions);
    ensure!(concurrency >= 1, "--concurrency must be ≥ 1");
    let local = if args.target.is_empty() {
        Some(start_local_servers(&args).await?)
    } else {
        None
    };
    let bases = match &local {
        Some(servers) => servers.bases.clone(),
        None => args
            .target
            .iter()
            .map(|t| t.trim_end_matches('/').to_string())
            .collect(),
    };
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
    let backend = match (&local, &args.database_url) {
        (None, _) => "given servers",
        (Some(_), Some(url)) if url.starts_with("postgres") => "PostgreSQL",
        (Some(_), _) => "SQLite",
    };
    println!(
        "{backend}, {} replica(s), route {}, {} sessions × {} rounds of suggest → observe \
         + {} reads ({}, warm-up {}), {concurrency} in flight{}",
        bases.len(),
        match args.route {
            Route::RoundRobin => "round-robin",
            Route::Session => "session",
        },
        args.sessions,
        args.rounds,
        args.reads,
        args.algorithm,
        args.warmup,
        if args.idempotency_keys {
            ", idempotency keys"
        } else {
            ""
        }
    );
    let resident_at_start = resident_bytes();
    let clients = Arc::new(Clients {
        client: client.clone(),
        routing: Routing {
            bases: bases.clone(),
            route: args.route,
            next: AtomicUsize::new(0),
        },
        args,
        samples: Mutex::default(),
        started: Instant::now(),
    });

    // The sessions, created first.
    let ids = Arc::new(Mutex::new(Vec::new()));
    let began = Instant::now();
    {
        let (clients, ids) = (clients.clone(), ids.clone());
        drain(
            (0..clients.args.sessions).collect(),
            concurrency,
            move |i| {
                let (clients, ids) = (clients.clone(), ids.clone());
                async move {
                    if let Some(id) = clients.create(i).await {
                        ids.lock().expect("ids poisoned").push(id);
                    }
                    None::<usize>
                }
            },
        )
        .await;
    }
    let creating = began.elapsed().as_secs_f64();
    let ids = std::mem::take(&mut *ids.lock().expect("ids poisoned"));

    let resident_after_creates = resident_bytes();

    // The rounds: each session does one, then goes to the back of the queue.
    let metrics_before =
        server_metrics(local.is_some(), &client, &bases, &clients.args.metrics).await;
    let cpu_before = cpu_seconds();
    let began = Instant::now();
    {
        let clients = clients.clone();
        let rounds = clients.args.rounds;
        let queue = ids.into_iter().map(|id| (id, 0)).collect();
        drain(queue, concurrency, move |(id, done): (String, usize)| {
            let clients = clients.clone();
            async move {
                clients.round(&id, done).await;
                (done + 1 < rounds).then_some((id, done + 1))
            }
        })
        .await;
    }
    let elapsed = began.elapsed().as_secs_f64();
    let cpu_after = cpu_seconds();
    let metrics_after =
        server_metrics(local.is_some(), &client, &bases, &clients.args.metrics).await;
    let resident_at_end = resident_bytes();

    let args = &clients.args;
    let mut samples = clients.samples.lock().expect("samples poisoned");
    let mut created = samples.latencies.remove("create").unwrap_or_default();
    println!(
        "{} sessions created in {creating:.1} s: {:.1} creates/s",
        created.len(),
        created.len() as f64 / creating
    );
    print_latencies("create", &mut created);
    let mut all: Vec<Duration> = samples.latencies.values().flatten().copied().collect();
    let observed = samples.latencies.get("observe").map_or(0, Vec::len);
    println!(
        "{} calls in {elapsed:.1} s: {:.1} calls/s, {:.1} observations/s",
        all.len(),
        all.len() as f64 / elapsed,
        observed as f64 / elapsed
    );
    for (kind, latencies) in samples.latencies.iter_mut() {
        print_latencies(kind, latencies);
    }
    print_latencies("all", &mut all);
    if samples.failures.is_empty() {
        println!("  no failed calls");
    } else {
        println!(
            "  failed calls (status 0: no answer): {:?}",
            samples.failures
        );
    }

    match (&metrics_before, &metrics_after) {
        (Some(before), Some(after)) => {
            let (shares, n) = outcomes(before, after, SNAPSHOT_LOOKUPS);
            println!("  kept snapshots, per committed change (n = {n}): {shares}");
            let (shares, n) = outcomes(before, after, MODEL_CACHE_LOOKUPS);
            println!("  read-model cache, per model read (n = {n}): {shares}");
            let rows = after.get(SNAPSHOT_ROWS).copied().unwrap_or(0.0);
            let models = after.get(MODEL_CACHE_BYTES).copied().unwrap_or(0.0);
            let sessions = args.sessions as f64;
            println!(
                "  kept now, all replicas: {rows:.0} snapshot rows ({:.1} per session), \
                 {:.1} MB of read models ({:.0} bytes per session, as the cache counts them)",
                rows / sessions,
                models / 1e6,
                models / sessions,
            );
        }
        _ => println!("  cache hit rates: the servers' /metrics did not answer"),
    }
    if let (Some((process_0, machine_0)), Some((process_1, machine_1))) = (cpu_before, cpu_after) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (process, machine) = (
            (process_1 - process_0) / elapsed,
            (machine_1 - machine_0) / elapsed,
        );
        println!(
            "  CPU during the rounds, in cores busy: the machine {machine:.2} of {cores}, this \
             process (load generator{}) {process:.2}, the rest (database, other programs) {:.2}",
            if local.is_some() { " and replicas" } else { "" },
            machine - process,
        );
    }
    if let (Some(_), Some(start), Some(created), Some(end)) = (
        &local,
        resident_at_start,
        resident_after_creates,
        resident_at_end,
    ) {
        let per_session = |bytes: f64| bytes / args.sessions as f64 / 1e3;
        println!(
            "  resident memory of this process (replicas and load generator): {:.1} MB after \
             the servers started, {:.1} MB after the creates, {:.1} MB at the end: {:.1} kB \
             per session in all, {:.1} kB per session during the rounds",
            start / 1e6,
            created / 1e6,
            end / 1e6,
            per_session(end - start),
            per_session(end - created),
        );
    }
    Ok(())
}
