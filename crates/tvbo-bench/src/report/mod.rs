//! Aggregation of benchmark runs and the report files: `report.md`, `summary.csv`,
//! `runs.csv`, `report.json`, one `<objective>.svg` per objective, and one
//! `achieved-<objective>.svg` per replayed trace.
//!
//! Each file uses only those listed above it: [`format`](mod@format) (numbers as the
//! tables and plots show them), [`phases`] (a replayed trace's fraction of the optimum
//! by phase of its scenario and over its day), [`aggregate`] (the runs summarised into a
//! [`Report`]), [`tables`] (Markdown tables with a column per algorithm), [`published`]
//! (the comparison with 002's Table 3), [`markdown`] (`report.md`), [`svg`] (the
//! plots), [`files`] (the CSV files, and writing every file).

pub mod aggregate;
pub mod files;
pub mod format;
pub mod markdown;
pub mod phases;
pub mod published;
pub mod svg;
pub mod tables;

pub use super::stats::MeanSe;
pub use aggregate::{Normalised, Report, RunSummary, Series, Summary};
pub use format::significant;
pub use phases::{AchievedSeries, PhaseSummary, ScenarioPhases};
