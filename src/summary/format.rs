//! Rendering a [`Report`] as an aligned table (like `stansummary`), CSV or JSON.

use super::{QuantitySummary, Report, Superchains, warnings};
use std::fmt::Write;
use std::str::FromStr;

/// Output format of `bat summary`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "table" | "text" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            other => Err(format!(
                "unknown summary format `{other}` (expected table, csv or json)"
            )),
        }
    }
}

const HEADERS: [&str; 9] = [
    "Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat",
];
/// The column after `R_hat` when the summary groups chains into superchains.
const NESTED_HEADER: &str = "nR_hat";

/// The column headers of `report`.
fn headers(report: &Report) -> Vec<&'static str> {
    let mut headers = HEADERS.to_vec();
    if report.superchains.is_some() {
        headers.push(NESTED_HEADER);
    }
    headers
}

/// Renders `report` in `format`; tables and JSON include the warnings.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Table => render_table(report),
        Format::Csv => render_csv(report),
        Format::Json => render_json(report),
    }
}

fn columns(q: &QuantitySummary) -> Vec<f64> {
    let mut columns = vec![
        q.mean, q.mcse, q.sd, q.q5, q.q50, q.q95, q.ess_bulk, q.ess_tail, q.r_hat,
    ];
    columns.extend(q.nested_r_hat);
    columns
}

