//! Settings from the command line and the environment.

use std::net::SocketAddr;
use std::num::NonZeroU32;

use clap::{Parser, Subcommand, ValueEnum};

use crate::api::auth::AccessSettings;
use crate::api::headers::CorsOrigins;
use crate::api::{REQUEST_TIMEOUT, RouterSettings};
use crate::dashboard::BasePath;
use crate::engine::Limits;
use crate::server::ConnectionSettings;
use crate::session::service::DEFAULT_MAX_SESSIONS_PER_TENANT;

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// tvbo: time-varying Bayesian optimization as a service.
#[derive(Debug, Parser)]
#[command(name = "tvbo", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Subcommands; none means `serve`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server (the default).
    Serve,
    /// Write the OpenAPI document of the HTTP API.
    Openapi {
        /// Where to write it; `-` for standard output.
        #[arg(long, default_value = "openapi/openapi.json")]
        output: String,
    },
    /// Run the papers' benchmarks (docs/benchmarks.md) and write a report.
    Bench(BenchArgs),
    /// Make, list and revoke API keys in the database (DATABASE_URL); docs/security.md.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Read every row of every session in the database (DATABASE_URL) and report the
    /// sessions whose rows do not decode; exits 1 if any (docs/operations.md).
    Check,
    /// Write a consistent copy of the SQLite database (DATABASE_URL) to a new file while
    /// the server runs (docs/operations.md); PostgreSQL is backed up with pg_dump.
    Backup {
        /// The new file; must not exist.
        path: std::path::PathBuf,
    },
}

/// `tvbo keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key and print it (once: only its hash is stored).
    Create {
        /// What the key is for (a person, a program).
        #[arg(long)]
        name: String,
        /// The tenant whose sessions the key sees and creates (default: the name).
        /// Keys of one tenant share its sessions.
        #[arg(long)]
        tenant: Option<String>,
        /// The key sees every tenant's sessions.
        #[arg(long)]
        admin: bool,
        /// The key's own request rate on `/v1`: requests per second, on average, per
        /// replica, in bursts of twice that (default: the server's TVBO_RATE_LIMIT and
        /// TVBO_RATE_BURST).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        rate: Option<u32>,
    },
    /// List every key (never the secrets).
    List,
    /// Revoke a key: it is refused from the next request on, on every replica.
    Revoke {
        /// The key's id, as `tvbo keys list` shows it (or the whole key).
        id: String,
    },
}

/// Whether `/v1` needs an API key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Every `/v1` request needs `Authorization: Bearer <key>`.
    #[default]
    On,
    /// No key needed: anyone who reaches the port may do anything (a warning at start
    /// when bound beyond loopback).
    Off,
}

/// Where a benchmarked server session takes its time from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BenchTime {
    /// Client time: `t` from the bench's simulated clock on every call.
    #[default]
    Client,
    /// The server's wall clock; each run takes its horizon in real time.
    Wall,
}

