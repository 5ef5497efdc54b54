//! Hand-written SVG, one line per algorithm (means over replications), with axes, labels
//! and a legend: per objective, the running average regret and the dataset size over
//! time; per replayed trace, the fraction of the optimum achieved over its day, its
//! scenario's phases shaded.

use std::fmt::Write as _;

use super::aggregate::Series;
use super::format::significant;
use super::phases::{AchievedSeries, ScenarioPhases};
use crate::algorithms::ALGORITHMS;

/// A colour per algorithm, stable across plots (by position in [`ALGORITHMS`]).
const PALETTE: [&str; 16] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#7f7f7f", "#e377c2",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#000000", "#e7ba52", "#ff1493", "#7b4173",
];

const WIDTH: f64 = 760.0;
const PANEL_HEIGHT: f64 = 240.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 175.0;
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

/// A line of a panel: an algorithm's values at times (`None`: no value there).
struct Line<'a> {
    algorithm: &'a str,
    times: &'a [f64],
    values: &'a [Option<f64>],
}

/// A shaded span of time named by its label: an occurrence of a scenario's phase.
struct Band {
    start: f64,
    end: f64,
    label: String,
    fill: &'static str,
}

/// Pale fills of the bands, one per condition.
const BAND_FILLS: [&str; 6] = [
    "#eeeeee", "#dcebf7", "#fbe9d3", "#e1f0dc", "#f1e0ec", "#ece6d6",
];

/// One panel: `lines` against time over [0, `horizon`], on `range` (from 0, or below, to
/// the data's top when `None`), over `bands`.
fn panel(
    svg: &mut String,
    top: f64,
    title: &str,
    horizon: f64,
    lines: &[Line],
    range: Option<(f64, f64)>,
    bands: &[Band],
) {
    let plot_width = WIDTH - LEFT - RIGHT;
    let (lo, hi) = range.unwrap_or_else(|| {
        let all: Vec<f64> = lines
            .iter()
            .flat_map(|l| l.values.iter().flatten().copied())
            .filter(|v| v.is_finite())
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
        let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (
            lo,
            if hi.is_finite() && hi > lo {
                hi
            } else {
                lo + 1.0
            },
        )
    });
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
    for band in bands {
        let width = x(band.end) - x(band.start);
        // A white edge at its start parts it from a band of the same fill before it.
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{top}" width="{width:.1}" height="{PANEL_HEIGHT}" fill="{}"/><line x1="{0:.1}" y1="{top}" x2="{0:.1}" y2="{2:.1}" stroke="white" stroke-width="2"/>"##,
            x(band.start),
            band.fill,
            top + PANEL_HEIGHT
        );
        // A label only where it fits (about 6 px a character).
        if width >= 6.0 * band.label.chars().count() as f64 + 6.0 {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
                x(band.start) + 3.0,
                top + 12.0,
                escape(&band.label)
            );
        }
    }
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
    for line in lines {
        let points: Vec<String> = line
            .times
            .iter()
            .zip(line.values)
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
            colour(line.algorithm),
            points.join(" ")
        );
    }
}

/// The opening of a plot `height` high, with its title.
fn start(svg: &mut String, height: f64, title: &str) {
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="18" font-size="15" font-weight="bold">{}</text>"##,
        escape(title)
    );
}

/// The legend, right of the panels: a line of each algorithm's colour and its name.
fn legend<'a>(svg: &mut String, algorithms: impl Iterator<Item = &'a str>) {
    let legend_x = WIDTH - RIGHT + 15.0;
    for (i, algorithm) in algorithms.enumerate() {
        let y = TOP + 20.0 + 18.0 * i as f64;
        let _ = writeln!(
            svg,
            r##"<line x1="{legend_x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="3"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            legend_x + 20.0,
            colour(algorithm),
            legend_x + 26.0,
            y + 4.0,
            escape(algorithm)
        );
    }
}

/// The items of `items` in the order of `order` (each item's algorithm by `algorithm`).
fn in_order<'a, T>(
    items: &[&'a T],
    order: &[String],
    algorithm: impl Fn(&T) -> &str,
) -> Vec<&'a T> {
    let algorithm = &algorithm;
    order
        .iter()
        .flat_map(|a| items.iter().copied().filter(move |s| algorithm(s) == a))
        .collect()
}

