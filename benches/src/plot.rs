//! The report's plots, as SVG (plotters' SVG backend needs no font files, so the bench runs anywhere):
//! GB/s per matrix and variant as grouped bars with the bandwidth floor drawn in, and the speedup over
//! cuSPARSE.

use crate::report::Results;
use crate::run::Record;
use anyhow::{Result, anyhow};
use plotters::prelude::*;
use std::path::Path;

/// At most this many bar series per plot, so the groups stay readable.
const MAX_SERIES: usize = 8;

const PALETTE: [RGBColor; MAX_SERIES] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The series of a plot: `auto`, the library's variants that are fastest on some matrix, and the
/// cuSPARSE algorithms, in that order.
fn series(records: &[&Record], matrices: &[String]) -> Vec<String> {
    let mut names = vec!["auto".to_owned()];
    for m in matrices {
        if let Some(best) = records
            .iter()
            .filter(|r| &r.matrix == m && r.family == "gpu-spmv")
            .min_by(|a, b| a.timing.median_us.total_cmp(&b.timing.median_us))
        {
            names.push(best.variant.clone());
        }
    }
    names.extend(records.iter().filter(|r| r.family == "cuSPARSE").map(|r| r.variant.clone()));
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let cusparse_count = names.iter().filter(|n| n.starts_with("cusparse")).count();
    let ours = names.len() - cusparse_count;
    if names.len() > MAX_SERIES {
        names.drain(MAX_SERIES.saturating_sub(cusparse_count).min(ours)..ours);
    }
    names
}

/// Width of the empty band right of the bars, in groups, where the legend sits clear of them.
const LEGEND_GROUPS: f64 = 2.4;

/// Grouped bars of `value(record)` per matrix (groups) and variant (bars), with an optional horizontal
/// reference line; one SVG file. `decimals` is the precision of the y-axis labels.
fn grouped_bars(
    path: &Path,
    title: &str,
    (y_label, decimals): (&str, usize),
    records: &[&Record],
    value: impl Fn(&Record) -> f64,
    line: Option<(f64, &str)>,
) -> Result<()> {
    let mut matrices: Vec<String> = records.iter().map(|r| r.matrix.clone()).collect();
    matrices.dedup();
    let names = series(records, &matrices);
    let get = |m: &str, v: &str| records.iter().find(|r| r.matrix == m && r.variant == v).map(|r| value(r));
    let top = records.iter().map(|r| value(r)).chain(line.map(|l| l.0)).fold(0.0, f64::max) * 1.15;
    let width = 160 + 110 * (matrices.len() as u32 + 3);
    let root = SVGBackend::new(path, (width.max(900), 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let groups = matrices.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(70)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..groups + LEGEND_GROUPS, 0.0..top.max(1e-9))
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(((groups + LEGEND_GROUPS) * 2.0) as usize + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-6 {
                matrices.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.decimals$}"))
        .light_line_style(WHITE)
        .y_desc(y_label)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let bar = 0.8 / names.len().max(1) as f64;
    for (s, name) in names.iter().enumerate() {
        let color = PALETTE[s % PALETTE.len()];
        let bars = matrices.iter().enumerate().filter_map(|(g, m)| {
            let v = get(m, name)?;
            let x0 = g as f64 + 0.1 + s as f64 * bar;
            Some(Rectangle::new([(x0, 0.0), (x0 + bar * 0.9, v)], color.filled()))
        });
        chart
            .draw_series(bars)
            .map_err(|e| anyhow!("{e}"))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    if let Some((level, label)) = line {
        chart
            .draw_series(LineSeries::new([(0.0, level), (groups, level)], BLACK.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(label)
            .legend(|(x, y)| PathElement::new([(x, y), (x + 12, y)], BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

/// Writes `gbps-<precision>.svg` and `speedup-<precision>.svg` into `dir`; returns the file names.
pub fn write_plots(results: &Results, dir: &Path) -> Result<Vec<String>> {
    let mut written = Vec::new();
    for precision in ["f32", "f64"] {
        let records: Vec<&Record> =
            results.records.iter().filter(|r| r.precision == precision && r.family != "CPU").collect();
        if records.is_empty() {
            continue;
        }
        let floor = results.device.as_ref().map(|d| (d.read_gbps, "streaming-read bandwidth (floor)"));
        let name = format!("gbps-{precision}.svg");
        grouped_bars(
            &dir.join(&name),
            &format!("Effective bandwidth, {precision}"),
            ("GB/s", 0),
            &records,
            |r| r.gbps,
            floor,
        )?;
        written.push(name);
        let name = format!("speedup-{precision}.svg");
        grouped_bars(
            &dir.join(&name),
            &format!("Speedup over the better cuSPARSE CSR algorithm, {precision}"),
            ("speedup (x)", 1),
            &records,
            |r| r.speedup_vs_cusparse,
            Some((1.0, "cuSPARSE")),
        )?;
        written.push(name);
    }
    Ok(written)
}
