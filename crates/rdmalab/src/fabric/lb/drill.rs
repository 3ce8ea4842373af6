//! DRILL (Ghorbani et al., SIGCOMM'17): per packet, the least-loaded of `d` hops drawn at
//! random and the `m` least-loaded hops of the previous decision for the same destination,
//! load being the bytes queued at the egress port (every class). The `m` best of this
//! decision are remembered for the next.

use super::PortState;
use crate::engine::rng::RngExt;
use crate::engine::Rng;
use crate::ids::{NodeId, PortId};

/// Most samples plus remembered hops one decision compares (a check in the scenario).
pub const MAX_CANDIDATES: usize = 16;

/// One switch's remembered hops: `m` per destination node (empty when unused).
#[derive(Clone, Debug)]
pub struct DrillMemory {
    m: usize,
    best: Vec<PortId>,
}

/// Bytes queued at `port`, every class.
#[inline]
fn load(ports: &[PortState], port: PortId) -> u64 {
    ports[port.idx()].queue_bytes.iter().sum()
}

impl DrillMemory {
    /// Memory for destinations `0..nodes`, `m` hops each.
    pub fn new(nodes: usize, m: u32) -> DrillMemory {
        DrillMemory { m: m as usize, best: vec![PortId::NONE; nodes * m as usize] }
    }

    /// The hop for a packet to `dst` among `hops` (two or more), sampling `d` of them.
    pub fn pick_hop(&mut self, rng: &mut Rng, hops: &[PortId], dst: NodeId, d: u32, ports: &[PortState]) -> PortId {
        let mut cand = [(u64::MAX, PortId::NONE); MAX_CANDIDATES];
        let mut n = 0;
        let remembered = &mut self.best[dst.idx() * self.m..(dst.idx() + 1) * self.m];
        // A remembered hop no longer among `hops` (routes changed) is forgotten.
        for &p in remembered.iter().filter(|p| hops.contains(p)) {
            cand[n] = (load(ports, p), p);
            n += 1;
        }
        for _ in 0..d {
            let p = hops[rng.gen_range(0..hops.len())];
            cand[n] = (load(ports, p), p);
            n += 1;
        }
        // Least load first; among equals the earlier candidate (the remembered one) wins.
        cand[..n].sort_by_key(|c| c.0);
        for (slot, c) in remembered.iter_mut().zip(cand[..n].iter()) {
            *slot = c.1;
        }
        cand[0].1
    }
}
