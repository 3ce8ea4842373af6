//! ECN marking at switch egress (RED-style, the reference's `ShouldSendCN`).

use crate::units::Rate;

/// Marking thresholds of one port rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcnParams {
    /// Queue bytes above which marking starts.
    pub kmin: u64,
    /// Queue bytes above which every packet is marked.
    pub kmax: u64,
    /// Marking probability at `kmax`.
    pub pmax: f64,
}

impl EcnParams {
    /// Probability of marking a packet leaving a queue that still holds `qbytes` bytes
    /// (the departing packet excluded): 0 up to kmin, linear to pmax at kmax, 1 above.
    /// Comparisons are strict, as in the reference.
    #[inline]
    pub fn mark_probability(&self, qbytes: u64) -> f64 {
        if qbytes > self.kmax {
            1.0
        } else if qbytes > self.kmin {
            if self.kmax == self.kmin {
                return 1.0;
            }
            self.pmax * (qbytes - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        } else {
            0.0
        }
    }
}

/// ECN settings per port rate (the reference's KMIN/KMAX/PMAX maps).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EcnConfig {
    /// (rate, thresholds) pairs.
    pub by_rate: Vec<(Rate, EcnParams)>,
    /// Values that replace the per-rate ones on every port (`fabric.ecn_kmin`, `ecn_kmax`,
    /// `ecn_pmax`), each independently.
    pub overrides: EcnOverrides,
}

/// Marking parameters forced on every port whatever its rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EcnOverrides {
    /// Kmin in bytes.
    pub kmin: Option<u64>,
    /// Kmax in bytes.
    pub kmax: Option<u64>,
    /// Pmax.
    pub pmax: Option<f64>,
}

impl EcnOverrides {
    /// `p` with the overridden fields replaced.
    pub fn apply(&self, p: EcnParams) -> EcnParams {
        EcnParams {
            kmin: self.kmin.unwrap_or(p.kmin),
            kmax: self.kmax.unwrap_or(p.kmax),
            pmax: self.pmax.unwrap_or(p.pmax),
        }
    }
}

impl EcnConfig {
    /// The reference's `run.py --bw 100` values: 100G 400/1600 KB, 400G 1600/6400 KB, pmax 0.2;
    /// other rates scaled linearly from the 100G entry.
    pub fn hpcc_default() -> EcnConfig {
        EcnConfig {
            by_rate: vec![
                (Rate::gbps(100), EcnParams { kmin: 400_000, kmax: 1_600_000, pmax: 0.2 }),
                (Rate::gbps(400), EcnParams { kmin: 1_600_000, kmax: 6_400_000, pmax: 0.2 }),
            ],
            overrides: EcnOverrides::default(),
        }
    }

    /// The same settings with `o` forced on every port: the listed rates now, the scaled
    /// ones when they are looked up.
    pub fn with_overrides(mut self, o: EcnOverrides) -> EcnConfig {
        for (_, p) in &mut self.by_rate {
            *p = o.apply(*p);
        }
        self.overrides = o;
        self
    }

    /// Thresholds for `rate`, if configured.
    pub fn for_rate(&self, rate: Rate) -> Option<EcnParams> {
        self.by_rate.iter().find(|(r, _)| *r == rate).map(|(_, p)| *p)
    }

    /// Thresholds for `rate`: the configured entry, or the 100G entry scaled by rate/100G
    /// (the usual rule of thumb: thresholds proportional to bandwidth).
    pub fn for_rate_or_scaled(&self, rate: Rate) -> Option<EcnParams> {
        if let Some(p) = self.for_rate(rate) {
            return Some(p); // overrides already applied (`with_overrides`)
        }
        let (r0, p0) = self.by_rate.first()?;
        let scale = |b: u64| (b as u128 * rate.0 as u128 / r0.0 as u128) as u64;
        Some(self.overrides.apply(EcnParams { kmin: scale(p0.kmin), kmax: scale(p0.kmax), pmax: p0.pmax }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_between_thresholds() {
        let p = EcnParams { kmin: 100, kmax: 300, pmax: 0.2 };
        assert_eq!(p.mark_probability(100), 0.0);
        assert!((p.mark_probability(200) - 0.1).abs() < 1e-12);
        assert!((p.mark_probability(300) - 0.2).abs() < 1e-12);
        assert_eq!(p.mark_probability(301), 1.0);
    }

    #[test]
    fn overrides_reach_listed_and_scaled_rates() {
        let o = EcnOverrides { kmin: Some(200_000), kmax: Some(200_000), pmax: None };
        let e = EcnConfig::hpcc_default().with_overrides(o);
        for gbps in [100, 400, 25] {
            let p = e.for_rate_or_scaled(Rate::gbps(gbps)).unwrap();
            assert_eq!((p.kmin, p.kmax, p.pmax), (200_000, 200_000, 0.2), "{gbps}G");
        }
        // Step marking: kmin == kmax marks everything above it.
        let p = e.for_rate_or_scaled(Rate::gbps(100)).unwrap();
        assert_eq!((p.mark_probability(200_000), p.mark_probability(200_001)), (0.0, 1.0));
    }
}
