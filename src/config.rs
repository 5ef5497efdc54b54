//! Settings from the command line and the environment.

use std::net::SocketAddr;
use std::num::NonZeroU32;

use clap::{Parser, Subcommand, ValueEnum};

use crate::api::auth::AccessSettings;
use crate::api::headers::CorsOrigins;
use crate::api::stream_slots::StreamLimits;
use crate::api::{REQUEST_TIMEOUT, RouterSettings};
use crate::dashboard::BasePath;
use crate::delivery::AllowList;
use crate::engine::Limits;
use crate::server::ConnectionSettings;
use crate::session::service::DEFAULT_MAX_SESSIONS_PER_TENANT;
use crate::store::Migrations;

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
    /// Run the benchmarks (docs/benchmarks.md): the papers' experiments and real
    /// software's traces replayed, yours too; `tvbo bench --help` lists the suites and
    /// options. It runs the `tvbo-bench` binary beside this one (or on PATH) with these
    /// arguments.
    #[command(disable_help_flag = true)]
    Bench {
        /// The arguments of `tvbo bench`, `--help` included (`tvbo bench --help` lists
        /// them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Make, list and revoke API keys in the database (DATABASE_URL); docs/security.md.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Read every row of every session in the database (DATABASE_URL) and report the
    /// sessions whose rows do not decode; exits 1 if any (docs/operations.md).
    Check,
    /// Apply this binary's migrations to the database (DATABASE_URL) and exit: run once
    /// before replicas started with TVBO_MIGRATE=require (docs/operations.md).
    Migrate {
        /// Only report: exit 0 when the database has every migration of this binary, 1
        /// (naming the missing ones) when not; apply nothing.
        #[arg(long)]
        check: bool,
    },
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
    /// A file holding the database's password (a Docker or Kubernetes secret), put into
    /// a `postgres://` DATABASE_URL that has none, percent-encoded: any password works.
    /// One trailing newline is ignored.
    #[arg(long, env = "TVBO_DATABASE_PASSWORD_FILE", global = true)]
    pub database_password_file: Option<std::path::PathBuf>,
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
    /// What the server does with the database's schema at start: `apply` this binary's
    /// migrations it lacks (replicas take turns), or `require` them applied already, by
    /// `tvbo migrate` run once before the replicas (a Kubernetes Job, an init step), and
    /// start without migrating (it refuses to start on a database that lacks one).
    #[arg(long, env = "TVBO_MIGRATE", value_enum, default_value_t = Migrations::Apply, global = true)]
    pub migrate: Migrations,
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
    /// Most runs of one session that ended without a value (failed or abandoned); a
    /// failed run or an abandon beyond it answers 409 `too-many-ended-runs`.
    #[arg(
        long,
        env = "TVBO_MAX_ENDED_RUNS",
        default_value_t = Limits::DEFAULT_MAX_ENDED_RUNS,
        global = true
    )]
    pub max_ended_runs: usize,
    /// MiB of memory this replica's timeline reads may hold at once; a read waits for
    /// its share, then answers 503 `busy` (docs/security.md, "Memory per request").
    #[arg(
        long,
        env = "TVBO_READ_MEMORY_MIB",
        default_value_t = Limits::DEFAULT_READ_MEMORY >> 20,
        global = true
    )]
    pub read_memory_mib: usize,
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
    /// Model jobs (fits, acquisition searches) a replica runs at once, each on a core;
    /// more wait their turn, fairly across sessions. Default: one per core the process
    /// sees, which in a container without a CPU limit is every core of the machine: set it
    /// to the cores the container may use.
    #[arg(long, env = "TVBO_MODEL_WORKERS", global = true)]
    pub model_workers: Option<usize>,
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
    /// Most event streams (`GET /v1/events`) one API key may hold open on a replica; one
    /// more answers 429 `too-many-streams` with Retry-After.
    #[arg(
        long,
        env = "TVBO_MAX_STREAMS_PER_KEY",
        default_value_t = StreamLimits::DEFAULT_PER_KEY,
        global = true
    )]
    pub max_streams_per_key: usize,
    /// Most event streams one tenant's keys together may hold open on a replica; one more
    /// answers 429 `too-many-streams` with Retry-After.
    #[arg(
        long,
        env = "TVBO_MAX_STREAMS_PER_TENANT",
        default_value_t = StreamLimits::DEFAULT_PER_TENANT,
        global = true
    )]
    pub max_streams_per_tenant: usize,
    /// Most event streams open on a replica, every tenant's together; one more answers 503
    /// `busy`. Unset: half of TVBO_MAX_CONNECTIONS, so that the other half serves
    /// everything that is not a stream.
    #[arg(long, env = "TVBO_MAX_STREAMS", global = true)]
    pub max_streams: Option<usize>,
    /// Browser origins allowed to call the API from their pages (CORS), comma-separated
    /// and exact (`https://app.example.com,http://localhost:3000`); none when empty.
    #[arg(long, env = "TVBO_CORS_ORIGINS", default_value = "", global = true)]
    pub cors_origins: String,
    /// Where webhooks may go, comma-separated: names (`hooks.example.com`,
    /// `*.example.com`, whose addresses must be public), addresses (`10.0.0.5:8080`) and
    /// networks (`10.1.0.0/16`). Empty (the default): no webhook can be created
    /// (docs/events.md, "Outbound safety").
    #[arg(long, env = "TVBO_WEBHOOK_ALLOW", default_value = "", global = true)]
    pub webhook_allow: String,
    /// Seconds a replica keeps serving after SIGTERM, with `/readyz` answering 503 and
    /// every answer closing its connection, before it stops accepting connections and
    /// finishes the requests in flight; 0: none. SIGINT (Ctrl-C) stops without a drain.
    #[arg(
        long,
        env = "TVBO_DRAIN_PERIOD",
        default_value_t = crate::server::DEFAULT_DRAIN_PERIOD.as_secs_f64(),
        global = true
    )]
    pub drain_period: f64,
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

