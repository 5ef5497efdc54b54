//! The tests that need the process, and the machine's cores, to themselves: the metrics
//! (one process-global recorder and tracing subscriber; they compare scrapes before and
//! after their own traffic) and the fairness of the scheduler (a ratio of latencies).
//! Each holds [`ALONE`] while it runs, so they take turns; cargo runs a package's test
//! binaries one at a time (in an order it does not promise), so never beside the others.

#[macro_use]
#[path = "../it/common/mod.rs"]
mod common;

mod dashboard_list;
mod fairness;
mod metrics;

/// One test of this binary at a time.
pub static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
