//! The slow tier: tests whose subject is a server process (restarts, replicas, a
//! database that goes away, SIGKILL), a browser (Chromium), real time (timeouts and
//! connection caps) or a whole optimisation or benchmark run. Skip them with
//! `cargo test -- --skip slow::`.

mod bench;
mod connections;
mod dashboard_browser;
mod dashboard_compare;
mod dashboard_importance;
mod dashboard_live_requests;
mod dashboard_never_misleads;
mod dashboard_stream;
mod database_outages;
mod docs_ui;
mod drain;
mod drift_events;
mod migrate_command;
mod optimisation;
mod restart_process;
mod scale_out;
mod sqlite_durability;
mod stream_notices;
mod webhooks;
