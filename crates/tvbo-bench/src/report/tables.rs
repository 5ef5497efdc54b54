//! Markdown tables with a column per algorithm, for `report.md`: the header, and a row
//! that marks the best value in bold where there is more than one to compare.

use std::fmt::Write as _;

use super::aggregate::Report;
use crate::stats::MeanSe;

impl Report {
    /// Whether the report compares algorithms: only then does it call one the best.
    pub(super) fn ranked(&self) -> bool {
        self.algorithms.len() >= 2
    }

    /// A row of a table with a column per algorithm: `label`, then `show` of each
    /// algorithm's value (`–` where it has none), the best in bold where the row has two
    /// or more values; the best is the one `pick` (`f64::min` or `f64::max`) keeps of the
    /// means.
    pub(super) fn ranked_row(
        &self,
        md: &mut String,
        label: &str,
        value: impl Fn(&str) -> Option<MeanSe>,
        pick: fn(f64, f64) -> f64,
        show: impl Fn(MeanSe) -> String,
    ) {
        let values: Vec<Option<MeanSe>> = self.algorithms.iter().map(|a| value(a)).collect();
        let present: Vec<f64> = values.iter().flatten().map(|m| m.mean).collect();
        let best = (present.len() >= 2)
            .then(|| present.iter().copied().reduce(pick))
            .flatten();
        let _ = write!(md, "| {label} |");
        for v in values {
            let _ = match v {
                Some(m) if Some(m.mean) == best => write!(md, " **{}** |", show(m)),
                Some(m) => write!(md, " {} |", show(m)),
                None => write!(md, " – |"),
            };
        }
        let _ = writeln!(md);
    }

    /// The objectives (name, label) for which `has` holds with at least one algorithm.
    pub(super) fn objectives_where(
        &self,
        has: impl Fn(&str, &str) -> bool,
    ) -> Vec<&(String, String)> {
        self.objectives
            .iter()
            .filter(|(name, _)| self.algorithms.iter().any(|a| has(name, a)))
            .collect()
    }

    /// The header of a table whose first column is `first`, then one per algorithm.
    pub(super) fn algorithm_columns(&self, md: &mut String, first: &str) {
        let _ = writeln!(
            md,
            "| {first} | {} |\n|---|{}",
            self.algorithms.join(" | "),
            "---|".repeat(self.algorithms.len())
        );
    }
}
