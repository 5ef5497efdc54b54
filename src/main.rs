//! The `tvbo` binary: `tvbo serve` (the default), `tvbo bench` and `tvbo openapi`.

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

use tvbo::config::{Cli, Command, LogFormat};
use tvbo::{api, server};

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info,sqlx=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
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
        Command::Bench(args) => {
            // Quiet unless RUST_LOG says otherwise: the progress bars and the table speak.
            let filter =
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .init();
            let options = args.options();
            // CPU-bound work: off the async runtime, on plain threads.
            let report = tokio::task::spawn_blocking(move || tvbo::bench::run(&options))
                .await
                .context("bench thread")??;
            print!("{}", report.markdown());
            eprintln!("report written to {}", args.output.display());
            Ok(())
        }
        Command::Serve => {
            let args = cli.serve;
            init_logging(args.log_format);
            let limits = args.limits()?;
            let store = server::open_store(&args.database_url, &args.pool_settings()?).await?;
            let listener = tokio::net::TcpListener::bind(args.bind)
                .await
                .with_context(|| format!("binding {}", args.bind))?;
            tracing::info!(
                address = %listener.local_addr()?,
                database = %server::redacted_database_url(&args.database_url),
                "tvbo listening"
            );
            server::serve(listener, store, limits, server::shutdown_signal()).await
        }
    }
}
