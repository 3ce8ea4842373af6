//! Flow-size distributions given as piecewise-linear CDFs, in the reference's file format.
//!
//! The reference ships its workloads (FbHdp, WebSearch, AliStorage, GoogleRPC) as text
//! files with one `size_bytes cumulative_percent` point per line
//! (its repository's `traffic_gen/*.txt`, read by `traffic_gen/custom_rand.py`). Reading the
//! same files, with the same mean
//! (trapezoid rule) and the same inverse-transform sampling, makes our Poisson workloads
//! statistically the same as theirs. Parsing is strict and every problem names the file,
//! the line and the field.

use std::path::Path;

use crate::error::{Error, Result};

/// A piecewise-linear CDF of flow sizes: points `(size_bytes, cumulative_percent)` with
/// sizes non-decreasing, percents strictly increasing from 0 to 100.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeCdf {
    points: Vec<(f64, f64)>,
}

/// Parses one token as a finite number.
fn number(tok: &str, file: &Path, line: usize, field: &str) -> Result<f64> {
    match tok.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Error::input(file, line, field, format!("`{tok}` is not a finite number"))),
    }
}

/// Parses one non-blank line into a point.
fn point(text: &str, file: &Path, line: usize) -> Result<(f64, f64)> {
    let mut tok = text.split_whitespace();
    let (Some(s), Some(p)) = (tok.next(), tok.next()) else {
        return Err(Error::input(file, line, "cumulative_percent", "missing: expected `size cumulative_percent`"));
    };
    if let Some(extra) = tok.next() {
        return Err(Error::input(file, line, "line", format!("unexpected third field `{extra}`")));
    }
    let size = number(s, file, line, "size")?;
    if size < 0.0 {
        return Err(Error::input(file, line, "size", format!("negative size {size}")));
    }
    let pct = number(p, file, line, "cumulative_percent")?;
    if !(0.0..=100.0).contains(&pct) {
        return Err(Error::input(file, line, "cumulative_percent", format!("{pct} is outside [0, 100]")));
    }
    Ok((size, pct))
}

