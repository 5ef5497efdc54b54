//! Settings from the command line and the environment.

use std::net::SocketAddr;

use clap::{Parser, Subcommand, ValueEnum};

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
}

impl ServeArgs {
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
