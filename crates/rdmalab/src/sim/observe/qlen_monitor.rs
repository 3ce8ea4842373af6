//! The reference's queue-length monitor (`QLEN_MON_START`, `QLEN_MON_END`,
//! `QLEN_MON_FILE` under `rdmalab hpcc`): every 100 ns inside the window, each switch port's
//! queued bytes (all classes) fall into a histogram of 1 KB (1000 B) bins; the cumulative
//! histograms are written as a block every 100 ms of simulated time, in the reference's text
//! format (`time: <ns>`, then `switch port c0 c1 ...` per port, ports numbered from 1).
//!
//! A sample of an empty port (most of them, most of the time) costs one test: such samples
//! are not counted per port but found at a block as the monitor's samples less the port's
//! counted ones (`MonPort::counts_at`).
//!
//! Bounded: one histogram per switch port, as long as the largest queue in KB. Unlike the
//! reference, which keeps the simulation going until `QLEN_MON_END`, sampling stops when the
//! last flow completes, and a last block is written at the end of the run (the reference's
//! runs end on a 100 ms boundary; ours end when the flows do).

use std::io::Write;

use crate::sim::{Event, Simulation};
use crate::units::Time;

/// Sampling period (the reference's `qlen_mon_interval`).
pub const INTERVAL: Time = Time::from_ns(100);
/// Block period (the reference's `qlen_dump_interval`, 100 ms).
pub const DUMP_EVERY_NS: u64 = 100_000_000;

/// One monitored switch port.
#[derive(Debug)]
struct MonPort {
    /// Where it stands among every switch port of the fabric (the file's row order).
    row: u32,
    switch: u32,
    ifindex: u16,
    port: usize,
    /// Samples per queue length in KB, of the samples that found a packet queued: those
    /// that found the port empty are the monitor's `samples` less the sum of these.
    counts: Vec<u64>,
}

impl MonPort {
    /// The full histogram after `samples` samples: the counted ones, and in bin 0 also the
    /// samples that found the port empty. Empty when nothing was sampled.
    fn counts_at(&self, samples: u64) -> Vec<u64> {
        let mut out = self.counts.clone();
        if samples == 0 {
            return out;
        }
        if out.is_empty() {
            out.push(0);
        }
        out[0] += samples - self.counts.iter().sum::<u64>();
        out
    }
}

/// The histograms and the blocks written so far.
///
/// A partition of a parallel run monitors its own switches only; the driver merges the
/// partitions' ports into each block by row (`QlenMonitor::render`). Its chain runs until the
/// driver says when the last flow completed (as `sim::sampling`'s does), so it may sample past
/// the chain's end within a window: those samples are undone from a log kept since the
/// driver last said that flows remain (`Simulation::observers_go_on`).
#[derive(Debug, Default)]
pub struct QlenMonitor {
    /// Per switch port, in (switch id, port) order.
    ports: Vec<MonPort>,
    /// The blocks written so far: their time and every port's histogram then.
    blocks: Vec<(Time, Vec<Vec<u64>>)>,
    /// Samples taken (of every port).
    samples: u64,
    /// A partition's log of the samples not yet known to count: (time, port index, KB bin)
    /// of each port sampled with a packet queued, and (time, `u32::MAX`, 0) of each sample.
    undo: Option<Vec<(Time, u32, u32)>>,
    /// A partition: when the last flow completed (`Time::MAX` while the driver has not
    /// said) and the chain's last sample then.
    flows_end: Time,
    last_sample: Time,
    /// When the latest sample that counts was taken (zero if none).
    fired: Time,
}

impl Simulation {
    /// Schedules the first sample (from `new`, when the scenario asks for the monitor).
    pub(in crate::sim) fn schedule_qlen_monitor(&mut self) {
        let Some(cfg) = self.cfg.qlen_monitor else { return };
        let mut mon = QlenMonitor { flows_end: Time::MAX, last_sample: Time::MAX, ..QlenMonitor::default() };
        let mut row = 0;
        for s in self.topo.switches() {
            for &p in &self.topo.nodes[s.idx()].ports {
                let ifindex = self.topo.ports[p.idx()].ifindex;
                if self.owns(s) {
                    mon.ports.push(MonPort { row, switch: s.0, ifindex, port: p.idx(), counts: Vec::new() });
                }
                row += 1;
            }
        }
        self.qlen_monitor = Some(Box::new(mon));
        self.queue.push(cfg.start, Event::QlenMonitor);
    }

    /// One sample; a block on every 100 ms boundary; the next sample while flows remain.
    pub(in crate::sim) fn on_qlen_monitor(&mut self) {
        let (Some(cfg), Some(mon)) = (self.cfg.qlen_monitor, self.qlen_monitor.as_mut()) else { return };
        if self.now > mon.last_sample {
            return; // a partition's chain ran on past its end
        }
        mon.fired = self.now;
        let logging = self.part.is_some();
        mon.samples += 1;
        if logging {
            mon.undo.get_or_insert_with(Vec::new).push((self.now, u32::MAX, 0));
        }
        for (i, p) in mon.ports.iter_mut().enumerate() {
            let port = &self.ports[p.port];
            if !port.has_queued() {
                continue;
            }
            let kb = (port.total_queued() / 1000) as usize;
            if p.counts.len() <= kb {
                p.counts.resize(kb + 1, 0);
            }
            p.counts[kb] += 1;
            if logging {
                mon.undo.get_or_insert_with(Vec::new).push((self.now, i as u32, kb as u32));
            }
        }
        if self.now.ns().is_multiple_of(DUMP_EVERY_NS) && self.now.0.is_multiple_of(1000) {
            mon.write_block(self.now);
        }
        let next = self.now + INTERVAL;
        // A partition cannot count the others' flows: it goes on until the driver says.
        let flows_remain =
            if self.part.is_some() { self.now < mon.flows_end } else { self.flows_done < self.flows.len() };
        if next <= cfg.end && flows_remain {
            self.queue.push(next, Event::QlenMonitor);
        }
    }