/// Refuses a PostgreSQL URL that does not parse, or that parses into a host, database or
/// parameters other than what its writer meant: a password's unencoded `@`, `/`, `?` or
/// `#` moves the split between password, host and database.
fn check_postgres_url(url: &str) -> anyhow::Result<()> {
    const HINT: &str = "a password holding any of @ / : ? # % must be percent-encoded \
                        (@ is %40, / is %2F), or given in TVBO_DATABASE_PASSWORD_FILE";
    // Not the URL in the messages: where it does not parse, no one can tell its password
    // from the rest.
    let parsed = url::Url::parse(url)
        .map_err(|e| anyhow::anyhow!("DATABASE_URL does not parse ({e}): {HINT}"))?;
    let misplaced = parsed.path().contains('@')
        || parsed.query().is_some_and(|query| query.contains('@'))
        || parsed.fragment().is_some();
    anyhow::ensure!(
        !misplaced,
        "DATABASE_URL has an @ after its host, or a #: {HINT}"
    );
    Ok(())
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
            draining: crate::api::drain::Draining::default(),
            webhook_allow: AllowList::parse(&self.webhook_allow).map_err(anyhow::Error::msg)?,
            streams: self.stream_limits()?,
            model_workers: match self.model_workers {
                Some(0) => anyhow::bail!("TVBO_MODEL_WORKERS must be at least 1"),
                workers => workers,
            },
        })
    }

    /// The caps on open event streams of these arguments.
    fn stream_limits(&self) -> anyhow::Result<StreamLimits> {
        let defaults = StreamLimits::for_connections(self.max_connections);
        let limits = StreamLimits {
            per_key: self.max_streams_per_key,
            per_tenant: self.max_streams_per_tenant,
            total: self.max_streams.unwrap_or(defaults.total),
        };
        for (name, value) in [
            ("TVBO_MAX_STREAMS_PER_KEY", limits.per_key),
            ("TVBO_MAX_STREAMS_PER_TENANT", limits.per_tenant),
            ("TVBO_MAX_STREAMS", limits.total),
        ] {
            anyhow::ensure!(value >= 1, "{name} must be at least 1");
        }
        anyhow::ensure!(
            self.max_streams
                .is_none_or(|total| total < self.max_connections),
            "TVBO_MAX_STREAMS must be below TVBO_MAX_CONNECTIONS, so that connections stay \
             for requests that are not streams"
        );
        Ok(limits)
    }

    /// DATABASE_URL as the store opens it: with the password of
    /// TVBO_DATABASE_PASSWORD_FILE when that is set. A PostgreSQL URL that would not
    /// connect where it says (a password with a `/`, `?` or `#` not percent-encoded makes
    /// part of it the host, or the database) is refused with a message saying so, rather
    /// than failing later with a DNS error about a host nobody wrote.
    pub fn resolved_database_url(&self) -> anyhow::Result<String> {
        let url = &self.database_url;
        let is_postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
        let Some(path) = &self.database_password_file else {
            if is_postgres {
                check_postgres_url(url)?;
            }
            return Ok(url.clone());
        };
        anyhow::ensure!(
            is_postgres,
            "TVBO_DATABASE_PASSWORD_FILE is set, but DATABASE_URL is not a postgres:// URL"
        );
        let read = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!(
                "reading TVBO_DATABASE_PASSWORD_FILE {}: {e}",
                path.display()
            )
        })?;
        let password = read.strip_suffix('\n').unwrap_or(&read);
        let password = password.strip_suffix('\r').unwrap_or(password);
        anyhow::ensure!(
            !password.is_empty(),
            "TVBO_DATABASE_PASSWORD_FILE {} is empty",
            path.display()
        );
        check_postgres_url(url)?;
        let mut parsed = url::Url::parse(url)?;
        anyhow::ensure!(
            parsed.password().is_none(),
            "DATABASE_URL holds a password and TVBO_DATABASE_PASSWORD_FILE is set: give it once"
        );
        anyhow::ensure!(
            !parsed.username().is_empty(),
            "DATABASE_URL names no user for the password of TVBO_DATABASE_PASSWORD_FILE \
             (postgres://user@host/database)"
        );
        // Every byte but the unreserved ones percent-encoded: `set_password` itself leaves
        // a `%` as it is, which the driver would then decode.
        const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'.')
            .remove(b'_')
            .remove(b'~');
        let encoded = percent_encoding::utf8_percent_encode(password, NOT_UNRESERVED).to_string();
        parsed
            .set_password(Some(&encoded))
            .map_err(|()| anyhow::anyhow!("DATABASE_URL cannot take a password"))?;
        Ok(parsed.into())
    }

    /// The drain before a stop of these arguments (zero: none).
    pub fn drain_period(&self) -> anyhow::Result<std::time::Duration> {
        std::time::Duration::try_from_secs_f64(self.drain_period).map_err(|_| {
            anyhow::anyhow!("TVBO_DRAIN_PERIOD must be 0 or a positive number of seconds")
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
        anyhow::ensure!(
            self.max_ended_runs >= 1,
            "TVBO_MAX_ENDED_RUNS must be at least 1"
        );
        let read_memory = self
            .read_memory_mib
            .checked_mul(1 << 20)
            .filter(|bytes| *bytes >= 1 << 20)
            .ok_or_else(|| anyhow::anyhow!("TVBO_READ_MEMORY_MIB must be at least 1"))?;
        Ok(Limits {
            max_pending: self.max_pending_suggestions,
            max_active_observations: self.max_active_observations,
            max_ended_runs: self.max_ended_runs,
            read_memory,
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
            migrations: self.migrate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tvbo bench ARGS` hands every argument to the bench, `--help` included (its help
    /// is the bench's own, which lists the suites).
    #[test]
    fn bench_passes_every_argument_on() {
        let cli = Cli::try_parse_from(["tvbo", "bench", "--help", "--suite", "real"]).unwrap();
        let Some(Command::Bench { args }) = cli.command else {
            panic!("not bench: {:?}", cli.command);
        };
        assert_eq!(args, ["--help", "--suite", "real"]);
    }

    fn args(url: &str, password_file: Option<&std::path::Path>) -> ServeArgs {
        let mut cli = Cli::parse_from(["tvbo", "--database-url", url]);
        cli.serve.database_password_file = password_file.map(Into::into);
        cli.serve
    }

    #[test]
    fn the_default_stream_caps_keep_half_the_default_connections() {
        let limits = args("sqlite::memory:", None).stream_limits().unwrap();
        assert_eq!(limits, StreamLimits::default());
        assert_eq!(
            StreamLimits::default(),
            StreamLimits::for_connections(ConnectionSettings::DEFAULT_MAX_CONNECTIONS)
        );
    }

    #[test]
    fn model_workers_are_the_cores_seen_unless_set_and_never_zero() {
        let mut set = args("sqlite::memory:", None);
        assert_eq!(set.router_settings().unwrap().model_workers, None);
        set.model_workers = Some(3);
        assert_eq!(set.router_settings().unwrap().model_workers, Some(3));
        set.model_workers = Some(0);
        let refused = set.router_settings().unwrap_err().to_string();
        assert!(refused.contains("TVBO_MODEL_WORKERS"), "{refused}");
    }

    #[test]
    fn a_password_file_is_percent_encoded_into_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "p@ss/w:rd?#%\n").unwrap();
        let url = args("postgres://tvbo@db:5432/tvbo?sslmode=require", Some(&file))
            .resolved_database_url()
            .unwrap();
        assert_eq!(
            url,
            "postgres://tvbo:p%40ss%2Fw%3Ard%3F%23%25@db:5432/tvbo?sslmode=require"
        );
        let parsed = url::Url::parse(&url).unwrap();
        assert_eq!(parsed.host_str(), Some("db"));
        assert_eq!(parsed.path(), "/tvbo");
        let decoded = percent_encoding::percent_decode_str(parsed.password().unwrap());
        assert_eq!(decoded.decode_utf8().unwrap(), "p@ss/w:rd?#%");
    }

    #[test]
    fn a_password_file_needs_a_postgres_url_without_a_password() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "secret").unwrap();
        for url in [
            "sqlite://tvbo.db",
            "postgres://tvbo:other@db/tvbo",
            "postgres://db/tvbo",
        ] {
            assert!(
                args(url, Some(&file)).resolved_database_url().is_err(),
                "{url}"
            );
        }
        std::fs::write(&file, "\n").unwrap();
        let empty = args("postgres://tvbo@db/tvbo", Some(&file)).resolved_database_url();
        assert!(empty.unwrap_err().to_string().contains("is empty"));
        let missing = args("postgres://tvbo@db/tvbo", Some(&dir.path().join("none")));
        assert!(missing.resolved_database_url().is_err());
    }

    #[test]
    fn unencoded_reserved_characters_in_a_password_are_refused_without_echoing_it() {
        for password in ["p/ss", "p@ss/w@rd", "pa#ss", "pa?ss"] {
            let url = format!("postgres://tvbo:{password}@db:5432/tvbo");
            let error = args(&url, None)
                .resolved_database_url()
                .unwrap_err()
                .to_string();
            assert!(error.contains("percent-encoded"), "{password}: {error}");
            assert!(!error.contains(password), "{password}: {error}");
        }
        for url in [
            "postgres://tvbo:p%2Fss@db:5432/tvbo",
            "postgres://tvbo:p@ss@db:5432/tvbo",
            "postgresql://tvbo@db/tvbo?sslmode=verify-full",
            "sqlite://tvbo.db",
            "sqlite::memory:",
        ] {
            assert_eq!(args(url, None).resolved_database_url().unwrap(), url);
        }
    }

    #[test]
    fn the_drain_period_may_be_zero_but_not_negative() {
        let mut serve = args("sqlite://tvbo.db", None);
        assert_eq!(
            serve.drain_period().unwrap(),
            crate::server::DEFAULT_DRAIN_PERIOD
        );
        serve.drain_period = 0.0;
        assert!(serve.drain_period().unwrap().is_zero());
        serve.drain_period = -1.0;
        assert!(serve.drain_period().is_err());
    }
}
