//! The two SVG plots (plotters' SVG backend; no font backend, so text is laid out by plotters'
//! size estimate and drawn by the SVG viewer's sans-serif font).

use super::filters;
use super::Run;
use plotters::coord::Shift;
use plotters::prelude::*;
use siftdb::{Error, Result};
use siftdb_bench_kit::survey::SurveyRow;
use std::path::Path;

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::io("drawing an SVG plot", std::io::Error::other(e.to_string()))
}

/// A line of points with its legend label.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
    /// Fixed colour (reference curves); `None` takes the next palette colour.
    color: Option<RGBColor>,
}

/// One panel: lines against bits per key, log or linear y.
struct Panel<'a> {
    title: &'a str,
    y_label: &'a str,
    log_y: bool,
    lines: &'a [Line],
    /// Where the legend goes (a corner the lines leave empty).
    legend: SeriesLabelPosition,
}

fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 10] = [
        RGBColor(0, 0, 0),
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
        RGBColor(188, 189, 34),
    ];
    COLORS[i % COLORS.len()]
}

fn draw_panel(area: &DrawingArea<SVGBackend, Shift>, p: &Panel) -> Result<()> {
    let pts = || p.lines.iter().flat_map(|l| l.points.iter().copied());
    let x_max = pts().map(|(x, _)| x).fold(1.0, f64::max).ceil();
    let y_pos = || pts().map(|(_, y)| y).filter(|&y| y > 0.0);
    let y_max = y_pos().fold(f64::MIN_POSITIVE, f64::max);
    let mut chart = ChartBuilder::on(area);
    chart.caption(p.title, ("sans-serif", 20)).margin(12).x_label_area_size(45);
    chart.y_label_area_size(70);
    let x_desc = "filter bits per key (measured)";
    if p.log_y {
        let y_min = y_pos().fold(f64::MAX, f64::min).min(y_max);
        let lo = 10f64.powf((y_min / 2.0).log10().floor());
        let hi = 10f64.powf((y_max * 2.0).log10().ceil());
        let mut c = chart.build_cartesian_2d(0.0..x_max, (lo..hi).log_scale()).map_err(plot_err)?;
        c.configure_mesh()
            .x_desc(x_desc)
            .y_desc(p.y_label)
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(plot_err)?;
        draw_lines(&mut c, p.lines, p.legend.clone())?;
    } else {
        let mut c = chart.build_cartesian_2d(0.0..x_max, 0.0..y_max * 1.1).map_err(plot_err)?;
        c.configure_mesh().x_desc(x_desc).y_desc(p.y_label).draw().map_err(plot_err)?;
        draw_lines(&mut c, p.lines, p.legend.clone())?;
    }
    Ok(())
}

fn draw_lines<'a, X, Y>(
    c: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    lines: &[Line],
    legend: SeriesLabelPosition,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, line) in lines.iter().enumerate() {
        let col = line.color.unwrap_or(color(i));
        let style = col.stroke_width(2);
        let pts: Vec<(f64, f64)> = line.points.iter().copied().filter(|p| p.1 > 0.0).collect();
        let series = if line.dashed {
            c.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, style)).map_err(plot_err)?
        } else {
            c.draw_series(LineSeries::new(pts.clone(), style)).map_err(plot_err)?
        };
        series
            .label(line.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        if !line.dashed {
            c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, col.filled())))
                .map_err(plot_err)?;
        }
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(plot_err)
}

/// `blocks_per_lookup.svg`: blocks read per missing-key lookup (log y) and per present-key
/// lookup (linear y) against the measured filter bits per key, one line per policy; the
/// no-filter baseline is a dashed horizontal line.
pub fn blocks_per_lookup(path: &Path, runs: &[Run], policies: &[&'static str]) -> Result<()> {
    // The right edge of both panels (`draw_panel` takes the largest x): one past the data.
    let x_max = runs.iter().filter_map(Run::actual_bits_per_key).fold(1.0, f64::max).ceil() + 1.0;
    let mut missing = Vec::new();
    let mut present = Vec::new();
    for &name in policies {
        let mut pts: Vec<(f64, f64, f64)> = runs
            .iter()
            .filter(|r| r.policy.name() == name)
            .filter_map(|r| {
                let m = r.outcome.as_ref().ok()?;
                Some((
                    m.total.bits_per_key(),
                    m.total.blocks_per_missing,
                    m.total.blocks_per_present,
                ))
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let baseline = pts.len() == 1 && pts[0].0 == 0.0;
        if baseline {
            // The no-filter run has 0 bits per key: drawn across the whole x range.
            let (_, m, p) = pts[0];
            pts = vec![(0.0, m, p), (x_max, m, p)];
        }
        let label = name.to_string();
        missing.push(Line {
            label: label.clone(),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            dashed: baseline,
            color: None,
        });
        present.push(Line {
            label,
            points: pts.iter().map(|p| (p.0, p.2)).collect(),
            dashed: baseline,
            color: None,
        });
    }
    // Rendered into memory, then written without following a link at `path` (csv::write).
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1280, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (left, right) = root.split_horizontally(640);
        draw_panel(
            &left,
            &Panel {
                title: "Missing-key lookups",
                y_label: "data blocks read per lookup",
                log_y: true,
                lines: &missing,
                legend: SeriesLabelPosition::LowerLeft,
            },
        )?;
        draw_panel(
            &right,
            &Panel {
                title: "Present-key lookups",
                y_label: "data blocks read per lookup",
                log_y: false,
                lines: &present,
                legend: SeriesLabelPosition::MiddleRight,
            },
        )?;
        root.present().map_err(plot_err)?;
    }
    super::csv::write(path, &svg)
}

/// `fpr_vs_bits.svg`: measured FPR against bits per key (log y), one line per filter family of
/// the survey, with the classic Bloom formula and the `2^-b` bound dashed.
pub fn fpr_vs_bits(path: &Path, rows: &[SurveyRow]) -> Result<()> {
    let mut lines: Vec<Line> = filters::lines(rows)
        .into_iter()
        .map(|(label, points)| Line { label, points, dashed: false, color: None })
        .collect();
    let x_max = rows.iter().map(|r| r.bits_per_key).fold(1.0, f64::max).ceil() + 1.0;
    let grid: Vec<f64> = (2..=((x_max * 4.0) as usize)).map(|i| i as f64 / 4.0).collect();
    lines.push(Line {
        label: "classic Bloom, theory (optimal k)".into(),
        points: grid.iter().map(|&b| (b, filters::bloom_theory(b))).collect(),
        dashed: true,
        color: Some(RGBColor(120, 120, 120)),
    });
    lines.push(Line {
        label: "lower bound 2^-b".into(),
        points: grid.iter().map(|&b| (b, filters::lower_bound(b))).collect(),
        dashed: true,
        color: Some(RGBColor(190, 190, 190)),
    });
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw_panel(
            &root,
            &Panel {
                title: "Measured false-positive rate against filter memory",
                y_label: "false-positive rate",
                log_y: true,
                lines: &lines,
                legend: SeriesLabelPosition::LowerLeft,
            },
        )?;
        root.present().map_err(plot_err)?;
    }
    super::csv::write(path, &svg)
}