/// Options of `tvbo bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Suite: `quick` (every policy in minutes), `paper` (002's Table 3), `gp` (000's
    /// time-varying GP samples), `priors` (003's prior-selection setups), `wdbo` (W-DBO on
    /// the wells objectives), `multimodal` (basins whose depths change) or `all`.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Only these objectives (comma-separated names, e.g. `hartmann3,powell,tvgp-se-0.01`).
    #[arg(long, value_delimiter = ',')]
    pub objectives: Option<Vec<String>>,
    /// Only these algorithms (comma-separated API names, e.g. `bolt,w-dbo`).
    #[arg(long, value_delimiter = ',')]
    pub algorithms: Option<Vec<String>>,
    /// Options of an algorithm instead of its defaults, as NAME=JSON with the fields of
    /// the API's `algorithm` object, e.g. `r-gp-ucb={"reset_every":60}` (repeatable).
    /// The runs record them, and `--resume` reuses only runs with the same options.
    #[arg(long, value_name = "NAME=JSON", value_parser = crate::bench::parse_algorithm_options)]
    pub algorithm_options: Vec<(String, crate::bench::AlgorithmOptions)>,
    /// Every session's `model.fit_start`: `fixed` (the papers' protocol) or `previous`.
    /// The runs record it, and `--resume` reuses only runs with the same one.
    #[arg(long, default_value = "fixed", value_parser = parse_fit_start)]
    pub fit_start: crate::domain::config::FitStart,
    /// Every session's `model.hyperpriors`: `none` (exact maximum likelihood, the papers'
    /// protocol), `robust` (MAP under weak priors) or `default` (the service's default,
    /// recorded as the mode it stands for). The runs record it, and `--resume` reuses only
    /// runs with the same one.
    #[arg(long, default_value = "none", value_parser = parse_hyperpriors)]
    pub hyperpriors: crate::domain::hyperpriors::Hyperpriors,
    /// Replications per (objective, algorithm) (suite default: 10; quick: 2).
    #[arg(long)]
    pub replications: Option<usize>,
    /// Seconds of (simulated) time per run (suite default: 600; quick: 60).
    #[arg(long)]
    pub horizon: Option<f64>,
    /// Runs in parallel: at most the number of cores, with nothing else running, or the
    /// measured compute that drives the clock inflates.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Base seed; replication r of every algorithm uses the same seed derived from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Charge this many seconds of compute per iteration instead of the measured time
    /// (deterministic runs).
    #[arg(long)]
    pub fixed_compute: Option<f64>,
    /// Directory of the report files (created if missing).
    #[arg(long, default_value = "bench-results")]
    pub output: std::path::PathBuf,
    /// Drive a running server at this base URL (e.g. http://127.0.0.1:8080) over HTTP
    /// instead of running the policies in-process.
    #[arg(long)]
    pub server: Option<String>,
    /// With --server: the sessions' time source.
    #[arg(long, value_enum, default_value_t = BenchTime::Client)]
    pub server_time: BenchTime,
    /// With --server: the API key to send (`tvbo keys create`).
    #[arg(long, env = "TVBO_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// No progress bars (they are only drawn on a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Reuse the runs recorded in OUTPUT/runs.jsonl by an earlier (interrupted) bench
    /// with the same options, and run only the missing ones.
    #[arg(long)]
    pub resume: bool,
    /// Run nothing: write the report of the runs already recorded in OUTPUT/runs.jsonl
    /// for this suite and these options (an interim table of an unfinished suite).
    #[arg(long, conflicts_with = "resume")]
    pub report_only: bool,
}

impl BenchArgs {
    /// The library's options of these arguments.
    pub fn options(&self) -> crate::bench::BenchOptions {
        crate::bench::BenchOptions {
            suite: self.suite.clone(),
            objectives: self.objectives.clone(),
            algorithms: self.algorithms.clone(),
            algorithm_options: self.algorithm_options.clone(),
            fit_start: self.fit_start,
            hyperpriors: self.hyperpriors,
            replications: self.replications,
            horizon: self.horizon,
            jobs: self.jobs,
            seed: self.seed,
            fixed_compute: self.fixed_compute,
            output: self.output.clone(),
            server: self.server.clone(),
            server_time: match self.server_time {
                BenchTime::Client => crate::bench::ServerTime::Client,
                BenchTime::Wall => crate::bench::ServerTime::Wall,
            },
            api_key: self.api_key.clone(),
            progress: !self.no_progress,
            resume: self.resume,
            report_only: self.report_only,
        }
    }
}

