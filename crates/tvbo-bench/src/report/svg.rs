//! Hand-written SVG: per objective, the running average regret and the dataset size over
//! time, one line per algorithm (means over replications), with axes, labels and a legend.

use std::fmt::Write as _;

use super::aggregate::Series;
use super::format::significant;
use crate::algorithms::ALGORITHMS;

/// A colour per algorithm, stable across plots (by position in [`ALGORITHMS`]).
const PALETTE: [&str; 16] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#7f7f7f", "#e377c2",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#000000", "#e7ba52", "#843c39", "#7b4173",
];

const WIDTH: f64 = 760.0;
const PANEL_HEIGHT: f64 = 240.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const GAP: f64 = 60.0;

fn colour(algorithm: &str) -> &'static str {
    let index = ALGORITHMS
        .iter()
        .position(|a| a.name == algorithm)
        .unwrap_or(ALGORITHMS.len());
    PALETTE[index % PALETTE.len()]
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// "Nice" tick positions covering [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * power);
    let start = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut v = start;
    while v <= hi + 1e-9 * span {
        out.push(if v.abs() < 1e-12 * span { 0.0 } else { v });
        v += step;
    }
    out
}

/// A tick value without trailing zeros (ticks are round numbers).
fn tick_label(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e6 {
        format!("{v:.0}")
    } else {
        let text = significant(v);
        if text.contains('.') && !text.contains('e') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    }
}

/// One panel: `values(series)` against time.
fn panel(
    svg: &mut String,
    top: f64,
    title: &str,
    horizon: f64,
    series: &[&Series],
    values: impl Fn(&Series) -> &[Option<f64>],
) {
    let plot_width = WIDTH - LEFT - RIGHT;
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| values(s).iter().flatten().copied())
        .filter(|v| v.is_finite())
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let mut hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !hi.is_finite() || hi <= lo {
        hi = lo + 1.0;
    }
    let y_ticks = ticks(lo, hi);
    let hi = y_ticks.last().copied().unwrap_or(hi).max(hi);
    let x = |t: f64| LEFT + t / horizon * plot_width;
    let y = |v: f64| top + PANEL_HEIGHT - (v - lo) / (hi - lo) * PANEL_HEIGHT;
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{}</text>"##,
        LEFT,
        top - 8.0,
        escape(title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{top}" width="{plot_width}" height="{PANEL_HEIGHT}" fill="none" stroke="#333"/>"##
    );
    for v in &y_ticks {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" font-size="11" text-anchor="end">{4}</text>"##,
            y(*v),
            LEFT + plot_width,
            LEFT - 6.0,
            y(*v) + 4.0,
            tick_label(*v)
        );
    }
    for t in ticks(0.0, horizon) {
        let _ = writeln!(
            svg,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#333"/><text x="{0:.1}" y="{3:.1}" font-size="11" text-anchor="middle">{4}</text>"##,
            x(t),
            top + PANEL_HEIGHT,
            top + PANEL_HEIGHT + 5.0,
            top + PANEL_HEIGHT + 18.0,
            tick_label(t)
        );
    }
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">time (s)</text>"##,
        LEFT + plot_width / 2.0,
        top + PANEL_HEIGHT + 34.0
    );
    for s in series {
        let points: Vec<String> = s
            .times
            .iter()
            .zip(values(s))
            .filter_map(|(t, v)| {
                v.filter(|v| v.is_finite())
                    .map(|v| format!("{:.1},{:.1}", x(*t), y(v)))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let _ = writeln!(
            svg,
            r##"<polyline fill="none" stroke="{}" stroke-width="1.8" points="{}"/>"##,
            colour(&s.algorithm),
            points.join(" ")
        );
    }
}

/// The plot of one objective: running average regret (top) and dataset size (bottom).
pub fn objective_plot(label: &str, horizon: f64, series: &[&Series], order: &[String]) -> String {
    let mut ordered: Vec<&Series> = Vec::new();
    for a in order {
        ordered.extend(series.iter().filter(|s| &s.algorithm == a));
    }
    let height = TOP + 2.0 * PANEL_HEIGHT + GAP + 50.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="18" font-size="15" font-weight="bold">{}</text>"##,
        escape(label)
    );
    panel(
        &mut svg,
        TOP + 10.0,
        "average regret R_t / t (mean over replications)",
        horizon,
        &ordered,
        |s| &s.average_regret,
    );
    panel(
        &mut svg,
        TOP + 10.0 + PANEL_HEIGHT + GAP,
        "dataset size (mean over replications)",
        horizon,
        &ordered,
        |s| &s.dataset_size,
    );
    let legend_x = WIDTH - RIGHT + 15.0;
    for (i, s) in ordered.iter().enumerate() {
        let y = TOP + 20.0 + 18.0 * i as f64;
        let _ = writeln!(
            svg,
            r##"<line x1="{legend_x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="3"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            legend_x + 20.0,
            colour(&s.algorithm),
            legend_x + 26.0,
            y + 4.0,
            escape(&s.algorithm)
        );
    }
    let _ = writeln!(svg, "</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(20.0), "20");
        assert_eq!(tick_label(0.5), "0.5");
        assert_eq!(tick_label(0.25), "0.25");
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            ticks(0.0, 600.0),
            vec![0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]
        );
        let t = ticks(0.0, 3.7);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.len() >= 4 && t.len() <= 7);
    }

    #[test]
    fn the_plot_has_axes_lines_and_a_legend() {
        let s = Series {
            objective: "f".into(),
            algorithm: "bolt".into(),
            times: vec![10.0, 20.0],
            average_regret: vec![Some(2.0), Some(1.0)],
            dataset_size: vec![None, Some(15.0)],
        };
        let svg = objective_plot("F <1>", 20.0, &[&s], &["bolt".to_string()]);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("F &lt;1&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">bolt</text>"));
        assert!(svg.contains("time (s)"));
    }
}