impl SizeCdf {
    /// Parses the text of a CDF file; `file` only names the source in errors. Blank lines
    /// are skipped. Errors: a line without two numbers or with a third field, a
    /// non-number, a negative size, a size below the previous one, a percent not above the
    /// previous one, a first percent other than 0, a last percent other than 100, fewer
    /// than two points.
    pub fn parse(text: &str, file: &Path) -> Result<SizeCdf> {
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let line = i + 1;
            let (size, pct) = point(raw, file, line)?;
            match points.last() {
                None if pct != 0.0 => {
                    return Err(Error::input(
                        file,
                        line,
                        "cumulative_percent",
                        format!("first point must be 0, got {pct}"),
                    ));
                }
                Some(&(_, pp)) if pct <= pp => {
                    return Err(Error::input(
                        file,
                        line,
                        "cumulative_percent",
                        format!("{pct} does not increase on {pp}"),
                    ));
                }
                Some(&(ps, _)) if size < ps => {
                    return Err(Error::input(file, line, "size", format!("{size} is below the previous size {ps}")));
                }
                _ => {}
            }
            points.push((size, pct));
            last_line = line;
        }
        match points.last() {
            None => Err(Error::input(file, 0, "size", "no points: the file is empty")),
            Some(_) if points.len() < 2 => {
                Err(Error::input(file, last_line, "size", "a CDF needs at least two points"))
            }
            Some(&(_, pct)) if pct != 100.0 => {
                Err(Error::input(file, last_line, "cumulative_percent", format!("last point must be 100, got {pct}")))
            }
            Some(_) => Ok(SizeCdf { points }),
        }
    }

    /// The points `(size_bytes, cumulative_percent)`, in file order.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Largest size the distribution can produce.
    pub fn max_size(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.0)
    }

    /// Mean size in bytes by the trapezoid rule: sum over segments of
    /// `(x_i + x_{i-1}) / 2 * (y_i - y_{i-1}) / 100`, as the reference computes it.
    pub fn mean(&self) -> f64 {
        self.points.windows(2).map(|w| (w[1].0 + w[0].0) / 2.0 * (w[1].1 - w[0].1) / 100.0).sum()
    }

    /// The size at percentile `u` (in [0, 100); values outside are clamped, NaN counts as
    /// 0): the first segment whose upper percent is at least `u`, linearly interpolated and
    /// truncated to whole bytes; 0 becomes 1.
    pub fn sample(&self, u: f64) -> u64 {
        let u = if u.is_nan() { 0.0 } else { u.clamp(0.0, 100.0) };
        let i = self.points[1..].iter().position(|p| p.1 >= u).map_or(self.points.len() - 1, |i| i + 1);
        let ((x0, y0), (x1, y1)) = (self.points[i - 1], self.points[i]);
        // Same operation order as the reference, so equal inputs give equal sizes.
        let x = x0 + (x1 - x0) / (y1 - y0) * (u - y0);
        (x as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::routing::fixtures::reference_dir;

    fn load(name: &str) -> SizeCdf {
        let path = reference_dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        SizeCdf::parse(&text, &path).unwrap()
    }

    fn err(text: &str) -> String {
        SizeCdf::parse(text, Path::new("w.txt")).unwrap_err().to_string()
    }

    /// The means of the reference's generator (`custom_rand.py`'s `getAvg`) on its files:
    /// FbHdp 120,420.75 B, WebSearch 1,711,250 B.
    #[test]
    fn reference_means() {
        assert!((load("FbHdp_distribution.txt").mean() - 120_420.75).abs() < 1e-6);
        assert!((load("WebSearch_distribution.txt").mean() - 1_711_250.0).abs() < 1e-6);
        // The other shipped CDFs parse too.
        assert_eq!(load("AliStorage2019.txt").max_size(), 2_000_000.0);
        assert_eq!(load("GoogleRPC2008.txt").points().len(), 843);
    }

    #[test]
    fn sampling_interpolates_and_truncates() {
        // WebSearch: (0,0) (10000,15) (20000,20) ... (30000000,100).
        let w = load("WebSearch_distribution.txt");
        assert_eq!(w.sample(0.0), 1); // 0 bytes becomes 1
        assert_eq!(w.sample(7.5), 5000); // halfway along the first segment
        assert_eq!(w.sample(15.0), 10000); // a segment's upper end belongs to it
        assert_eq!(w.sample(17.5), 15000);
        assert_eq!(w.sample(99.0), 23_333_333); // 10M + 20M * 2/3, truncated
        assert_eq!(w.sample(100.0), 30_000_000);
        assert_eq!(w.sample(250.0), 30_000_000);
        assert_eq!(w.sample(f64::NAN), 1);
    }

    #[test]
    fn errors_name_line_and_field() {
        let cases = [
            ("0 0\n100 50\n50 100\n", "w.txt:3: field `size`"),
            ("0 0\n100 50\n200 50\n300 100\n", "w.txt:3: field `cumulative_percent`"),
            ("0 0\n100 60\n200 40\n300 100\n", "w.txt:3: field `cumulative_percent`"),
            ("0 5\n100 100\n", "w.txt:1: field `cumulative_percent`"),
            ("0 0\n100 90\n", "w.txt:2: field `cumulative_percent`"),
            ("-5 0\n100 100\n", "w.txt:1: field `size`"),
            ("0 0\nabc 50\n100 100\n", "w.txt:2: field `size`"),
            ("0 0\n100 5x\n200 100\n", "w.txt:2: field `cumulative_percent`"),
            ("0 0\n100\n200 100\n", "w.txt:2: field `cumulative_percent`"),
            ("0 0\n100 50 7\n200 100\n", "w.txt:2: field `line`"),
            ("0 0\n100 150\n", "w.txt:2: field `cumulative_percent`"),
            ("0 0\n100 inf\n", "w.txt:2: field `cumulative_percent`"),
            ("0 0\n", "w.txt:1"),
            ("\n\n", "w.txt: field `size`"),
        ];
        for (text, want) in cases {
            let e = err(text);
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
        // Blank lines are skipped but counted.
        assert!(err("0 0\n\n100 50\n\nx 100\n").starts_with("w.txt:5: field `size`"));
        assert!(SizeCdf::parse("0 0\n\n 100\t100 \n", Path::new("w")).is_ok());
    }
}
