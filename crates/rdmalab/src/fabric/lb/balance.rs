//! The per-ToR uplink balance (`balance.parquet`): data bytes each ToR forwards on each of
//! its uplinks per window of `lb_window`, and their imbalance `(max - min) / mean`. A ToR is
//! a switch with a host attached; its uplinks are its ports to other switches. Bytes are
//! counted when the switch assigns the packet to the uplink (the balancer's decision), not
//! when it leaves; over a window of many packet times the two differ by the queue.

use crate::ids::{NodeId, PortId};
use crate::topology::Topology;
use crate::units::Time;

/// One ToR's window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BalanceRow {
    /// Start of the window.
    pub window_start: Time,
    /// The ToR.
    pub switch: NodeId,
    /// Its uplinks (the count the mean divides by).
    pub uplinks: u16,
    /// Bytes on its least-used uplink in the window.
    pub min_bytes: u64,
    /// Bytes on its most-used uplink.
    pub max_bytes: u64,
    /// Mean bytes per uplink.
    pub mean_bytes: f64,
    /// `(max - min) / mean`.
    pub imbalance: f64,
}

#[derive(Clone, Debug)]
struct Tor {
    node: NodeId,
    window: u64,
    bytes: Vec<u64>,
}

/// The recorder of every ToR with two or more uplinks.
#[derive(Clone, Debug)]
pub struct BalanceRecorder {
    window: Time,
    /// Per port: (ToR index + 1, uplink slot); (0, _) for ports that are no ToR uplink.
    slot: Vec<(u32, u16)>,
    tors: Vec<Tor>,
    rows: Vec<BalanceRow>,
}

impl BalanceRecorder {
    /// A recorder for `topo`'s ToRs, windows of `window`.
    pub fn new(topo: &Topology, window: Time) -> BalanceRecorder {
        let mut slot = vec![(0, 0); topo.ports.len()];
        let mut tors = Vec::new();
        for s in topo.switches() {
            let ports = &topo.nodes[s.idx()].ports;
            let has_host = ports.iter().any(|p| topo.is_host(topo.ports[p.idx()].peer_node));
            let up: Vec<PortId> =
                ports.iter().copied().filter(|p| !topo.is_host(topo.ports[p.idx()].peer_node)).collect();
            if !has_host || up.len() < 2 {
                continue;
            }
            tors.push(Tor { node: s, window: 0, bytes: vec![0; up.len()] });
            for (i, p) in up.iter().enumerate() {
                slot[p.idx()] = (tors.len() as u32, i as u16);
            }
        }
        BalanceRecorder { window: Time::from_ps(window.ps().max(1)), slot, tors, rows: Vec::new() }
    }

    /// `wire` bytes assigned to `egress` at `now` (counted when `egress` is a ToR uplink).
    #[inline]
    pub fn count(&mut self, now: Time, egress: PortId, wire: u32) {
        let (tor, i) = self.slot[egress.idx()];
        if tor == 0 {
            return;
        }
        let w = now.ps() / self.window.ps();
        let t = &mut self.tors[tor as usize - 1];
        if w != t.window {
            if let Some(row) = close(t, self.window) {
                self.rows.push(row);
            }
            t.window = w;
            t.bytes.iter_mut().for_each(|b| *b = 0);
        }
        t.bytes[i as usize] += wire as u64;
    }

    /// Every row so far with the open windows closed, by (window, switch).
    pub fn rows(&self) -> Vec<BalanceRow> {
        let mut rows = self.rows.clone();
        rows.extend(self.tors.iter().filter_map(|t| close(t, self.window)));
        rows.sort_by_key(|r| (r.window_start, r.switch));
        rows
    }
}

/// The row of `t`'s current window, unless nothing went up in it.
fn close(t: &Tor, window: Time) -> Option<BalanceRow> {
    let total: u64 = t.bytes.iter().sum();
    if total == 0 {
        return None;
    }
    let (min, max) = (*t.bytes.iter().min()?, *t.bytes.iter().max()?);
    let mean = total as f64 / t.bytes.len() as f64;
    Some(BalanceRow {
        window_start: Time::from_ps(t.window * window.ps()),
        switch: t.node,
        uplinks: t.bytes.len() as u16,
        min_bytes: min,
        max_bytes: max,
        mean_bytes: mean,
        imbalance: (max - min) as f64 / mean,
    })
}
