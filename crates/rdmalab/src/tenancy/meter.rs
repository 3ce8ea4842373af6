//! Payload delivered per tenant over time, kept by each receiving host.
//!
//! Each host appends to one series per tenant: (bin, bytes) for every bin in which it
//! accepted in-order payload of that tenant. Bins start 1 µs wide. A series grows only in
//! bins with traffic, so memory follows delivery activity, not run length times tenants;
//! and a host that has kept `METER_HOST_CAP` bins doubles its bin width (adjacent pairs
//! summed), so a long run (a 100 GB transfer is 800 s at 1 Gb/s) keeps at most that many
//! bins per host instead of one per microsecond. Each host coarsens on its own deliveries
//! only, so the widths do not depend on how the hosts are partitioned among threads. The
//! results merge the hosts' series at the widest width any host reached (sum per tenant and
//! bin); a window `[start, end)` counts the bins whose start lies inside it, so windows on
//! that grid are exact.

use crate::units::Time;

/// Width of a meter bin before any coarsening.
pub const METER_BIN: Time = Time(1_000_000);

/// Bins one host keeps before it doubles its bin width: 16 B each, 1 MiB per host. 2^16
/// one-µs bins are 65 ms of continuous delivery, longer than the runs that read
/// microsecond windows (the attack experiments run 2-5 ms).
pub const METER_HOST_CAP: usize = 1 << 16;

/// Payload of one tenant delivered in one bin (merged over hosts in the results).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TenantBin {
    /// Tenant index.
    pub tenant: u16,
    /// Bin number (bin `b` covers `[b, b + 1)` bin widths, `Results::tenant_bin`).
    pub bin: u32,
    /// Payload bytes.
    pub bytes: u64,
}

/// One receiving host's meter.
#[derive(Clone, Debug, Default)]
pub struct TenantMeter {
    /// Per tenant, (bin, bytes) in increasing bin order.
    series: Vec<Vec<(u32, u64)>>,
    /// Bins are `METER_BIN << shift` wide.
    shift: u32,
    /// Bins kept over all tenants.
    kept: usize,
    /// The last bin of one tenant's series, held here instead of at its series' end while
    /// deliveries add to it: most deliveries then read no line but the meter's own, where
    /// reaching the series' end took two more, at every hop's end in a fabric of a
    /// thousand receivers. `None` while every bin is in `series`.
    open: Option<OpenBin>,
}

/// A series' last bin, out of line ([`TenantMeter::open`]).
#[derive(Clone, Copy, Debug)]
struct OpenBin {
    tenant: u16,
    bin: u32,
    bytes: u64,
}

impl TenantMeter {
    /// Counts `bytes` of `tenant` accepted at `now`.
    #[inline]
    pub fn add(&mut self, tenant: u16, now: Time, bytes: u32) {
        let bin = ((now.0 / METER_BIN.0) >> self.shift) as u32;
        match &mut self.open {
            Some(o) if o.tenant == tenant && o.bin == bin => o.bytes += bytes as u64,
            _ => self.open_bin(tenant, bin, bytes),
        }
    }

    /// `add` for a bin other than the open one: the open bin goes back to its series, and
    /// `tenant`'s last bin, or a new one, is opened.
    #[cold]
    fn open_bin(&mut self, tenant: u16, bin: u32, bytes: u32) {
        self.close();
        let t = tenant as usize;
        if t >= self.series.len() {
            self.series.resize_with(t + 1, Vec::new);
        }
        let s = &mut self.series[t];
        // The series' last bin is this one (another tenant's was open): it is reopened.
        let before = match s.last() {
            Some(&(b, n)) if b == bin => {
                s.pop();
                n
            }
            _ => {
                self.kept += 1;
                0
            }
        };
        self.open = Some(OpenBin { tenant, bin, bytes: before + bytes as u64 });
        if self.kept > METER_HOST_CAP {
            self.coarsen();
        }
    }

    /// Puts the open bin back at the end of its series.
    fn close(&mut self) {
        if let Some(o) = self.open.take() {
            self.series[o.tenant as usize].push((o.bin, o.bytes));
        }
    }

    /// Doubles the bin width: adjacent pairs of bins become one.
    fn coarsen(&mut self) {
        self.close();
        self.shift += 1;
        self.kept = 0;
        for s in &mut self.series {
            let mut w = 0;
            for r in 0..s.len() {
                let (bin, n) = (s[r].0 >> 1, s[r].1);
                if w > 0 && s[w - 1].0 == bin {
                    s[w - 1].1 += n;
                } else {
                    s[w] = (bin, n);
                    w += 1;
                }
            }
            s.truncate(w);
            self.kept += w;
        }
    }

