//! tvbo: time-varying Bayesian optimization as a service.
pub mod acquisition;
pub mod gp;
pub mod optim;
