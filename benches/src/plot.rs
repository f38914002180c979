//! The report's plots: one row per matrix, so that one matrix and fifty read alike (the height grows
//! with the rows, the labels keep their size), and every row holds a measured point.
//!
//! - `speedup-<precision>.svg`: `Kernel::Auto`'s speedup over the better cuSPARSE CSR algorithm per
//!   matrix, one marker per regime (cold, hot, graph), on a log scale (a 2x win and a 2x loss are as
//!   far from 1), sorted from the best matrix to the worst by the graph regime (cold where a run has
//!   no graph figures).
//! - `floor-<precision>.svg`: the fraction of the bandwidth floor (the same bytes at the streaming
//!   read bandwidth) reached cold by Auto, the fastest kernel of ours and the better cuSPARSE: a
//!   fraction, not GB/s, so that small and large matrices share one scale with 1.0 as the limit.
//! - `cpu-<precision>.svg`: the GB/s of each CPU kernel per matrix, sorted from the fastest matrix;
//!   all a run without a GPU has to draw.
//!
//! SVG, since plotters' SVG backend writes text as text and so needs no font files on the GPU
//! machine; any SVG renderer makes a PNG of it (`convert speedup-f32.svg speedup-f32.png`).

use crate::precision::Precision;
use crate::report::Results;
use crate::run::Record;
use crate::summary::{Ours, Regime, cpu_gbps, speedups};
use anyhow::{Result, anyhow};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use std::path::Path;

/// Pixels per matrix row, and around the rows (title, legend, x axis and its label).
const ROW_PX: u32 = 24;
const FRAME_PX: u32 = 150;
const WIDTH_PX: u32 = 960;

/// Ticks of the log axis, per decade.
const LOG_TICKS: [f64; 7] = [1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 7.0];

/// How a series is drawn.
#[derive(Debug, Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

/// One series of a dot plot: a value (or none) per row.
#[derive(Debug)]
struct Series {
    name: String,
    color: RGBColor,
    marker: Marker,
    values: Vec<Option<f64>>,
}

/// A dot plot: matrices down the y axis, `x_desc` across, one marker per series and row, and a
/// vertical reference line at `reference` where there is one (1x, or the floor).
#[derive(Debug)]
struct DotPlot<'a> {
    title: String,
    x_desc: &'a str,
    rows: Vec<String>,
    series: Vec<Series>,
    /// Where the vertical line goes (the x axis' description says what it is).
    reference: Option<f64>,
}

const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const GREEN: RGBColor = RGBColor(44, 160, 44);
const GREY: RGBColor = RGBColor(110, 110, 110);

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a plot: {e}")
}

