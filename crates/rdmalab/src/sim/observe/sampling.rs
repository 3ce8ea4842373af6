//! Periodic sampling: switch queue lengths (`SimConfig::queue_sample_interval`), the rate
//! and delivered throughput of every active QP (`SimConfig::rate_sample_interval`) and the
//! bytes every port sent per interval (`SimConfig::link_sample_interval`: link utilisation
//! per direction).
//!
//! One `Sample` event serves all three: it fires at the earliest of the next sample times,
//! takes the samples that are due and schedules the next one. With every interval off no
//! event is ever scheduled, and nothing here runs per packet: the samplers read cumulative
//! counters (a QP's acknowledged bytes `snd_una`, a port's transmitted bytes) when they
//! fire and keep the previous value, so a rate is the difference over the interval.
//!
//! The chain of `Sample` events ends at the first one after the last flow completed. One
//! partition of a parallel run cannot know that instant: there, every partition runs the
//! chain on the same schedule, sampling only its own ports and QPs, until the driver tells
//! it (at the end of a window) when the last flow completed; the samples it took past the
//! chain's end in that window are then dropped (`Simulation::end_observers`), so the rows
//! are those of one partition.

use crate::error::{Error, Result};
use crate::ids::{FlowId, PortId, QpId};
use crate::rnic::transport::Transport;
use crate::sim::{Event, Simulation};
use crate::stats::RateSample;
use crate::units::{Rate, Time};

/// A QP the rate sampler follows until it finishes.
#[derive(Clone, Copy, Debug)]
struct Watched {
    qp: QpId,
    flow: FlowId,
    /// `snd_una` at the previous sample.
    acked: u64,
}

/// Sampling state of a run.
#[derive(Debug)]
pub(in crate::sim) struct Sampler {
    /// When the next queue / rate sample is due (`Time::MAX`: that sampling is off).
    next_queue: Time,
    next_rate: Time,
    next_link: Time,
    /// Every port's transmitted bytes at the previous link sample.
    link_bytes: Vec<u64>,
    /// The link samples so far: (end of the interval, port, bytes sent in the interval).
    pub(in crate::sim) links: Vec<(Time, PortId, u64)>,
    /// QPs `[0, seen)` have been picked up. QPs are only ever appended, so picking up the
    /// new ones is a walk over the tail, not a scan of every QP of the run.
    seen: usize,
    /// Unfinished QPs (and those that finished since the last sample), by QP id.
    watched: Vec<Watched>,
    /// When the previous rate sample was taken.
    last_rate: Time,
    /// The rate samples so far.
    pub(in crate::sim) rates: Vec<RateSample>,
    /// Origin order: QPs opened for flows since the previous rate sample, with their flow
    /// (a flow's QP has a slot set up in advance, not appended: `seen` cannot find it).
    opened: Vec<(QpId, FlowId)>,
    /// A partition of a parallel run: when the last flow completed (`Time::MAX` while the
    /// driver has not said), and the time of the chain's last event then (`Time::MAX`: not known).
    flows_end: Time,
    last_sample: Time,
    /// When the latest `Sample` event fired.
    fired: Time,
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler {
            next_queue: Time::MAX,
            next_rate: Time::MAX,
            next_link: Time::MAX,
            link_bytes: Vec::new(),
            links: Vec::new(),
            seen: 0,
            watched: Vec::new(),
            last_rate: Time::ZERO,
            rates: Vec::new(),
            opened: Vec::new(),
            flows_end: Time::MAX,
            last_sample: Time::MAX,
            fired: Time::ZERO,
        }
    }
}

impl Simulation {
    /// Checks the intervals and schedules the first sample if any sampling is on (once,
    /// from `Simulation::new`).
    pub(in crate::sim) fn schedule_first_sample(&mut self) -> Result<()> {
        for (name, every) in [
            ("queue_sample_interval", self.cfg.queue_sample_interval),
            ("rate_sample_interval", self.cfg.rate_sample_interval),
            ("link_sample_interval", self.cfg.link_sample_interval),
        ] {
            if every == Some(Time::ZERO) {
                // A zero interval would re-fire at the same instant forever.
                return Err(Error::scenario(name, "must be positive"));
            }
        }
        if self.cfg.queue_sample_interval.is_some() {
            self.sampler.next_queue = self.cfg.queue_sample_start;
        }
        if let Some(every) = self.cfg.rate_sample_interval {
            // The first rate sample comes one interval in: throughput needs a previous one
            // (time zero, when nothing has been acknowledged).
            self.sampler.next_rate = every;
        }
        if let Some(every) = self.cfg.link_sample_interval {
            // Like rates: the first sample closes the first interval.
            self.sampler.next_link = every;
            self.sampler.link_bytes = vec![0; self.ports.len()];
        }
        let first = self.sampler.next_queue.min(self.sampler.next_rate).min(self.sampler.next_link);
        if first != Time::MAX {
            self.queue.push(first, Event::Sample);
        }
        Ok(())
    }