/// The plot of one objective: running average regret (top) and dataset size (bottom).
pub fn objective_plot(label: &str, horizon: f64, series: &[&Series], order: &[String]) -> String {
    let ordered = in_order(series, order, |s| &s.algorithm);
    let lines = |values: fn(&Series) -> &[Option<f64>]| -> Vec<Line> {
        ordered
            .iter()
            .map(|s| Line {
                algorithm: &s.algorithm,
                times: &s.times,
                values: values(s),
            })
            .collect()
    };
    let mut svg = String::new();
    start(&mut svg, TOP + 2.0 * PANEL_HEIGHT + GAP + 50.0, label);
    panel(
        &mut svg,
        TOP + 10.0,
        "average regret R_t / t (mean over replications)",
        horizon,
        &lines(|s| &s.average_regret),
        None,
        &[],
    );
    panel(
        &mut svg,
        TOP + 10.0 + PANEL_HEIGHT + GAP,
        "dataset size (mean over replications)",
        horizon,
        &lines(|s| &s.dataset_size),
        None,
        &[],
    );
    legend(&mut svg, ordered.iter().map(|s| s.algorithm.as_str()));
    let _ = writeln!(svg, "</svg>");
    svg
}

/// The plot of a replayed trace's fraction of the optimum achieved over its day: the
/// rolling mean of each algorithm ([`AchievedSeries`]), over the scenario's phases
/// shaded (a fill per condition) and named as `report.md`'s rows name them ("2. json").
pub fn achieved_plot(
    label: &str,
    horizon: f64,
    series: &[&AchievedSeries],
    order: &[String],
    scenario: &ScenarioPhases,
) -> String {
    let ordered = in_order(series, order, |s| &s.algorithm);
    let lines: Vec<Line> = ordered
        .iter()
        .map(|s| Line {
            algorithm: &s.algorithm,
            times: &s.times,
            values: &s.achieved,
        })
        .collect();
    let mut conditions: Vec<&str> = Vec::new();
    for phase in &scenario.phases {
        if !conditions.contains(&phase.condition.as_str()) {
            conditions.push(&phase.condition);
        }
    }
    let bands: Vec<Band> = scenario
        .bands(horizon)
        .into_iter()
        .map(|(k, start, end)| {
            let condition = &scenario.phases[k].condition;
            let shade = conditions.iter().position(|c| c == condition).unwrap_or(0);
            Band {
                start,
                end,
                label: format!("{}. {condition}", k + 1),
                fill: BAND_FILLS[shade % BAND_FILLS.len()],
            }
        })
        .collect();
    // From the tenth below the lowest value to 1, the optimum.
    let lowest = ordered
        .iter()
        .flat_map(|s| s.achieved.iter().flatten().copied())
        .fold(1.0, f64::min);
    let lo = ((lowest * 10.0).floor() / 10.0).clamp(0.0, 0.9);
    let window = ordered.first().map_or(0.0, |s| s.window);
    let mut svg = String::new();
    start(&mut svg, TOP + PANEL_HEIGHT + 60.0, label);
    panel(
        &mut svg,
        TOP + 10.0,
        &format!(
            "fraction of the optimum achieved (rolling mean over {} s, mean over replications)",
            tick_label(window)
        ),
        horizon,
        &lines,
        Some((lo, 1.0)),
        &bands,
    );
    legend(&mut svg, ordered.iter().map(|s| s.algorithm.as_str()));
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

    /// The achieved plot shades every occurrence of a phase within the horizon (a fill
    /// per condition), names it, and draws a line and a legend entry per algorithm.
    #[test]
    fn the_achieved_plot_shades_the_phases() {
        let scenario = crate::report::phases::tests::scenario();
        let line = |algorithm: &str, v: f64| AchievedSeries {
            objective: "trace-s".into(),
            algorithm: algorithm.into(),
            window: 20.0,
            times: vec![0.0, 100.0, 200.0],
            achieved: vec![Some(v), None, Some(v)],
        };
        let (bolt, random) = (line("bolt", 0.9), line("random", 0.45));
        let svg = achieved_plot(
            "S",
            200.0,
            &[&random, &bolt],
            &["bolt".to_string(), "random".to_string()],
            &scenario,
        );
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        // a (0–100), b (100–150), a again (150–200): three bands, two fills.
        assert_eq!(svg.matches(r##"fill="#eeeeee"/>"##).count(), 2, "{svg}");
        assert_eq!(svg.matches(r##"fill="#dcebf7"/>"##).count(), 1, "{svg}");
        assert_eq!(
            svg.matches(r##"fill="#555">1. a</text>"##).count(),
            2,
            "{svg}"
        );
        assert!(svg.contains(r##"fill="#555">2. b</text>"##), "{svg}");
        // The legend in the given order; the axis from 0.4 (below 0.45) to 1.
        assert!(svg.find(">bolt</text>").unwrap() < svg.find(">random</text>").unwrap());
        assert!(
            svg.contains(">0.4</text>") && svg.contains(">1</text>"),
            "{svg}"
        );
        assert!(svg.contains("rolling mean over 20 s"));
    }
}
