//! The reference's queue-length monitor (`QLEN_MON_START`, `QLEN_MON_END`,
//! `QLEN_MON_FILE` under `rdmalab hpcc`): every 100 ns inside the window, each switch port's
//! queued bytes (all classes) fall into a histogram of 1 KB (1000 B) bins; the cumulative
//! histograms are written as a block every 100 ms of simulated time, in the reference's text
//! format (`time: <ns>`, then `switch port c0 c1 ...` per port, ports numbered from 1).
//!
//! Bounded: one histogram per switch port, as long as the largest queue in KB. Unlike the
//! reference, which keeps the simulation going until `QLEN_MON_END`, sampling stops when the
//! last flow completes, and a last block is written at the end of the run (the reference's
//! runs end on a 100 ms boundary; ours end when the flows do).

use std::io::Write;

use super::{Event, Simulation};
use crate::units::Time;

/// Sampling period (the reference's `qlen_mon_interval`).
pub const INTERVAL: Time = Time::from_ns(100);
/// Block period (the reference's `qlen_dump_interval`, 100 ms).
pub const DUMP_EVERY_NS: u64 = 100_000_000;

/// What to monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QlenMonitorConfig {
    /// First sample.
    pub start: Time,
    /// No sample after this time.
    pub end: Time,
}

/// The histograms and the blocks written so far.
#[derive(Debug, Default)]
pub struct QlenMonitor {
    /// Per switch port, in (switch id, port) order: (switch, ifindex, port id, counts per KB).
    ports: Vec<(u32, u16, usize, Vec<u64>)>,
    /// The text of the blocks written so far.
    pub text: Vec<u8>,
    last_block: Option<Time>,
}

impl Simulation {
    /// Schedules the first sample (from `new`, when the scenario asks for the monitor).
    pub(super) fn schedule_qlen_monitor(&mut self) {
        let Some(cfg) = self.cfg.qlen_monitor else { return };
        let mut mon = QlenMonitor::default();
        for s in self.topo.switches() {
            for &p in &self.topo.nodes[s.idx()].ports {
                mon.ports.push((s.0, self.topo.ports[p.idx()].ifindex, p.idx(), Vec::new()));
            }
        }
        self.qlen_monitor = Some(Box::new(mon));
        self.queue.push(cfg.start, Event::QlenMonitor);
    }

    /// One sample; a block on every 100 ms boundary; the next sample while flows remain.
    pub(super) fn on_qlen_monitor(&mut self) {
        let (Some(cfg), Some(mon)) = (self.cfg.qlen_monitor, self.qlen_monitor.as_mut()) else { return };
        for (_, _, port, counts) in &mut mon.ports {
            let kb = (self.ports[*port].total_queued() / 1000) as usize;
            if counts.len() <= kb {
                counts.resize(kb + 1, 0);
            }
            counts[kb] += 1;
        }
        if self.now.ns().is_multiple_of(DUMP_EVERY_NS) && self.now.0.is_multiple_of(1000) {
            mon.write_block(self.now);
        }
        let next = self.now + INTERVAL;
        if next <= cfg.end && self.flows_done < self.flows.len() {
            self.queue.push(next, Event::QlenMonitor);
        }
    }

    /// The monitor file's text, with a last block at the end of the run (empty when the
    /// monitor is off).
    pub fn qlen_monitor_text(&mut self) -> Vec<u8> {
        let now = self.now;
        match self.qlen_monitor.as_mut() {
            Some(mon) => {
                if mon.last_block != Some(now) && !mon.ports.iter().all(|p| p.3.is_empty()) {
                    mon.write_block(now);
                }
                mon.text.clone()
            }
            None => Vec::new(),
        }
    }
}

impl QlenMonitor {
    fn write_block(&mut self, now: Time) {
        self.last_block = Some(now);
        let _ = writeln!(self.text, "time: {}", now.ns());
        for (sw, ifindex, _, counts) in &self.ports {
            let _ = write!(self.text, "{sw} {ifindex}");
            for c in counts {
                let _ = write!(self.text, " {c}");
            }
            let _ = writeln!(self.text);
        }
    }
}
