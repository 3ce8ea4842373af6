//! What `Runner::auto` expects of the parallel engine for a scenario, before running it:
//! the events the run makes, how evenly the automatic map splits them, and how many windows
//! it takes. Each window costs two barrier waits whatever its work, so a light run (few
//! events per window) is slower cut than whole; `docs/parallel.md` ("When `auto` cuts")
//! gives the rule and the measurements behind its constants.

use crate::config::Scenario;
use crate::units::Time;

/// Events one payload packet makes, its hops, its ACK's and the timers (16.7, 16.5 and 15.6
/// in the k = 4 and k = 16 fat trees under WebSearch measured in `docs/parallel.md`).
const EVENTS_PER_PACKET: f64 = 16.0;
/// One event on one thread and one window's synchronisation (two barrier waits, a thread
/// woken on the other core each), in units of about 100 ns: an event takes 86 ns (k = 4) to
/// 192 ns (k = 16) on the 2-core development machine, a window about 100 us there (the
/// barrier's wake-ups on an idle virtual machine; fitted in `docs/parallel.md`).
const EVENT_COST: f64 = 1.0;
const WINDOW_COST: f64 = 1000.0;
/// An event costs this much more in a partition (origin-order keys, the exchange).
const PARALLEL_EVENT_COST: f64 = 1.1;
/// The parallel engine must be expected this much faster to be chosen: the estimate is
/// rough, and a wrong sequential choice only forgoes a speed-up, a wrong parallel one costs.
const MARGIN: f64 = 1.1;

/// The estimate for one cut of a scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Events of the whole run.
    pub events: f64,
    /// Windows the run takes (an upper bound: idle stretches are skipped).
    pub windows: f64,
    /// The largest partition's share of the work (1 / partitions when balanced).
    pub largest_share: f64,
}

impl Estimate {
    /// Estimates `s` cut by `part_of` with windows of `lookahead`. Work: the payload packets of
    /// every flow, multipath message, job transfer and collective rank's bytes
    /// (`balance::transfers`), each half to its source's partition, half to its destination's;
    /// closed-loop applications, whose load depends on their hosts' model, count for nothing
    /// (so a run of them alone stays whole). Time: the longest of the starts' span, any
    /// transfer's own time at its source's line rate after its start, and any host's bytes
    /// sent or received at its line rate.
    pub fn new(s: &Scenario, part_of: &[u16], lookahead: Time) -> Estimate {
        let parts = part_of.iter().map(|&p| p as usize + 1).max().unwrap_or(1);
        let mtu = s.config.mtu.max(1) as f64;
        let topo = &s.topology;
        let line = |h: usize| {
            topo.nodes[h].ports.first().map_or(1.0, |&p| topo.links[topo.ports[p.idx()].link.idx()].rate.0 as f64)
        };
        let work_items = super::balance::transfers(s);
        let first = work_items.clone().map(|w| w.3).fold(Time::MAX, Time::min);
        let mut work = vec![0f64; parts];
        let (mut out_bits, mut in_bits) = (vec![0f64; part_of.len()], vec![0f64; part_of.len()]);
        let mut busy_s = 0f64;
        for (src, dst, bytes, start) in work_items {
            let packets = (bytes as f64 / mtu).ceil();
            work[part_of[src] as usize] += packets / 2.0;
            work[part_of[dst] as usize] += packets / 2.0;
            (out_bits[src], in_bits[dst]) = (out_bits[src] + bytes as f64 * 8.0, in_bits[dst] + bytes as f64 * 8.0);
            busy_s = busy_s.max(start.saturating_sub(first).0 as f64 * 1e-12 + bytes as f64 * 8.0 / line(src));
        }
        for h in 0..part_of.len() {
            busy_s = busy_s.max(out_bits[h].max(in_bits[h]) / line(h));
        }
        let packets: f64 = work.iter().sum();
        if packets == 0.0 {
            return Estimate { events: 0.0, windows: 0.0, largest_share: 1.0 };
        }
        let largest = work.iter().cloned().fold(0.0, f64::max);
        Estimate {
            events: packets * EVENTS_PER_PACKET,
            windows: (busy_s / (lookahead.0.max(1) as f64 * 1e-12)).max(1.0),
            largest_share: largest / packets,
        }
    }

    /// The speed-up the parallel engine is expected to give (one thread's time over the
    /// partitions' critical path plus the windows' synchronisation).
    pub fn speed_up(&self) -> f64 {
        let one = self.events * EVENT_COST;
        let many = self.events * self.largest_share * EVENT_COST * PARALLEL_EVENT_COST + self.windows * WINDOW_COST;
        if many <= 0.0 {
            return 0.0;
        }
        one / many
    }

    /// True if the parallel engine is expected to be faster by the margin.
    pub fn cut_pays(&self) -> bool {
        self.speed_up() >= MARGIN
    }
}
