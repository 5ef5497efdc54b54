//! Sessions: the service that runs the suggest/observe lifecycle over a store, its fair
//! scheduler of model work, and the views it answers with.

pub mod check;
pub mod error;
mod events;
pub mod idempotency;
pub mod listing;
pub mod read_budget;
mod read_model;
mod reads;
pub mod resume;
pub mod scheduler;
pub mod service;
pub mod snapshots;
pub mod stream;
pub mod timeline;
pub mod tracking;
pub mod views;