impl DotPlot<'_> {
    /// The smallest and largest value drawn, the reference included.
    fn extent(&self) -> (f64, f64) {
        self.series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .chain(&self.reference)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
    }

    /// Writes the plot to `path`, with a log x axis or a linear one from 0.
    fn write(&self, path: &Path, log: bool) -> Result<()> {
        let height = FRAME_PX + ROW_PX * self.rows.len().max(2) as u32;
        let root = SVGBackend::new(path, (WIDTH_PX, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let (lo, hi) = self.extent();
        if log {
            let (lo, hi) = (lo / 1.2, hi * 1.2);
            let ticks =
                LOG_TICKS.iter().flat_map(|&t| [t / 10.0, t, t * 10.0]).filter(|t| (lo..=hi).contains(t));
            self.draw(&root, (lo..hi).log_scale().with_key_points(ticks.collect()), &|v| format!("{v}x"))
        } else {
            self.draw(&root, 0.0..hi * 1.08, &|v| format!("{v:.1}"))
        }?;
        root.present().map_err(plot_error)
    }

    fn draw<X>(
        &self,
        root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        x: X,
        x_label: &dyn Fn(&f64) -> String,
    ) -> Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let (legend, area) = root.split_vertically(64);
        legend.draw(&Text::new(self.title.as_str(), (16, 8), ("sans-serif", 20))).map_err(plot_error)?;
        let mut left = 16;
        for s in &self.series {
            let at = (left + 6, 46);
            let style = s.color.filled();
            match s.marker {
                Marker::Circle => legend.draw(&Circle::new(at, 5, style)),
                Marker::Triangle => legend.draw(&TriangleMarker::new(at, 6, style)),
                Marker::Square => {
                    legend.draw(&Rectangle::new([(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)], style))
                }
                Marker::Cross => legend.draw(&Cross::new(at, 5, s.color.stroke_width(2))),
            }
            .map_err(plot_error)?;
            legend
                .draw(&Text::new(s.name.as_str(), (left + 16, 39), ("sans-serif", 14)))
                .map_err(plot_error)?;
            left += 30 + 7 * s.name.chars().count() as i32;
        }
        let n = self.rows.len() as i32;
        let longest = self.rows.iter().map(|r| r.chars().count()).max().unwrap_or(0) as u32;
        let mut chart = ChartBuilder::on(&area)
            .margin_right(24)
            .margin_bottom(8)
            .x_label_area_size(44)
            .y_label_area_size((16 + 7 * longest).clamp(60, 320))
            // In half rows: row i's centre at 2 (n - i) - 1, a key point of the y axis (so it gets its
            // name and a grid line).
            .build_cartesian_2d(x, (0..2 * n).with_key_points((0..n).map(|i| 2 * i + 1).collect()))
            .map_err(plot_error)?;
        // Row `i` (the first is the best) at the top: y counts from the bottom.
        let y_of = |i: i32| 2 * (n - i) - 1;
        let name_at = |y: &i32| self.rows.get((n - (y + 1) / 2) as usize).cloned().unwrap_or_default();
        chart
            .configure_mesh()
            .y_labels(self.rows.len())
            .y_label_formatter(&name_at)
            .x_label_formatter(x_label)
            .y_label_style(("sans-serif", 13))
            .x_label_style(("sans-serif", 13))
            .x_desc(self.x_desc)
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()
            .map_err(plot_error)?;
        if let Some(line) = self.reference {
            chart
                .draw_series(LineSeries::new([(line, 0), (line, 2 * n)], BLACK.stroke_width(1)))
                .map_err(plot_error)?;
        }
        for s in &self.series {
            let points = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((v.filter(|v| v.is_finite())?, y_of(i as i32))));
            let style = s.color.filled();
            match s.marker {
                Marker::Circle => {
                    chart.draw_series(points.map(|p| EmptyElement::at(p) + Circle::new((0, 0), 5, style)))
                }
                Marker::Triangle => chart
                    .draw_series(points.map(|p| EmptyElement::at(p) + TriangleMarker::new((0, 0), 6, style))),
                Marker::Square => chart.draw_series(
                    points.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], style)),
                ),
                Marker::Cross => chart.draw_series(
                    points.map(|p| EmptyElement::at(p) + Cross::new((0, 0), 5, s.color.stroke_width(2))),
                ),
            }
            .map_err(plot_error)?;
        }
        Ok(())
    }
}

/// The speedup plot of one precision (`None` when no matrix has a speedup in it).
fn speedup_plot(results: &Results, precision: Precision) -> Option<DotPlot<'static>> {
    let by_regime = Regime::ALL.map(|regime| speedups(results, Ours::Auto, regime, precision));
    let sort_by = if by_regime[2].is_empty() { &by_regime[0] } else { &by_regime[2] };
    let mut rows: Vec<(String, f64)> = sort_by.clone();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows: Vec<String> = rows.into_iter().map(|r| r.0).collect();
    let styles = [(BLUE, Marker::Circle), (ORANGE, Marker::Triangle), (GREEN, Marker::Square)];
    let series = Regime::ALL
        .iter()
        .zip(&by_regime)
        .zip(styles)
        .filter(|((_, s), _)| !s.is_empty())
        .map(|((regime, s), (color, marker))| Series {
            name: format!("{} ({})", regime.name(), regime_words(*regime)),
            color,
            marker,
            values: rows.iter().map(|m| s.iter().find(|p| &p.0 == m).map(|p| p.1)).collect(),
        })
        .collect();
    let sorted = if by_regime[2].is_empty() { "cold" } else { "graph" };
    Some(DotPlot {
        title: format!(
            "Kernel::Auto over the better cuSPARSE CSR algorithm, {precision} (sorted by {sorted})"
        ),
        x_desc: "speedup over cuSPARSE (log scale; the line: as fast as cuSPARSE)",
        rows,
        series,
        reference: Some(1.0),
    })
}

