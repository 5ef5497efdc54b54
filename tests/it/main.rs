//! The server crate's integration tests, one binary (modules below): a real server on port
//! 0 per test ([`common::TestServer`]) over SQLite, and over PostgreSQL where
//! `TVBO_TEST_POSTGRES_URL` names one. `alone` (the metrics' process-global recorder,
//! the scheduler's fairness: tests that need the process to themselves) and
//! `model_memory` (its own global allocator) are binaries of their own.
//!
//! [`slow`] holds the tests whose subject is a process, a browser, real time or a whole
//! optimisation run; the rest run in about 45 s on two cores, once built:
//! `cargo test -- --skip slow::` (a plain `cargo test` runs everything).

#[macro_use]
mod common;

mod access;
mod api_contract;
mod bad_input;
mod bounded_reads;
mod context_sessions;
mod delivery_fairness;
mod deploy_docs;
mod drifting_level;
mod engine_parity;
mod events_api;
mod extreme_values;
mod failed_runs;
mod forgetting;
mod hardening;
mod headers;
mod hostile_input;
mod idempotent_retries;
mod key_checks;
mod layering;
mod lengthscales;
mod lifecycle;
mod listing;
mod openapi;
mod prior_selection;
mod slow;
mod snapshots;
mod store_suite;
mod stream_caps;
mod unreadable_events;
mod warping;
mod webhook_safety;
