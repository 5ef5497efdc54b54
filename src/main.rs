//! The `tvbo` binary: `tvbo serve` (the default), `tvbo openapi`, `tvbo keys`, `tvbo check`,
//! `tvbo backup`, and `tvbo bench`, which runs the `tvbo-bench` binary.

use anyhow::Context;
use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::prelude::*;

use tvbo::config::{AuthMode, Cli, Command, KeysCommand, LogFormat};
use tvbo::store::{Migrations, PoolSettings, Store, StoreError};
use tvbo::{api, server};

/// jemalloc, not the system's malloc: a suggest frees its fit's megabytes just before its
/// acquisition allocates again, and glibc returned them to the system in between, to be
/// faulted in afresh (3–4 ms of a 48 ms suggest at n = 400; docs/decisions/0007).
/// jemalloc keeps freed pages for reuse for seconds before it returns them.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Logs, filtered by `RUST_LOG`, and the metrics' timer of model work, which sees the
/// stage spans whatever `RUST_LOG` says (the filter is the log layer's alone). The server
/// logs to standard output; the one-shot commands (`keys`, `backup`) to standard error,
/// so that their standard output is their result alone (`KEY=$(tvbo keys create ...)`).
fn init_logging(format: LogFormat, to_stderr: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info,sqlx=warn"));
    let (writer, terminal) = if to_stderr {
        (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
        )
    } else {
        (
            BoxMakeWriter::new(std::io::stdout),
            std::io::stdout().is_terminal(),
        )
    };
    let logs = match format {
        // Colours only on a terminal: not in `docker logs`, journald or a file.
        LogFormat::Human => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(terminal)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(tvbo::telemetry::model_work_layer())
        .init();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut cli = Cli::parse();
    if !matches!(
        cli.command,
        Some(Command::Openapi { .. } | Command::Bench { .. })
    ) {
        cli.serve.database_url = cli.serve.resolved_database_url()?;
    }
    match cli.command.unwrap_or(Command::Serve) {
        Command::Openapi { output } => {
            let json = api::openapi_json();
            if output == "-" {
                print!("{json}");
            } else {
                std::fs::write(&output, json).with_context(|| format!("writing {output}"))?;
            }
            Ok(())
        }
        Command::Bench { args } => bench(&args),
        Command::Backup { path } => {
            let args = cli.serve;
            init_logging(args.log_format, true);
            backup(&args.database_url, &args.pool_settings()?, &path).await
        }
        Command::Check => {
            let args = cli.serve;
            init_logging(args.log_format, true);
            let store = server::open_store(&args.database_url, &args.pool_settings()?).await?;
            let report = tvbo::session::check::check_database(store.as_ref()).await;
            store.close().await;
            let report = match report {
                Ok(report) => report,
                Err(e) => {
                    eprintln!("tvbo check: reading the database failed: {e}");
                    std::process::exit(2);
                }
            };
            for damaged in &report.damaged {
                for problem in &damaged.problems {
                    println!("session {}: {problem}", damaged.id);
                }
            }
            for damaged in &report.damaged_webhooks {
                for problem in &damaged.problems {
                    println!("webhook {}: {problem}", damaged.id);
                }
            }
            eprintln!(
                "{} sessions read, {} with rows that do not read back; {} webhooks read, {} \
                 with rows that do not read back",
                report.sessions,
                report.damaged.len(),
                report.webhooks,
                report.damaged_webhooks.len()
            );
            if !(report.damaged.is_empty() && report.damaged_webhooks.is_empty()) {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Migrate { check } => {
            let args = cli.serve;
            init_logging(args.log_format, true);
            migrate(&args.database_url, args.pool_settings()?, check).await
        }
        Command::Keys(command) => {
            let args = cli.serve;
            init_logging(args.log_format, true);
            let store = server::open_store(&args.database_url, &args.pool_settings()?).await?;
            let done = keys(store.as_ref(), command).await;
            store.close().await;
            done
        }
        Command::Serve => {
            let args = cli.serve;
            init_logging(args.log_format, false);
            let settings = args.router_settings()?;
            let drain_period = args.drain_period()?;
            let draining = settings.draining.clone();
            let connections = args.connection_settings()?;
            let store = server::open_store(&args.database_url, &args.pool_settings()?).await?;
            let listener = tokio::net::TcpListener::bind(args.bind)
                .await
                .with_context(|| format!("binding {}", args.bind))?;
            tracing::info!(
                address = %listener.local_addr()?,
                database = %server::redacted_database_url(&args.database_url),
                "tvbo listening"
            );
            if args.auth == AuthMode::Off && !args.bind.ip().is_loopback() {
                tracing::warn!(
                    address = %args.bind,
                    "TVBO_AUTH=off on an address beyond loopback: anyone who reaches it can \
                     read, change and delete every session (docs/security.md)"
                );
            }
            let metrics = match args.metrics_bind {
                Some(address) => Some(serve_metrics(address, store.clone()).await?),
                None => None,
            };
            let served = server::serve(
                listener,
                store.clone(),
                settings,
                connections,
                server::shutdown_signal(draining, drain_period),
            )
            .await;
            if let Some((stop, task)) = metrics {
                let _ = stop.send(());
                task.await.context("metrics listener")??;
            }
            store.close().await;
            tracing::info!("stopped");
            served
        }
    }
}

/// `tvbo migrate [--check]`: the database's missing migrations reported, then (without
/// `--check`) applied. Exits 1 under `--check` when some are missing.
async fn migrate(database_url: &str, settings: PoolSettings, check: bool) -> anyhow::Result<()> {
    let required = PoolSettings {
        migrations: Migrations::Require,
        ..settings
    };
    let pending = match server::open_store(database_url, &required).await {
        Ok(store) => {
            store.close().await;
            eprintln!("tvbo migrate: the database has every migration of this binary");
            return Ok(());
        }
        Err(e) => match e.downcast_ref::<StoreError>() {
            Some(StoreError::MigrationsPending { pending }) => pending.clone(),
            _ => return Err(e),
        },
    };
    if check {
        eprintln!("tvbo migrate --check: the database lacks migrations {pending:?}");
        std::process::exit(1);
    }
    eprintln!("tvbo migrate: applying migrations {pending:?}");
    let applied = PoolSettings {
        migrations: Migrations::Apply,
        ..settings
    };
    server::open_store(database_url, &applied)
        .await?
        .close()
        .await;
    eprintln!("tvbo migrate: done; the database has every migration of this binary");
    Ok(())
}

/// `tvbo keys create | list | revoke`: the keys of the database, written directly (a
/// running server sees a new key, or a revocation, from its next request).
async fn keys(store: &dyn Store, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create {
            name,
            tenant,
            admin,
            rate,
        } => {
            let mut made = tokio::task::spawn_blocking(move || {
                tvbo::keys::new_key(&name, tenant.as_deref(), admin)
            })
            .await??;
            made.row.rate_limit = rate.and_then(std::num::NonZeroU32::new);
            store.insert_api_key(&made.row).await?;
            eprintln!(
                "key {} for tenant {}{}{} (shown once; only its hash is stored):",
                made.row.id.simple(),
                made.row.tenant,
                if admin { ", admin" } else { "" },
                made.row
                    .rate_limit
                    .map_or_else(String::new, |rate| format!(", {rate} requests/s"))
            );
            println!("{}", made.key);
        }
        KeysCommand::List => {
            // The rate last: scripts that read the first six columns still work.
            println!("id\tname\ttenant\tadmin\tcreated\trevoked\trate");
            for key in store.list_api_keys().await? {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    key.id.simple(),
                    key.name,
                    key.tenant,
                    key.admin,
                    key.created_at.to_rfc3339(),
                    key.revoked_at
                        .map_or_else(|| "-".into(), |at| at.to_rfc3339()),
                    key.rate_limit
                        .map_or_else(|| "default".into(), |rate| rate.to_string())
                );
            }
        }
        KeysCommand::Revoke { id } => {
            let id = tvbo::keys::key_id(&id)
                .with_context(|| format!("{id:?} is neither a key id (32 hex digits) nor a key"))?;
            anyhow::ensure!(
                store.revoke_api_key(id).await?,
                "there is no unrevoked key {}",
                id.simple()
            );
            eprintln!("key {} revoked", id.simple());
        }
    }
    Ok(())
}

/// Serves `/metrics` on `address` (`TVBO_METRICS_BIND`) until told to stop.
async fn serve_metrics(
    address: std::net::SocketAddr,
    store: std::sync::Arc<dyn Store>,
) -> anyhow::Result<(
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
)> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding {address} (TVBO_METRICS_BIND)"))?;
    tracing::info!(address = %listener.local_addr()?, "metrics listening");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(tvbo::telemetry::serve(listener, store, async {
        let _ = stopped.await;
    }));
    Ok((stop, task))
}

