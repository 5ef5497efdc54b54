//! The report files: `summary.csv` and `runs.csv` made here, and every file written into
//! the output directory (with `report.md`, `report.json` and the SVG plots).

use std::fmt::Write as _;
use std::path::Path;

use super::aggregate::{Report, Series};

impl Report {
    fn summary_csv(&self) -> String {
        let mut csv = String::from(
            "objective,algorithm,replications,average_regret_mean,average_regret_se,after_warmup_mean,after_warmup_se,iterations,final_dataset_size,mean_dataset_size,compute_per_iteration_s,published_mean,published_se,achieved_mean,achieved_se\n",
        );
        for s in &self.summaries {
            let (published_mean, published_se) =
                s.published.map_or((String::new(), String::new()), |p| {
                    (p.mean.to_string(), p.se.to_string())
                });
            let (achieved_mean, achieved_se) =
                s.achieved.map_or((String::new(), String::new()), |a| {
                    (a.mean.to_string(), a.se.to_string())
                });
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{published_mean},{published_se},{achieved_mean},{achieved_se}",
                s.objective,
                s.algorithm,
                s.replications,
                s.average_regret.mean,
                s.average_regret.se,
                s.average_regret_after_warmup.mean,
                s.average_regret_after_warmup.se,
                s.iterations,
                s.final_dataset_size,
                s.mean_dataset_size,
                s.compute_per_iteration
            );
        }
        csv
    }

    fn runs_csv(&self) -> String {
        let mut csv = String::from(
            "objective,algorithm,replication,seed,iterations,average_regret,after_warmup,final_dataset_size,mean_dataset_size,compute_per_iteration_s,wall_s,achieved\n",
        );
        for r in &self.runs {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                r.objective,
                r.algorithm,
                r.replication,
                r.seed,
                r.iterations,
                r.average_regret,
                r.average_regret_after_warmup,
                r.final_dataset_size,
                r.mean_dataset_size,
                r.compute_per_iteration,
                r.wall_seconds,
                r.achieved.map_or(String::new(), |a| a.to_string())
            );
        }
        csv
    }

    /// Writes every report file into `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("report.md"), self.markdown())?;
        std::fs::write(dir.join("summary.csv"), self.summary_csv())?;
        std::fs::write(dir.join("runs.csv"), self.runs_csv())?;
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("report.json"), json)?;
        for (name, label) in &self.objectives {
            let series: Vec<&Series> = self
                .series
                .iter()
                .filter(|s| &s.objective == name)
                .collect();
            if series.is_empty() {
                continue;
            }
            let svg = super::svg::objective_plot(label, self.horizon, &series, &self.algorithms);
            std::fs::write(dir.join(format!("{name}.svg")), svg)?;
        }
        Ok(())
    }
}
