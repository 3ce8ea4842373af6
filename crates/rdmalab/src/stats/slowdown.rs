//! The run summary's slowdown table (p50/p95/p99 and mean FCT slowdown per size bucket)
//! from the flow records alone, so that a run whose tables are never built (`rdmalab hpcc`)
//! prints it without converting its records into columns. Python's `rdmalab.summary`
//! computes the same rows from the flows table; the two must agree to the bit
//! (`tests/python/test_summary_engine.py`), so every float operation here is the one numpy
//! does there.

use super::FlowRecord;

/// One bucket's row: its name, flow count, p50/p95/p99 and mean slowdown (NaN when empty).
#[derive(Clone, Debug, PartialEq)]
pub struct SlowdownRow {
    /// The bucket's name (`SIZE_BUCKETS`).
    pub bucket: &'static str,
    /// Completed flows in it.
    pub flows: usize,
    /// Median slowdown.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean (NaN when the bucket is empty, or when a slowdown is).
    pub mean: f64,
}

/// The size buckets (payload bytes, `[lo, hi)`), as `rdmalab.summary.SIZE_BUCKETS`.
pub const SIZE_BUCKETS: [(&str, u64, u64); 4] =
    [("all", 0, u64::MAX), ("<100KB", 0, 100_000), ("100KB-1MB", 100_000, 1_000_000), (">=1MB", 1_000_000, u64::MAX)];

/// A flow's slowdown: FCT over its ideal FCT, both in ns as floats, at least 1 (the
/// reference's analysis; the flows table's `slowdown` column).
pub fn slowdown(r: &FlowRecord) -> f64 {
    ((r.fct.0 as f64 / 1000.0) / (r.ideal.0 as f64 / 1000.0)).max(1.0)
}

/// The rows of every bucket over `records`, in the flow table's order.
pub fn slowdown_rows(records: &[FlowRecord]) -> Vec<SlowdownRow> {
    let all: Vec<(u64, f64)> = records.iter().map(|r| (r.size, slowdown(r))).collect();
    SIZE_BUCKETS
        .iter()
        .map(|&(bucket, lo, hi)| {
            // `u64::MAX` stands for Python's infinity: no size reaches it.
            let sel: Vec<f64> =
                all.iter().filter(|(s, _)| *s >= lo && (hi == u64::MAX || *s < hi)).map(|x| x.1).collect();
            let mean = if sel.is_empty() { f64::NAN } else { numpy_sum(&sel) / sel.len() as f64 };
            let sorted = sorted_finite(&sel);
            let pct = |p: f64| percentile(&sorted, p);
            SlowdownRow { bucket, flows: sel.len(), p50: pct(0.5), p95: pct(0.95), p99: pct(0.99), mean }
        })
        .collect()
}

/// The values without NaN, sorted.
fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    s.sort_by(f64::total_cmp);
    s
}

/// The reference analysis script's rule on sorted values: element `int(n * p)`, NaN when empty.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let n = sorted.len();
    sorted[((n as f64 * p) as usize).min(n - 1)]
}

/// `numpy.add.reduce` of a contiguous float64 array: numpy's pairwise sum (halves split at
/// a multiple of 8 down to blocks of at most 128, each summed in eight lanes).
fn numpy_sum(v: &[f64]) -> f64 {
    pairwise(v)
}

fn pairwise(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |acc, x| acc + x);
    }
    if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let whole = n - n % 8;
        for block in a[8..whole].chunks_exact(8) {
            for (acc, x) in r.iter_mut().zip(block) {
                *acc += x;
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &a[whole..] {
            res += x;
        }
        return res;
    }
    let mut n2 = n / 2;
    n2 -= n2 % 8;
    pairwise(&a[..n2]) + pairwise(&a[n2..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_takes_element_n_times_p_of_the_sorted_values() {
        let s: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&s, 0.5), 6.0); // int(10 * 0.5) = 5 -> the sixth value
        assert_eq!(percentile(&s, 0.99), 10.0);
        assert!(percentile(&[], 0.5).is_nan());
        assert_eq!(sorted_finite(&[3.0, f64::NAN, 1.0]), vec![1.0, 3.0]);
    }

    #[test]
    fn the_pairwise_sum_is_exact_on_integers_and_close_to_the_exact_sum() {
        for n in [0usize, 1, 7, 8, 9, 127, 128, 129, 1000, 4099] {
            let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
            assert_eq!(numpy_sum(&v), (n * n.saturating_sub(1) / 2) as f64, "n = {n}");
            let w: Vec<f64> = (0..n).map(|i| 1.0 + 1.0 / (i as f64 + 3.0)).collect();
            let exact: f64 = w.iter().sum();
            assert!((numpy_sum(&w) - exact).abs() <= 1e-12 * exact.max(1.0), "n = {n}");
        }
    }
}
