//! `report.md`'s comparison with 002's published Table 3, where the runs follow its
//! protocol (its horizon) on its objectives.

use std::fmt::Write as _;

use super::aggregate::{Normalised, Report, Summary, normalise};
use super::format::significant;
use crate::reference;
use crate::stats::MeanSe;

impl Report {
    /// The objectives of the report with published results (002's Table 3), each cell
    /// "ours (runs) / published"; with at least two algorithms, the best of each side in
    /// bold, and for every row where all algorithms have run the two orders and how many
    /// pairs of algorithms they order alike, and the normalised regret of those rows.
    /// Empty if no objective of the report was published, or the runs are not of the
    /// published horizon.
    pub(super) fn published_comparison(&self) -> String {
        if self.horizon != reference::TABLE_3_HORIZON {
            return String::new();
        }
        let rows = self.objectives_where(|name, a| reference::table_3(name, a).is_some());
        if rows.is_empty() {
            return String::new();
        }
        let ranked = self.algorithms.len() >= 2;
        let mut md = String::new();
        let _ = writeln!(
            md,
            "Beside 002's Table 3: each cell is ours, mean ± standard error over the replications recorded (how many in parentheses) / 002's, over 10 replications{}{}:\n",
            if ranked {
                "; bold: the best of the row on each side (ours only where every algorithm has run)"
            } else {
                ""
            },
            if self.algorithm_options.is_empty() {
                ""
            } else {
                "; ours with the algorithm options above, 002's with its own settings"
            }
        );
        self.algorithm_columns(&mut md, "objective");
        let mut orders = String::new();
        // The summaries of the complete rows, ours and the published ones.
        let mut complete_ours: Vec<Summary> = Vec::new();
        let mut complete_published: Vec<Summary> = Vec::new();
        for (name, label) in rows {
            let ours: Vec<Option<&Summary>> = self
                .algorithms
                .iter()
                .map(|a| self.summary(name, a))
                .collect();
            let published: Vec<Option<MeanSe>> = self
                .algorithms
                .iter()
                .map(|a| reference::table_3(name, a))
                .collect();
            let complete = ranked && ours.iter().all(Option::is_some);
            let best = |values: &mut dyn Iterator<Item = f64>| values.fold(f64::INFINITY, f64::min);
            let our_best = best(&mut ours.iter().flatten().map(|s| s.average_regret.mean));
            let published_best = best(&mut published.iter().flatten().map(|p| p.mean));
            let _ = write!(md, "| {label} |");
            for (summary, paper) in ours.iter().zip(&published) {
                let our_cell = match summary {
                    Some(s) => {
                        let cell = format!(
                            "{} ± {}",
                            significant(s.average_regret.mean),
                            significant(s.average_regret.se)
                        );
                        let cell = if complete && s.average_regret.mean == our_best {
                            format!("**{cell}**")
                        } else {
                            cell
                        };
                        format!("{cell} ({})", s.replications)
                    }
                    None => "–".to_string(),
                };
                let paper_cell = match paper {
                    Some(p) if ranked && p.mean == published_best => {
                        format!("**{} ± {}**", p.mean, p.se)
                    }
                    Some(p) => format!("{} ± {}", p.mean, p.se),
                    None => "–".to_string(),
                };
                let _ = write!(md, " {our_cell} / {paper_cell} |");
            }
            let _ = writeln!(md);
            if complete {
                for (summary, paper) in ours.iter().flatten().zip(&published) {
                    complete_ours.push((*summary).clone());
                    if let Some(paper) = paper {
                        complete_published.push(Summary {
                            average_regret: *paper,
                            ..(*summary).clone()
                        });
                    }
                }
                let _ = writeln!(orders, "{}", self.order_line(label, &ours, &published));
            }
        }
        if !complete_ours.is_empty() {
            self.normalised_beside_published(&mut md, &complete_ours, &complete_published);
        }
        if !orders.is_empty() {
            let _ = writeln!(
                md,
                "\nOrder of the mean average regrets, best first, where every algorithm has run:\n\n{orders}"
            );
        } else {
            let _ = writeln!(md);
        }
        md
    }

    /// A row's algorithms in the order of their mean average regrets, best first, ours
    /// and 002's, and how many pairs the two orders order alike.
    fn order_line(
        &self,
        label: &str,
        ours: &[Option<&Summary>],
        published: &[Option<MeanSe>],
    ) -> String {
        let rank = |value: &dyn Fn(usize) -> Option<f64>| -> Vec<&str> {
            let mut ranked: Vec<(f64, &str)> = (0..self.algorithms.len())
                .filter_map(|k| value(k).map(|v| (v, self.algorithms[k].as_str())))
                .collect();
            ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
            ranked.into_iter().map(|(_, a)| a).collect()
        };
        let our_order = rank(&|k| ours[k].map(|s| s.average_regret.mean));
        let published_order = rank(&|k| published[k].map(|p| p.mean));
        let (alike, pairs) = reference::concordant_pairs(&our_order, &published_order);
        format!(
            "- {label}: ours {}; 002 {} ({alike} of {pairs} pairs in the same order)",
            our_order.join(" < "),
            published_order.join(" < ")
        )
    }

