//! Transmission times of the fabric's links, precomputed.
//!
//! Every packet transmission needs `bytes → time` at its link's rate. Under the reference's
//! timing model that is floating-point and 128-bit arithmetic, and even exact picoseconds
//! need a 128-bit division for arbitrary rates. A fabric has few distinct link rates and
//! packet sizes are bounded by the MTU, so we tabulate once per rate and look up per packet.

use crate::units::{Rate, Time, TimingModel};

/// Tables of transmission time by packet size, one per distinct link rate.
#[derive(Clone, Debug)]
pub struct TxClock {
    timing: TimingModel,
    rates: Vec<Rate>,
    tables: Vec<Vec<Time>>,
}

impl TxClock {
    /// Tables for `rates` covering sizes `0..=max_bytes`.
    pub fn new(timing: TimingModel, rates: impl IntoIterator<Item = Rate>, max_bytes: usize) -> TxClock {
        let mut distinct: Vec<Rate> = rates.into_iter().collect();
        distinct.sort();
        distinct.dedup();
        let tables = distinct.iter().map(|&r| (0..=max_bytes as u64).map(|b| timing.tx_time(r, b)).collect()).collect();
        TxClock { timing, rates: distinct, tables }
    }

    /// The table index of `rate` (`u8::MAX` when the rate has no table).
    pub fn class_of(&self, rate: Rate) -> u8 {
        self.rates.iter().position(|&r| r == rate).map_or(u8::MAX, |i| i as u8)
    }

    /// The rates with a table, by table index.
    pub fn rates(&self) -> &[Rate] {
        &self.rates
    }

    /// Time to send `bytes` at `rate`, whose table index is `class`.
    #[inline]
    pub fn tx(&self, class: u8, rate: Rate, bytes: u32) -> Time {
        match self.tables.get(class as usize).and_then(|t| t.get(bytes as usize)) {
            Some(&t) => t,
            None => self.timing.tx_time(rate, bytes as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_equals_formula_inside_and_outside_the_table() {
        for timing in [TimingModel::Exact, TimingModel::Ns3, TimingModel::Ns3Floor] {
            let c = TxClock::new(timing, [Rate::gbps(100), Rate::gbps(400), Rate::gbps(100)], 1500);
            for rate in [Rate::gbps(100), Rate::gbps(400), Rate::gbps(25)] {
                let class = c.class_of(rate);
                for bytes in [0u32, 1, 60, 1048, 1500, 1501, 9000] {
                    assert_eq!(c.tx(class, rate, bytes), timing.tx_time(rate, bytes as u64));
                }
            }
        }
    }
}