/// Settings of the server.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(
        long,
        env = "TVBO_BIND",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub bind: SocketAddr,
    /// Database: `sqlite://path` (created if missing), `sqlite::memory:` (for the
    /// server's lifetime only, in a temporary directory), or
    /// `postgres://user@host:port/db` (`postgresql://` too; the database must exist).
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://tvbo.db",
        global = true
    )]
    pub database_url: String,
    /// Most database connections this process opens.
    #[arg(
        long,
        env = "TVBO_DB_MAX_CONNECTIONS",
        default_value_t = 10,
        global = true
    )]
    pub db_max_connections: u32,
    /// Seconds a request waits for a free database connection before it fails with 503.
    #[arg(
        long,
        env = "TVBO_DB_ACQUIRE_TIMEOUT",
        default_value_t = 5.0,
        global = true
    )]
    pub db_acquire_timeout: f64,
    /// Log format.
    #[arg(long, env = "TVBO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Human, global = true)]
    pub log_format: LogFormat,
    /// Most pending (handed out, unobserved, unexpired) suggestions of one session; a
    /// suggest beyond it answers 409 `too-many-pending`.
    #[arg(
        long,
        env = "TVBO_MAX_PENDING_SUGGESTIONS",
        default_value_t = Limits::DEFAULT_MAX_PENDING,
        global = true
    )]
    pub max_pending_suggestions: usize,
    /// Most active observations of one session whose algorithm does not bound its own
    /// dataset (all but BOLT); an observe beyond it answers 409 `dataset-full`.
    #[arg(
        long,
        env = "TVBO_MAX_ACTIVE_OBSERVATIONS",
        default_value_t = Limits::DEFAULT_MAX_ACTIVE_OBSERVATIONS,
        global = true
    )]
    pub max_active_observations: usize,
    /// The path prefix a reverse proxy serves tvbo under (`/tvbo`, say), for the
    /// dashboard's links; empty when it is served at the root.
    #[arg(long, env = "TVBO_BASE_PATH", default_value = "", global = true)]
    pub base_path: String,
    /// Whether `/v1` needs an API key (`tvbo keys create`).
    #[arg(long, env = "TVBO_AUTH", value_enum, default_value_t = AuthMode::On, global = true)]
    pub auth: AuthMode,
    /// Requests per second each API key may make on `/v1`, on average, per replica, unless
    /// it has a rate of its own (`tvbo keys create --rate`); beyond it 429 with
    /// Retry-After. 0: no limit but the keys' own (none with TVBO_AUTH=off: no keys to
    /// count by).
    #[arg(
        long,
        env = "TVBO_RATE_LIMIT",
        default_value_t = AccessSettings::DEFAULT_RATE_PER_SECOND,
        global = true
    )]
    pub rate_limit: u32,
    /// Requests a key may make at once beyond its average rate.
    #[arg(
        long,
        env = "TVBO_RATE_BURST",
        default_value_t = AccessSettings::DEFAULT_RATE_BURST,
        global = true
    )]
    pub rate_burst: u32,
    /// Most sessions one tenant may own; a create beyond it answers 409
    /// `too-many-sessions`.
    #[arg(
        long,
        env = "TVBO_MAX_SESSIONS_PER_TENANT",
        default_value_t = DEFAULT_MAX_SESSIONS_PER_TENANT,
        global = true
    )]
    pub max_sessions_per_tenant: i64,
    /// Seconds a request may take before it is answered 503 `timeout`.
    #[arg(
        long,
        env = "TVBO_REQUEST_TIMEOUT",
        default_value_t = REQUEST_TIMEOUT.as_secs_f64(),
        global = true
    )]
    pub request_timeout: f64,
    /// Most connections open at once; one more is answered 503 and closed.
    #[arg(
        long,
        env = "TVBO_MAX_CONNECTIONS",
        default_value_t = ConnectionSettings::DEFAULT_MAX_CONNECTIONS,
        global = true
    )]
    pub max_connections: usize,
    /// Most connections open at once from one peer IP address; one more from it is answered
    /// 503 and closed. 0: no cap per address (behind a reverse proxy every client has the
    /// proxy's address: raise it above the proxy's connections, or set it to 0).
    #[arg(
        long,
        env = "TVBO_MAX_CONNECTIONS_PER_PEER",
        default_value_t = ConnectionSettings::DEFAULT_MAX_CONNECTIONS_PER_PEER,
        global = true
    )]
    pub max_connections_per_peer: usize,
    /// Seconds a connection may take to send a request head, from the accept or from the
    /// end of the previous answer: so also how long an idle kept-alive connection stays.
    #[arg(
        long,
        env = "TVBO_HEADER_READ_TIMEOUT",
        default_value_t = ConnectionSettings::DEFAULT_HEADER_READ_TIMEOUT.as_secs_f64(),
        global = true
    )]
    pub header_read_timeout: f64,
    /// Browser origins allowed to call the API from their pages (CORS), comma-separated
    /// and exact (`https://app.example.com,http://localhost:3000`); none when empty.
    #[arg(long, env = "TVBO_CORS_ORIGINS", default_value = "", global = true)]
    pub cors_origins: String,
    /// Serve `/metrics` on this address only, a listener of its own (e.g.
    /// 127.0.0.1:9090, for a scraper on a private network), instead of on the API's.
    #[arg(long, env = "TVBO_METRICS_BIND", global = true)]
    pub metrics_bind: Option<SocketAddr>,
}

/// A positive, finite number of seconds of setting `name`.
fn seconds(name: &str, value: f64) -> anyhow::Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow::anyhow!("{name} must be a positive number of seconds"))
}

