//! The `tvbo-bench` binary (also run as `tvbo bench`): the papers' experiments, written
//! as a report (docs/benchmarks.md).

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

use tvbo_bench::cli::Cli;

/// jemalloc, as in the server: the runs measure compute, and the allocator is part of it
/// (docs/decisions/0007).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    let args = Cli::parse().bench;
    // Quiet unless RUST_LOG says otherwise: the progress bars and the table speak.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let report = tvbo_bench::run(&args.options()).context("tvbo bench")?;
    print!("{}", report.markdown());
    eprintln!("report written to {}", args.output.display());
    Ok(())
}
