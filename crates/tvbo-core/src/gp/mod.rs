//! Gaussian-process model over (space × time): kernels, the exact model with an
//! incrementally maintained Cholesky factor, and marginal-likelihood fitting.

pub mod arms;
pub mod categories;
mod coordinates;
mod exp;
pub mod fit;
pub mod kernel;
pub mod lengthscales;
mod linalg;
pub mod model;
mod special;
mod vectorise;

pub use categories::Categories;
pub use fit::{
    FitOptions, Fixed, HyperBounds, SearchStart, fit_hyperparameters, log_marginal_likelihood,
};
pub use kernel::{KernelKind, KernelSpec};
pub use lengthscales::LengthscaleRatios;
pub use model::{DriftingLevel, Gp, GpError, Hyperparameters, Prediction};
pub mod relevance;
