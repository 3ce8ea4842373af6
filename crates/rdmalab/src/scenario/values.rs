//! A scenario's values with units (times, rates) read from their text, each error naming the
//! file and the full field.

use std::path::Path;

use crate::error::{Error, Result};
use crate::formats::units_parse::{parse_nonzero_rate, parse_time};
use crate::units::{Rate, Time};

/// Parses a value with units, naming the field on failure.
pub(crate) fn field_time(file: &Path, field: &str, s: &str) -> Result<Time> {
    parse_time(s).map_err(|e| Error::input(file, 0, field, e.0))
}
/// A time that must not be zero (`"none"` is how a scenario turns a timer off).
pub(super) fn positive_time(file: &Path, field: &str, s: &str) -> Result<Time> {
    positive_time_or(file, field, s, None)
}

/// [`positive_time`] of a field that also takes the word `word` (`fabric.rto`'s `"none"`,
/// `fabric.uet.rto`'s `"auto"`): a zero names it, and only a field that takes a word names one.
pub(super) fn positive_time_or(file: &Path, field: &str, s: &str, word: Option<&str>) -> Result<Time> {
    match field_time(file, field, s)? {
        Time::ZERO => {
            let m = word.map_or_else(|| "must be positive".to_string(), |w| format!("must be positive (or \"{w}\")"));
            Err(Error::input(file, 0, field, m))
        }
        t => Ok(t),
    }
}
/// A sampling interval: zero would take a sample at the same instant forever.
pub(super) fn sample_interval(file: &Path, field: &str, s: &str) -> Result<Time> {
    match field_time(file, field, s)? {
        Time::ZERO => Err(Error::input(file, 0, field, "must be positive (a zero interval never advances time)")),
        t => Ok(t),
    }
}
pub(crate) fn field_rate(file: &Path, field: &str, s: &str) -> Result<Rate> {
    if let Some(r) = crate::fabric::ib::rate_by_name(s) {
        return Ok(r); // `"FDR4x"`: the IB link's data rate
    }
    parse_nonzero_rate(s).map_err(|e| Error::input(file, 0, field, e.0))
}