/// `tvbo backup PATH`: an online, consistent copy of a SQLite database.
async fn backup(
    database_url: &str,
    pool: &tvbo::store::PoolSettings,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    if !database_url.starts_with("sqlite:") {
        anyhow::bail!(
            "tvbo backup copies SQLite databases; back up PostgreSQL with its own tools: \
             pg_dump --format=custom --file=tvbo.dump 'postgres://USER@HOST/DB' (restore \
             with pg_restore --clean --dbname='postgres://USER@HOST/DB' tvbo.dump; \
             docs/operations.md)"
        );
    }
    anyhow::ensure!(
        !path.exists(),
        "{} exists: tvbo backup writes a new file and overwrites nothing",
        path.display()
    );
    let source = tvbo::store::SqliteStore::database_file(database_url)?;
    anyhow::ensure!(
        source.as_deref().is_some_and(std::path::Path::exists),
        "there is no database file at {database_url} to back up"
    );
    let store = tvbo::store::SqliteStore::connect(database_url, pool)
        .await
        .with_context(|| format!("opening {database_url}"))?;
    let copied = store
        .backup_to(path)
        .await
        .with_context(|| format!("writing the backup to {}", path.display()));
    store.close().await;
    copied?;
    tracing::info!(backup = %path.display(), "backup written");
    Ok(())
}

/// `tvbo bench ARGS`: runs `tvbo-bench ARGS` (the papers' experiments live in their own
/// crate, not in the server) and exits with its status. The binary is looked for beside
/// this one, where `cargo build` and the release archive put it, then on PATH.
fn bench(args: &[std::ffi::OsString]) -> anyhow::Result<()> {
    let name = format!("tvbo-bench{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&name)))
        .filter(|path| path.is_file());
    let program = beside.map_or_else(|| std::ffi::OsString::from(&name), |p| p.into_os_string());
    let status = std::process::Command::new(&program)
        .args(args)
        .status()
        .with_context(|| {
            format!(
                "running {}: build it with `cargo build --release -p tvbo-bench`",
                program.to_string_lossy()
            )
        })?;
    std::process::exit(status.code().unwrap_or(1));
}