/// What a regime's operands are, for the legend.
fn regime_words(regime: Regime) -> &'static str {
    match regime {
        Regime::Cold => "from HBM",
        Regime::Hot => "back to back",
        Regime::Graph => "in a CUDA graph",
    }
}

/// The floor plot of one precision (`None` without a floor or records).
fn floor_plot(results: &Results, precision: Precision) -> Option<DotPlot<'static>> {
    let of_matrix = |m: &str, keep: &dyn Fn(&Record) -> bool| {
        results
            .records
            .iter()
            .filter(|r| r.matrix == m && r.precision == precision && r.floor_fraction.is_finite() && keep(r))
            .map(|r| r.floor_fraction)
            .max_by(f64::total_cmp)
    };
    let best = |m: &str, family: &str| of_matrix(m, &|r| r.family == family);
    let auto = |m: &str| of_matrix(m, &|r| r.variant == "auto");
    let mut rows: Vec<(String, f64)> =
        results.matrices.iter().filter_map(|m| Some((m.name.clone(), auto(&m.name)?))).collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows: Vec<String> = rows.into_iter().map(|r| r.0).collect();
    let series = vec![
        Series {
            name: "auto".into(),
            color: BLUE,
            marker: Marker::Circle,
            values: rows.iter().map(|m| auto(m)).collect(),
        },
        Series {
            name: "fastest of ours".into(),
            color: GREEN,
            marker: Marker::Square,
            values: rows.iter().map(|m| best(m, "gpu-spmv")).collect(),
        },
        Series {
            name: "better cuSPARSE".into(),
            color: GREY,
            marker: Marker::Cross,
            values: rows.iter().map(|m| best(m, "cuSPARSE")).collect(),
        },
    ];
    Some(DotPlot {
        title: format!("Fraction of the bandwidth floor, cold, {precision} (sorted by auto)"),
        x_desc: "floor time / time (the line: as fast as streaming the bytes once)",
        rows,
        series,
        reference: Some(1.0),
    })
}

/// The CPU kernels' plot of one precision (`None` without CPU records).
fn cpu_plot(results: &Results, precision: Precision) -> Option<DotPlot<'static>> {
    let kernels = cpu_gbps(results, precision);
    let mut rows: Vec<(String, f64)> = kernels.first()?.1.clone();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows: Vec<String> = rows.into_iter().map(|r| r.0).collect();
    let styles = [(BLUE, Marker::Circle), (ORANGE, Marker::Triangle), (GREEN, Marker::Square)];
    let series = kernels
        .iter()
        .zip(styles.iter().cycle())
        .map(|((variant, per_matrix), &(color, marker))| Series {
            name: variant.clone(),
            color,
            marker,
            values: rows.iter().map(|m| per_matrix.iter().find(|p| &p.0 == m).map(|p| p.1)).collect(),
        })
        .collect();
    Some(DotPlot {
        title: format!("CPU kernels, {precision} (sorted by {})", kernels[0].0),
        x_desc: "GB/s (one pass over the CSR arrays, x and y, over the median time)",
        rows,
        series,
        reference: None,
    })
}

/// Writes `speedup-<precision>.svg`, `floor-<precision>.svg` and `cpu-<precision>.svg` into `dir`
/// for every precision with something to draw; returns the file names.
pub fn write_plots(results: &Results, dir: &Path) -> Result<Vec<String>> {
    let mut written = Vec::new();
    for precision in Precision::ALL {
        let plots = [
            ("speedup", speedup_plot(results, precision), true),
            ("floor", floor_plot(results, precision), false),
            ("cpu", cpu_plot(results, precision), false),
        ];
        for (kind, plot, log) in plots {
            if let Some(plot) = plot {
                let name = format!("{kind}-{precision}.svg");
                plot.write(&dir.join(&name), log)?;
                written.push(name);
            }
        }
    }
    Ok(written)
}