    /// 002's normalised regret over the rows where every algorithm has run, ours / 002's
    /// (Table 3's "Overall" row also holds ABO and the real-data rows).
    fn normalised_beside_published(
        &self,
        md: &mut String,
        ours: &[Summary],
        published: &[Summary],
    ) {
        let ours = normalise(ours, &self.algorithms);
        let published = normalise(published, &self.algorithms);
        let _ = write!(md, "| normalised, rows where all have run |");
        for a in &self.algorithms {
            let cell = |values: &[Normalised]| {
                values.iter().find(|n| &n.algorithm == a).map_or_else(
                    || "–".to_string(),
                    |n| {
                        format!(
                            "{:.2} ± {:.2}",
                            n.normalised_regret.mean, n.normalised_regret.se
                        )
                    },
                )
            };
            let _ = write!(md, " {} / {} |", cell(&ours), cell(&published));
        }
        let _ = writeln!(md);
    }
}

#[cfg(test)]
mod tests {
    use crate::report::aggregate::tests::summary;
    use crate::report::markdown::tests::report;

    #[test]
    fn the_paper_comparison_puts_ours_beside_table_3() {
        let summaries = vec![
            summary("hartmann3", "gp-ucb", 0.5),
            summary("hartmann3", "w-dbo", 0.25),
            summary("hartmann3", "bolt", 0.75),
            summary("shekel", "bolt", 2.0),
        ];
        let md = report(600.0, summaries.clone()).markdown();
        assert!(md.contains("Beside 002's Table 3"), "{md}");
        // Complete row: the best of each side in bold, runs in parentheses.
        assert!(
            md.contains("| Hartmann (3) | 0.500 ± 0 (1) / 1.45 ± 0.15 | **0.250 ± 0** (1) / 0.47 ± 0.08 | 0.750 ± 0 (1) / **0.3 ± 0.02** |"),
            "{md}"
        );
        // Incomplete row: ours is never bold, missing cells are dashes.
        assert!(
            md.contains("| Shekel (4) | – / 2.51 ± 0.06 | – / 2.06 ± 0.09 | 2.00 ± 0 (1) / **1.83 ± 0.09** |"),
            "{md}"
        );
        // The order only of the complete row; 002 orders bolt < w-dbo < gp-ucb, we
        // w-dbo < gp-ucb < bolt: of three pairs only (w-dbo, gp-ucb) agrees.
        assert!(
            md.contains("- Hartmann (3): ours w-dbo < gp-ucb < bolt; 002 bolt < w-dbo < gp-ucb (1 of 3 pairs in the same order)"),
            "{md}"
        );
        assert!(!md.contains("- Shekel (4)"), "{md}");
        // Normalised over the complete row only: ours w-dbo 0, gp-ucb 0.5, bolt 1; 002's
        // (0.47 − 0.3)/(1.45 − 0.3) for w-dbo.
        assert!(
            md.contains("| normalised, rows where all have run | 0.50 ± 0.00 / 1.00 ± 0.00 | 0.00 ± 0.00 / 0.15 ± 0.00 | 1.00 ± 0.00 / 0.00 ± 0.00 |"),
            "{md}"
        );
        assert!(!md.contains("Algorithm options"), "{md}");
        // One algorithm: the values side by side, nothing called the best.
        let mut alone = report(600.0, vec![summary("hartmann3", "bolt", 0.75)]);
        alone.algorithms = vec!["bolt".into()];
        let md = alone.markdown();
        assert!(
            md.contains("| Hartmann (3) | 0.750 ± 0 (1) / 0.3 ± 0.02 |"),
            "{md}"
        );
        assert!(!md.contains("**") && !md.contains("best"), "{md}");
        assert!(
            !md.contains("pairs in the same order") && !md.contains("normalised"),
            "{md}"
        );
        // Runs with options say so in the settings and beside 002's numbers.
        let mut with_options = report(600.0, summaries.clone());
        let options = serde_json::json!({"alpha": 0.5});
        with_options
            .algorithm_options
            .insert("w-dbo".into(), options.as_object().unwrap().clone());
        let md = with_options.markdown();
        assert!(
            md.contains("ran with their defaults): `w-dbo` `{\"alpha\":0.5}`."),
            "{md}"
        );
        assert!(md.contains("ours with the algorithm options above"), "{md}");
        // Another horizon is another protocol: no comparison.
        assert!(!report(60.0, summaries).markdown().contains("Table 3"));
    }
}