impl ServeArgs {
    /// The router's settings of these arguments.
    pub fn router_settings(&self) -> anyhow::Result<RouterSettings> {
        anyhow::ensure!(
            self.max_sessions_per_tenant >= 1,
            "TVBO_MAX_SESSIONS_PER_TENANT must be at least 1"
        );
        Ok(RouterSettings {
            limits: self.limits()?,
            request_timeout: seconds("TVBO_REQUEST_TIMEOUT", self.request_timeout)?,
            base_path: BasePath::parse(&self.base_path)
                .map_err(|e| anyhow::anyhow!("TVBO_BASE_PATH {e}"))?,
            access: AccessSettings {
                auth: self.auth == AuthMode::On,
                rate_per_second: NonZeroU32::new(self.rate_limit),
                rate_burst: NonZeroU32::new(self.rate_burst)
                    .ok_or_else(|| anyhow::anyhow!("TVBO_RATE_BURST must be at least 1"))?,
                max_sessions_per_tenant: self.max_sessions_per_tenant,
            },
            cors_origins: CorsOrigins::parse(&self.cors_origins)
                .map_err(|e| anyhow::anyhow!("TVBO_CORS_ORIGINS {e}"))?,
            serve_metrics: self.metrics_bind.is_none(),
        })
    }

    /// The connection limits of these arguments.
    pub fn connection_settings(&self) -> anyhow::Result<ConnectionSettings> {
        anyhow::ensure!(
            self.max_connections >= 1,
            "TVBO_MAX_CONNECTIONS must be at least 1"
        );
        Ok(ConnectionSettings {
            max_connections: self.max_connections,
            max_connections_per_peer: (self.max_connections_per_peer > 0)
                .then_some(self.max_connections_per_peer),
            header_read_timeout: seconds("TVBO_HEADER_READ_TIMEOUT", self.header_read_timeout)?,
        })
    }

    /// The caps on each session's work of these arguments.
    pub fn limits(&self) -> anyhow::Result<Limits> {
        anyhow::ensure!(
            self.max_pending_suggestions >= 1,
            "TVBO_MAX_PENDING_SUGGESTIONS must be at least 1"
        );
        anyhow::ensure!(
            self.max_active_observations >= 1,
            "TVBO_MAX_ACTIVE_OBSERVATIONS must be at least 1"
        );
        Ok(Limits {
            max_pending: self.max_pending_suggestions,
            max_active_observations: self.max_active_observations,
        })
    }

    /// The connection-pool settings of these arguments.
    pub fn pool_settings(&self) -> anyhow::Result<crate::store::PoolSettings> {
        anyhow::ensure!(
            self.db_max_connections >= 1,
            "TVBO_DB_MAX_CONNECTIONS must be at least 1"
        );
        let acquire_timeout = seconds("TVBO_DB_ACQUIRE_TIMEOUT", self.db_acquire_timeout)?;
        Ok(crate::store::PoolSettings {
            max_connections: self.db_max_connections,
            acquire_timeout,
        })
    }
}

/// `--fit-start`: a value of the API's `model.fit_start`.
fn parse_fit_start(text: &str) -> Result<crate::domain::config::FitStart, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a fit start: `fixed` or `previous`"))
}

/// `--hyperpriors`: a value of the API's `model.hyperpriors`, or `default` for the
/// service's default (resolved here, so that the runs record the mode itself).
fn parse_hyperpriors(text: &str) -> Result<crate::domain::hyperpriors::Hyperpriors, String> {
    if text == "default" {
        return Ok(crate::domain::hyperpriors::Hyperpriors::default());
    }
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a hyperprior mode: `none`, `robust` or `default`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::hyperpriors::Hyperpriors;

    fn bench_hyperpriors(args: &[&str]) -> Result<Hyperpriors, clap::Error> {
        let cli = Cli::try_parse_from(["tvbo", "bench"].iter().chain(args))?;
        match cli.command {
            Some(Command::Bench(bench)) => Ok(bench.options().hyperpriors),
            other => panic!("not bench: {other:?}"),
        }
    }

    /// `tvbo bench --hyperpriors`: `none` unless given; `default` is the service's
    /// default, resolved at parse time.
    #[test]
    fn bench_hyperpriors_default_to_none_and_resolve_default() {
        assert_eq!(bench_hyperpriors(&[]).unwrap(), Hyperpriors::None);
        for (given, mode) in [
            ("none", Hyperpriors::None),
            ("robust", Hyperpriors::Robust),
            ("default", Hyperpriors::default()),
        ] {
            assert_eq!(bench_hyperpriors(&["--hyperpriors", given]).unwrap(), mode);
        }
        let e = bench_hyperpriors(&["--hyperpriors", "map"]).unwrap_err();
        assert!(
            e.to_string().contains("`none`, `robust` or `default`"),
            "{e}"
        );
    }
}
