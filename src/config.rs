//! Settings from the command line and the environment.

use std::net::SocketAddr;

use clap::{Parser, Subcommand, ValueEnum};

use crate::api::RouterSettings;
use crate::dashboard::BasePath;
use crate::engine::Limits;

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
    /// Write a consistent copy of the SQLite database (DATABASE_URL) to a new file while
    /// the server runs (docs/operations.md); PostgreSQL is backed up with pg_dump.
    Backup {
        /// The new file; must not exist.
        path: std::path::PathBuf,
    },
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
    /// time-varying GP samples), `priors` (003's prior-selection setups) or `all`.
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
    /// Database: `sqlite://path` (created if missing), `sqlite::memory:`, or
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
    /// Serve `/metrics` on this address only, a listener of its own (e.g.
    /// 127.0.0.1:9090, for a scraper on a private network), instead of on the API's.
    #[arg(long, env = "TVBO_METRICS_BIND", global = true)]
    pub metrics_bind: Option<SocketAddr>,
}

impl ServeArgs {
    /// The router's settings of these arguments.
    pub fn router_settings(&self) -> anyhow::Result<RouterSettings> {
        Ok(RouterSettings {
            limits: self.limits()?,
            base_path: BasePath::parse(&self.base_path)
                .map_err(|e| anyhow::anyhow!("TVBO_BASE_PATH {e}"))?,
            serve_metrics: self.metrics_bind.is_none(),
            ..RouterSettings::default()
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
        let acquire_timeout = std::time::Duration::try_from_secs_f64(self.db_acquire_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                anyhow::anyhow!("TVBO_DB_ACQUIRE_TIMEOUT must be a positive number of seconds")
            })?;
        Ok(crate::store::PoolSettings {
            max_connections: self.db_max_connections,
            acquire_timeout,
        })
    }
}