fn render_table(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} chains: each with {} draws ({} total).",
        report.n_chains,
        report.n_draws,
        report.n_chains * report.n_draws
    );
    if let Some(grouping) = &report.superchains {
        let _ = writeln!(out, "{}", superchains_note(grouping, report.n_chains));
    }
    out.push('\n');
    let headers = headers(report);
    let cells: Vec<Vec<String>> = report
        .quantities
        .iter()
        .map(|q| {
            let v = columns(q);
            let mut row: Vec<String> = v[..6].iter().map(|&x| significant(x, 3)).collect();
            row.push(whole(v[6]));
            row.push(whole(v[7]));
            row.extend(v[8..].iter().map(|&x| fixed(x, 3)));
            row
        })
        .collect();
    let name_width = report
        .quantities
        .iter()
        .map(|q| q.name.chars().count())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = (0..headers.len())
        .map(|col| {
            cells
                .iter()
                .map(|row| row.get(col).map_or(0, String::len))
                .chain([headers[col].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(out, "{:name_width$}", "");
    for (header, width) in headers.iter().zip(&widths) {
        let _ = write!(out, "  {header:>width$}");
    }
    out.push('\n');
    for (q, row) in report.quantities.iter().zip(&cells) {
        let _ = write!(out, "{:name_width$}", q.name);
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(out, "  {cell:>width$}");
        }
        out.push('\n');
    }
    let warnings = warnings(report);
    if !warnings.is_empty() {
        out.push('\n');
        for warning in warnings {
            let _ = writeln!(out, "Warning: {warning}");
        }
    }
    out
}

/// The line under the table's first line saying which chains nR_hat groups.
fn superchains_note(grouping: &Superchains, n_chains: usize) -> String {
    let mut note = format!(
        "nR_hat: {} superchains of {} consecutive chains (chains 1-{} form the first)",
        grouping.count, grouping.chains_each, grouping.chains_each
    );
    if grouping.chains_left_out > 0 {
        let first = grouping.count * grouping.chains_each + 1;
        if first == n_chains {
            note += &format!("; chain {first} fills no superchain and is left out of nR_hat");
        } else {
            note += &format!(
                "; chains {first}-{n_chains} fill no superchain and are left out of nR_hat"
            );
        }
    }
    note.push('.');
    note
}

fn render_csv(report: &Report) -> String {
    let mut out = String::from("name");
    for header in headers(report) {
        out.push(',');
        out.push_str(header);
    }
    out.push('\n');
    for q in &report.quantities {
        out.push_str(&csv_field(&q.name));
        for value in columns(q) {
            let _ = write!(out, ",{}", csv_number(value));
        }
        out.push('\n');
    }
    out
}

fn render_json(report: &Report) -> String {
    let mut value = serde_json::to_value(report).expect("report serializes");
    value["warnings"] = serde_json::Value::from(warnings(report));
    let mut text = serde_json::to_string_pretty(&value).expect("value serializes");
    text.push('\n');
    text
}

/// `x` with `digits` significant digits; scientific notation when very large/small.
fn significant(x: f64, digits: i32) -> String {
    if !x.is_finite() {
        return non_finite(x);
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&magnitude) {
        return format!("{:.*e}", (digits - 1) as usize, x);
    }
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

fn whole(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        non_finite(x)
    }
}

fn fixed(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        non_finite(x)
    }
}

fn non_finite(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// Shortest round-tripping decimal; `nan`/`inf` spelled as pandas reads them.
fn csv_number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        non_finite(x)
    }
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        Report {
            n_chains: 2,
            n_draws: 100,
            quantities: vec![
                QuantitySummary {
                    name: "theta[1,2]".into(),
                    mean: 0.123456,
                    mcse: 0.00123,
                    sd: 1.5,
                    q5: -2.25,
                    q50: 0.1,
                    q95: 12345678.0,
                    ess_bulk: 180.4,
                    ess_tail: f64::NAN,
                    r_hat: 1.00049,
                    nested_r_hat: None,
                },
                QuantitySummary {
                    name: "mu".into(),
                    mean: 0.0,
                    mcse: 0.0,
                    sd: 0.0,
                    q5: 0.0,
                    q50: 0.0,
                    q95: 0.0,
                    ess_bulk: 200.0,
                    ess_tail: 200.0,
                    r_hat: f64::NAN,
                    nested_r_hat: None,
                },
            ],
            sampler: None,
            stopped_chains: Vec::new(),
            superchains: None,
            stuck_chains: Vec::new(),
        }
    }

    #[test]
    fn significant_digits() {
        assert_eq!(significant(0.123456, 3), "0.123");
        assert_eq!(significant(-2.25, 3), "-2.25");
        assert_eq!(significant(123.456, 3), "123");
        assert_eq!(significant(12345678.0, 3), "1.23e7");
        assert_eq!(significant(0.00001234, 3), "1.23e-5");
        assert_eq!(significant(f64::NAN, 3), "nan");
    }

    #[test]
    fn table_columns_align() {
        let table = render(&report(), Format::Table);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "2 chains: each with 100 draws (200 total).");
        let header = lines[2];
        let row = lines[3];
        assert_eq!(header.len(), row.len(), "{table}");
        assert!(header.trim_start().starts_with("Mean"));
        assert!(row.starts_with("theta[1,2]") && row.ends_with("1.000"));
        // Right edges of each column line up with the header's.
        let r_hat_end = header.find("R_hat").unwrap() + "R_hat".len();
        assert_eq!(lines[4].len(), r_hat_end);
        assert!(lines[4].ends_with("nan"));
    }

    #[test]
    fn csv_quotes_names_and_keeps_precision() {
        let csv = render(&report(), Format::Csv);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next().unwrap(),
            "name,Mean,MCSE,StdDev,5%,50%,95%,ESS_bulk,ESS_tail,R_hat"
        );
        assert_eq!(
            lines.next().unwrap(),
            "\"theta[1,2]\",0.123456,0.00123,1.5,-2.25,0.1,12345678,180.4,nan,1.00049"
        );
    }

    #[test]
    fn json_has_nulls_for_nan_and_warnings() {
        let json: serde_json::Value =
            serde_json::from_str(&render(&report(), Format::Json)).unwrap();
        assert_eq!(json["quantities"][0]["ess_tail"], serde_json::Value::Null);
        assert_eq!(json["quantities"][1]["name"], "mu");
        assert_eq!(json["n_chains"], 2);
        // 180 bulk ESS < 100 per chain × 2 chains.
        assert_eq!(json["warnings"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn parses_formats() {
        assert_eq!("CSV".parse::<Format>(), Ok(Format::Csv));
        assert!("xml".parse::<Format>().is_err());
    }
}
