//! The server crate's integration tests, one binary (modules below): a real server on port
//! 0 per test ([`common::TestServer`]) over SQLite, and over PostgreSQL where
//! `TVBO_TEST_POSTGRES_URL` names one. `alone` (the metrics' process-global recorder,
//! the scheduler's fairness: tests that need the process to themselves) and
//! `model_memory` (its own global allocator) are binaries of their own.

#[macro_use]
mod common;

mod access;
mod api_contract;
mod bad_input;
mod bench;
mod connections;
mod dashboard_browser;
mod database_outages;
mod deploy_docs;
mod docs_ui;
mod engine_parity;
mod extreme_values;
mod forgetting;
mod hardening;
mod headers;
mod hostile_input;
mod idempotent_retries;
mod key_checks;
mod layering;
mod lifecycle;
mod openapi;
mod optimisation;
mod prior_selection;
mod restart_process;
mod scale_out;
mod snapshots;
mod sqlite_durability;
mod store_suite;