    /// How many times this meter has doubled its bin width.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// Appends this host's bins to `out`, re-binned to width `METER_BIN << shift` (at least
    /// this meter's own).
    pub fn drain_into(&self, out: &mut Vec<TenantBin>, shift: u32) {
        let down = shift - self.shift;
        for (t, s) in self.series.iter().enumerate() {
            out.extend(s.iter().map(|&(bin, n)| TenantBin { tenant: t as u16, bin: bin >> down, bytes: n }));
        }
        if let Some(o) = self.open {
            out.push(TenantBin { tenant: o.tenant, bin: o.bin >> down, bytes: o.bytes });
        }
    }
}

/// Every meter's bins at the widest width among them: (bins merged, bin width).
pub fn merge_meters(meters: &[TenantMeter]) -> (Vec<TenantBin>, Time) {
    let shift = meters.iter().map(TenantMeter::shift).max().unwrap_or(0);
    let mut all = Vec::new();
    for m in meters {
        m.drain_into(&mut all, shift);
    }
    (merge(all), Time(METER_BIN.0 << shift))
}

/// Re-bins merged bins of width `from` to the wider `to` (both `METER_BIN` times a power of
/// two), as the parallel engine needs when partitions reached different widths.
pub fn rebin(bins: &mut [TenantBin], from: Time, to: Time) {
    let down = (to.0 / from.0).trailing_zeros();
    for b in bins {
        b.bin >>= down;
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
        let (m, width) = merge_meters(&[a, b]);
        assert_eq!(width, METER_BIN);
        assert_eq!(
            m,
            vec![
                TenantBin { tenant: 0, bin: 0, bytes: 7 },
                TenantBin { tenant: 1, bin: 0, bytes: 2001 },
                TenantBin { tenant: 1, bin: 1, bytes: 500 },
            ]
        );
    }

    /// Tenants interleaved at random over several coarsenings: every byte lands in the bin
    /// its time falls in at the final width, each (tenant, bin) once.
    #[test]
    fn interleaved_tenants_keep_every_byte_in_its_bin() {
        use rand::{Rng, SeedableRng};
        use std::collections::BTreeMap;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        let mut meter = TenantMeter::default();
        let mut adds = Vec::new();
        let mut now = 0u64;
        for _ in 0..400_000 {
            now += rng.gen_range(0..900); // ns: several adds a bin, some bins skipped
            let (tenant, bytes) = (rng.gen_range(0..3u16), rng.gen_range(1..5000u32));
            meter.add(tenant, Time::from_ns(now), bytes);
            adds.push((tenant, now, bytes));
        }
        let (m, width) = merge_meters(&[meter]);
        assert!(width.0 > METER_BIN.0, "the cap was passed: {width:?}");
        let mut want = BTreeMap::new();
        for (tenant, ns, bytes) in adds {
            *want.entry((tenant, (ns * 1000 / width.0) as u32)).or_insert(0u64) += bytes as u64;
        }
        let got: BTreeMap<_, _> = m.iter().map(|b| ((b.tenant, b.bin), b.bytes)).collect();
        assert_eq!(m.len(), got.len(), "one entry per (tenant, bin)");
        assert_eq!(got, want);
    }

    /// A host delivering every microsecond for longer than its cap keeps at most the cap,
    /// and no byte is lost on the way: the bytes per coarse bin equal the sum of the fine
    /// bins it covers, and the merge re-bins a finer host to the coarser width.
    #[test]
    fn a_long_run_coarsens_without_losing_bytes() {
        let (mut long, mut short) = (TenantMeter::default(), TenantMeter::default());
        let n = 3 * METER_HOST_CAP as u64;
        for us in 0..n {
            long.add(0, Time::from_ns(us * 1000 + 10), 100);
        }
        short.add(0, Time::from_ns(5_000), 1);
        assert_eq!(long.shift(), 2, "3 x cap one-µs bins need two doublings");
        let kept: usize = long.series.iter().map(Vec::len).sum::<usize>() + long.open.iter().count();
        assert!(kept <= METER_HOST_CAP, "{kept} bins kept");
        let (m, width) = merge_meters(&[long, short]);
        assert_eq!(width, Time(4 * METER_BIN.0));
        assert_eq!(m.iter().map(|b| b.bytes).sum::<u64>(), n * 100 + 1);
        assert_eq!(m[0], TenantBin { tenant: 0, bin: 0, bytes: 400 });
        assert_eq!(m[1], TenantBin { tenant: 0, bin: 1, bytes: 401 }, "µs 5 falls in bin 1 of 4 µs");
        let mut again = m.clone();
        rebin(&mut again, width, Time(8 * METER_BIN.0));
        assert_eq!((again[0].bin, again[1].bin, again[2].bin), (0, 0, 1));
    }
}
