//! Payload delivered per tenant over time, kept by each receiving host.
//!
//! Each host appends to one series per tenant: (bin, bytes) for every 1 µs bin in which it
//! accepted in-order payload of that tenant. A series grows only in bins with traffic, so
//! memory follows delivery activity, not run length times tenants. The results merge the
//! hosts' series (sum per tenant and bin); a window `[start, end)` counts the bins whose
//! start lies inside it, so windows on the µs grid are exact.

use crate::units::Time;

/// Width of a meter bin.
pub const METER_BIN: Time = Time(1_000_000);

/// Payload of one tenant delivered in one bin (merged over hosts in the results).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TenantBin {
    /// Tenant index.
    pub tenant: u16,
    /// Bin number (bin `b` covers `[b, b + 1)` µs).
    pub bin: u32,
    /// Payload bytes.
    pub bytes: u64,
}

/// One receiving host's meter.
#[derive(Clone, Debug, Default)]
pub struct TenantMeter {
    /// Per tenant, (bin, bytes) in increasing bin order.
    series: Vec<Vec<(u32, u32)>>,
}

impl TenantMeter {
    /// Counts `bytes` of `tenant` accepted at `now`.
    #[inline]
    pub fn add(&mut self, tenant: u16, now: Time, bytes: u32) {
        let t = tenant as usize;
        if t >= self.series.len() {
            self.series.resize_with(t + 1, Vec::new);
        }
        let bin = (now.0 / METER_BIN.0) as u32;
        let s = &mut self.series[t];
        match s.last_mut() {
            // A bin holds at most 1 µs of line rate (50 KB at 400 Gb/s): no overflow.
            Some((b, n)) if *b == bin => *n += bytes,
            _ => s.push((bin, bytes)),
        }
    }

    /// Appends this host's bins to `out`.
    pub fn drain_into(&self, out: &mut Vec<TenantBin>) {
        for (t, s) in self.series.iter().enumerate() {
            out.extend(s.iter().map(|&(bin, n)| TenantBin { tenant: t as u16, bin, bytes: n as u64 }));
        }
    }
}

/// Merges the bins of every host: one entry per (tenant, bin), sorted.
pub fn merge(mut bins: Vec<TenantBin>) -> Vec<TenantBin> {
    bins.sort_unstable_by_key(|b| (b.tenant, b.bin));
    let mut out: Vec<TenantBin> = Vec::with_capacity(bins.len());
    for b in bins {
        match out.last_mut() {
            Some(l) if l.tenant == b.tenant && l.bin == b.bin => l.bytes += b.bytes,
            _ => out.push(b),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_accumulate_and_merge_across_hosts() {
        let (mut a, mut b) = (TenantMeter::default(), TenantMeter::default());
        a.add(1, Time::from_ns(100), 1000);
        a.add(1, Time::from_ns(999), 1000);
        a.add(1, Time::from_ns(1000), 500);
        a.add(0, Time::from_ns(5), 7);
        b.add(1, Time::from_ns(200), 1);
        let mut all = Vec::new();
        a.drain_into(&mut all);
        b.drain_into(&mut all);
        let m = merge(all);
        assert_eq!(
            m,
            vec![
                TenantBin { tenant: 0, bin: 0, bytes: 7 },
                TenantBin { tenant: 1, bin: 0, bytes: 2001 },
                TenantBin { tenant: 1, bin: 1, bytes: 500 },
            ]
        );
    }
}