    /// A partition monitors its own switches only (their rows keep their place in the file).
    pub(in crate::sim) fn monitor_own_switches(&mut self) {
        let Some(mon) = self.qlen_monitor.as_mut() else { return };
        let part = self.part.as_deref();
        let ports = &self.ports;
        mon.ports.retain(|p| part.is_none_or(|part| part.owns(ports[p.port].node)));
    }

    /// A partition: the driver saw flows unfinished at a window's end, so every sample
    /// so far counts (the undo log restarts).
    pub(in crate::sim) fn monitor_goes_on(&mut self) {
        if let Some(mon) = self.qlen_monitor.as_mut() {
            mon.undo.get_or_insert_with(Vec::new).clear();
        }
    }

    /// A partition learns that the last flow completed at `t`: the chain ends at the first
    /// sample at or after `t`, and the samples and blocks taken after it are undone.
    pub(in crate::sim) fn end_monitor(&mut self, t: Time) {
        let (Some(cfg), Some(mon)) = (self.cfg.qlen_monitor, self.qlen_monitor.as_mut()) else { return };
        let after = t.0.saturating_sub(cfg.start.0).div_ceil(INTERVAL.0);
        let last = Time(cfg.start.0.saturating_add(after.saturating_mul(INTERVAL.0)));
        (mon.flows_end, mon.last_sample) = (t, last);
        for (time, i, kb) in mon.undo.take().unwrap_or_default() {
            if time <= last {
                continue;
            }
            match mon.ports.get_mut(i as usize) {
                Some(p) => p.counts[kb as usize] -= 1,
                None => mon.samples -= 1,
            }
        }
        while mon.blocks.last().is_some_and(|b| b.0 > last) {
            mon.blocks.pop();
        }
        mon.fired = mon.fired.min(last);
    }

    /// When the monitor's latest sample that counts was taken (zero if none).
    pub(in crate::sim) fn last_monitor_sample(&self) -> Time {
        self.qlen_monitor.as_ref().map_or(Time::ZERO, |m| m.fired)
    }

    /// The monitor file's text, with a last block at the end of the run (empty when the
    /// monitor is off).
    pub fn qlen_monitor_text(&mut self) -> Vec<u8> {
        let now = self.now;
        self.qlen_monitor.as_deref().map_or_else(Vec::new, |m| QlenMonitor::render(&[m], now))
    }

    /// The monitor, when the scenario asks for one.
    pub(in crate::sim) fn qlen_monitor(&self) -> Option<&QlenMonitor> {
        self.qlen_monitor.as_deref()
    }
}

impl QlenMonitor {
    fn write_block(&mut self, now: Time) {
        let samples = self.samples;
        self.blocks.push((now, self.ports.iter().map(|p| p.counts_at(samples)).collect()));
    }

    /// The file's text from the monitors of every partition (one for a sequential run):
    /// their blocks, ports merged by row, and a last block at `end`, the end of the run,
    /// unless one was written then or nothing was sampled.
    pub(in crate::sim) fn render(parts: &[&QlenMonitor], end: Time) -> Vec<u8> {
        let mut rows: Vec<(u32, usize, usize)> = Vec::new(); // (row, partition, port index)
        for (k, m) in parts.iter().enumerate() {
            rows.extend(m.ports.iter().enumerate().map(|(i, p)| (p.row, k, i)));
        }
        rows.sort_unstable();
        let blocks = parts.first().map_or(0, |m| m.blocks.len());
        debug_assert!(parts.iter().all(|m| m.blocks.len() == blocks), "every partition writes the same blocks");
        let mut text = Vec::new();
        for b in 0..blocks {
            block_text(&mut text, parts[0].blocks[b].0, parts, &rows, |k, i| &parts[k].blocks[b].1[i]);
        }
        let last_block = parts.first().and_then(|m| m.blocks.last()).map(|b| b.0);
        let sampled = parts.iter().any(|m| m.samples > 0 && !m.ports.is_empty());
        if last_block != Some(end) && sampled {
            let now: Vec<Vec<Vec<u64>>> =
                parts.iter().map(|m| m.ports.iter().map(|p| p.counts_at(m.samples)).collect()).collect();
            block_text(&mut text, end, parts, &rows, |k, i| &now[k][i]);
        }
        text
    }
}

/// One block: `time: <ns>`, then a line per port in `rows` order with its counts.
fn block_text<'c>(
    text: &mut Vec<u8>,
    time: Time,
    parts: &[&QlenMonitor],
    rows: &[(u32, usize, usize)],
    counts: impl Fn(usize, usize) -> &'c [u64],
) {
    let _ = writeln!(text, "time: {}", time.ns());
    for &(_, k, i) in rows {
        let p = &parts[k].ports[i];
        let _ = write!(text, "{} {}", p.switch, p.ifindex);
        for c in counts(k, i) {
            let _ = write!(text, " {c}");
        }
        let _ = writeln!(text);
    }
}