    /// Takes the samples due now and schedules the next, while flows remain.
    pub(in crate::sim) fn on_sample(&mut self) {
        if self.now > self.sampler.last_sample {
            return; // a partition's chain ran on past its end (see `end_observers`)
        }
        self.sampler.fired = self.now;
        if let Some(every) = self.cfg.queue_sample_interval {
            if self.now >= self.sampler.next_queue {
                self.sample_queues();
                self.sampler.next_queue = self.now + every;
            }
        }
        if let Some(every) = self.cfg.rate_sample_interval {
            if self.now >= self.sampler.next_rate {
                self.sample_rates();
                self.sampler.next_rate = self.now + every;
            }
        }
        if let Some(every) = self.cfg.link_sample_interval {
            if self.now >= self.sampler.next_link {
                self.sample_links();
                self.sampler.next_link = self.now + every;
            }
        }
        let next = self.sampler.next_queue.min(self.sampler.next_rate).min(self.sampler.next_link);
        if self.samples_over_cap() {
            return;
        }
        // A partition cannot count the others' flows: it goes on until the driver says.
        let flows_remain =
            if self.part.is_some() { self.now < self.sampler.flows_end } else { self.flows_done < self.work_total() };
        if flows_remain && next != Time::MAX {
            self.queue.push(next, Event::Sample);
        }
    }

    /// True (once, with a warning) when the samples kept reach `sample_max_bytes`: the chain
    /// stops there. The scenario parser refuses what it can tell will exceed the cap before
    /// the run; this catches runs that last far longer than their line-rate bound.
    fn samples_over_cap(&mut self) -> bool {
        let row = std::mem::size_of::<(Time, PortId, u64)>();
        let bytes = (self.queue_samples.len() + self.sampler.links.len()) * row
            + self.sampler.rates.len() * std::mem::size_of::<RateSample>();
        if (bytes as u64) < self.cfg.sample_max_bytes {
            return false;
        }
        self.warnings.push(format!(
            "sampling stopped at {}: the queue, link and rate samples reached the cap of {} bytes; \
             use longer sample intervals",
            super::watch::us(self.now),
            self.cfg.sample_max_bytes
        ));
        true
    }

    /// The first `Sample` event at or after `t`: where the chain ends when the last flow
    /// completes at `t` (every schedule is a fixed progression: `next = now + every`).
    fn first_sample_at_or_after(&self, t: Time) -> Time {
        let first = |from: Time, every: Option<Time>| match every {
            None => Time::MAX,
            Some(_) if t <= from => from,
            Some(e) => Time(from.0 + (t.0 - from.0).div_ceil(e.0) * e.0),
        };
        let c = &self.cfg;
        let queue = if c.queue_sample_interval.is_some() { c.queue_sample_start } else { Time::MAX };
        first(queue, c.queue_sample_interval)
            .min(first(c.rate_sample_interval.unwrap_or(Time::MAX), c.rate_sample_interval))
            .min(first(c.link_sample_interval.unwrap_or(Time::MAX), c.link_sample_interval))
    }

    /// A partition learns that the last flow of the run completed at `t`: its chain ends at
    /// the first sample at or after `t`, as one simulation's would, and rows it took later
    /// in the window that just ended are dropped.
    pub(in crate::sim) fn end_sampling(&mut self, t: Time) {
        let last = self.first_sample_at_or_after(t);
        let s = &mut self.sampler;
        (s.flows_end, s.last_sample) = (t, last);
        let late = |time: Time| time > last;
        while self.queue_samples.last().is_some_and(|r| late(r.0)) {
            self.queue_samples.pop();
        }
        while s.rates.last().is_some_and(|r| late(r.time)) {
            s.rates.pop();
        }
        while s.links.last().is_some_and(|r| late(r.0)) {
            s.links.pop();
        }
        s.fired = s.fired.min(last);
    }

    /// When the latest `Sample` event that counts fired (zero if none).
    pub(in crate::sim) fn last_sample_fired(&self) -> Time {
        self.sampler.fired
    }

