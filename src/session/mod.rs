//! Sessions: the service that runs the suggest/observe lifecycle over a store, its fair
//! scheduler of model work, and the views it answers with.

pub mod scheduler;
pub mod service;
pub mod views;

// Old paths of the domain's modules, for the bench code until it moves over.
pub use crate::domain::{config, priors, space};
