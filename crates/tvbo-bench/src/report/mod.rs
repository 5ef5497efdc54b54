//! Aggregation of benchmark runs and the report files: `report.md`, `summary.csv`,
//! `runs.csv`, `report.json` and one `<objective>.svg` per objective.
//!
//! Each file uses only those listed above it: [`format`](mod@format) (numbers as the
//! tables and plots show them), [`aggregate`] (the runs summarised into a [`Report`]),
//! [`markdown`] (`report.md`), [`svg`] (the plots), [`files`] (the CSV files, and writing
//! every file).

pub mod aggregate;
pub mod files;
pub mod format;
pub mod markdown;
pub mod svg;

pub use super::stats::MeanSe;
pub use aggregate::{Normalised, Report, RunSummary, Series, Summary};
pub use format::significant;