    /// Origin order, rate sampling on: the sampler picks QP `qp` (flow `flow`) up at its
    /// next sample.
    pub(in crate::sim) fn note_opened_for_sampling(&mut self, qp: QpId, flow: FlowId) {
        if self.cfg.rate_sample_interval.is_some() && self.origin_order {
            self.sampler.opened.push((qp, flow));
        }
    }

    /// Every switch port's queued bytes (a partition's own).
    fn sample_queues(&mut self) {
        for (i, p) in self.ports.iter().enumerate() {
            if !self.switch_of[p.node.idx()].is_none() && self.owns(p.node) {
                self.queue_samples.push((self.now, PortId::new(i), p.total_queued()));
            }
        }
    }

    /// Bytes every port sent since the previous link sample (one row per port, both
    /// directions of every link, idle ones included so that a table shows the zeros; a
    /// partition's own ports: the sender counts).
    fn sample_links(&mut self) {
        let part = self.part.as_deref();
        for (i, p) in self.ports.iter().enumerate() {
            if part.is_some_and(|part| !part.owns(p.node)) {
                continue;
            }
            // A port counts a packet's bytes when its transmission starts; a sample counts
            // only what has left by its time, so that no interval holds more than its line
            // rate's worth (a packet begun just before a sample would count whole in it).
            let unsent = p.tx_end.0 .0.saturating_sub(self.now.0) as u128 * p.rate.0 as u128 / 8_000_000_000_000;
            let serialized = p.tx_bytes.saturating_sub(unsent as u64);
            let s = &mut self.sampler;
            let sent = serialized.saturating_sub(s.link_bytes[i]);
            s.link_bytes[i] = s.link_bytes[i].max(serialized);
            s.links.push((self.now, PortId::new(i), sent));
        }
    }

    /// One row per watched QP: its CC rate now and its acknowledged bytes since the
    /// previous sample as a throughput. A QP that finished gets its last row, then is
    /// dropped, so rows stop with the flow.
    fn sample_rates(&mut self) {
        let now = self.now;
        let s = &mut self.sampler;
        // The origin order sets up flow i's QP in slot i: those come through `opened`, the
        // walk below finds only what is appended after them (applications' QPs).
        let first = if self.origin_order { s.seen.max(self.flows.len()) } else { s.seen };
        for (qp, flow) in s.opened.drain(..) {
            s.watched.push(Watched { qp, flow, acked: 0 });
        }
        let part = self.part.as_deref();
        for (i, qp) in self.qps.iter().enumerate().skip(first) {
            // A partition watches the QPs its hosts send on: not another partition's setup
            // QPs, nor the receiver halves it keeps (`rx_slot`).
            if part.is_some_and(|p| !p.owns(qp.src)) {
                continue;
            }
            // One QP per flow: QP i was opened for flow i (`on_flow_arrival`); its first
            // message says so while it has one. An application's QP (open before its
            // first WR) is labelled by the flow row of the message it carries, once it has one.
            let unknown = if qp.close_when_idle { FlowId::new(i) } else { FlowId::NONE };
            let flow = qp.messages.front().map_or(unknown, |m| m.flow);
            s.watched.push(Watched { qp: QpId::new(i), flow, acked: 0 });
        }
        s.seen = self.qps.len();
        let interval_ps = (now - s.last_rate).0.max(1) as u128;
        let (qps, rates, groups, cc, uet) = (&self.qps, &mut s.rates, &self.groups, &self.cfg.cc, &self.mech.uet);
        s.watched.retain_mut(|w| {
            let qp = &qps[w.qp.idx()];
            if w.flow.is_none() {
                w.flow = qp.messages.front().map_or(FlowId::NONE, |m| m.flow);
            }
            let bytes = qp.snd_una.saturating_sub(w.acked);
            w.acked = qp.snd_una;
            let bps = bytes as u128 * 8 * 1_000_000_000_000 / interval_ps;
            rates.push(RateSample {
                time: now,
                qp: w.qp,
                flow: w.flow.0,
                src: qp.src,
                dst: qp.dst,
                rate: qp.rate,
                throughput: Rate(bps as u64),
                ccti: groups.get(qp.cc_group.idx()).and_then(|g| g.cct_index(cc)).unwrap_or(0),
                // A UET QP under a window CC: the algorithm's window (its `win` is the gate's).
                window: match qp.transport {
                    Transport::Uet => uet.cc_window(w.qp.idx()).unwrap_or(qp.window()),
                    _ => qp.window(),
                },
            });
            !qp.finished
        });
        s.last_rate = now;
    }
}
