//! CONGA (Alizadeh et al., SIGCOMM'14) on a leaf-spine fabric: every switch port measures
//! its load with a discounting rate estimator (DRE); a packet leaving its source leaf for
//! another leaf carries the uplink it took (`LBTag`) and that uplink's quantised load
//! (`CE`), which each spine raises to its own egress's; the destination leaf stores it
//! (congestion *from* the source leaf) and feeds it back, one metric per packet, in the
//! packets it sends to that leaf (`FB_LBTag`, `FB_Metric`), data and ACKs alike; the source
//! leaf keeps what comes back (congestion *to* the leaf). A new flowlet at the source leaf
//! takes the uplink with the least `max(local DRE, remote metric)`.
//!
//! Locality: a leaf's tables change only in the hook running at that leaf, and what one leaf
//! learns of another reaches it only in a packet's header. The header is four 4-bit fields
//! packed into `Packet::int_hops`, which is free when no INT-based congestion control runs
//! (the scenario refuses `conga` with one).

use super::{LbConfig, Packet};
use crate::engine::rng::RngExt;
use crate::engine::Rng;
use crate::ids::{NodeId, PortId};
use crate::topology::Topology;
use crate::units::Time;

/// Most uplinks per leaf: tags 1..=15 in a 4-bit field, 0 meaning none.
pub const MAX_UPLINKS: usize = 15;
const TAGS: usize = MAX_UPLINKS + 1;
const NO_LEAF: u16 = u16::MAX;
const NO_METRIC: u8 = u8::MAX;

/// The CONGA header fields of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Header {
    tag: u8,
    ce: u8,
    fb_tag: u8,
    fb_metric: u8,
}

impl Header {
    fn read(p: &Packet) -> Header {
        let h = p.int_hops;
        Header { tag: (h >> 12) as u8, ce: (h >> 8 & 15) as u8, fb_tag: (h >> 4 & 15) as u8, fb_metric: (h & 15) as u8 }
    }

    fn write(self, p: &mut Packet) {
        p.int_hops =
            (self.tag as u16) << 12 | (self.ce as u16) << 8 | (self.fb_tag as u16) << 4 | self.fb_metric as u16;
    }
}

/// A port's discounting rate estimator: `x` grows by each packet's bytes and shrinks by a
/// factor `1 - alpha` every period (applied when next read).
#[derive(Clone, Copy, Debug, Default)]
struct Dre {
    x: f64,
    period: u64,
}

/// The run's CONGA state (each part indexed by the leaf or port that owns it).
#[derive(Clone, Debug)]
pub struct Conga {
    period: Time,
    keep: f64,
    levels: u8,
    aging: Time,
    /// Leaf index of each leaf switch and of each host's leaf; `NO_LEAF` for spines.
    leaf_of: Vec<u16>,
    is_leaf: Vec<bool>,
    /// Per port: its tag at a leaf (1..=15), 0 for other ports.
    tag: Vec<u8>,
    dre: Vec<Dre>,
    /// Per port: `C * tau` bytes, the DRE value of a fully used link (tau = T_dre / alpha).
    full: Vec<f64>,
    leaves: usize,
    /// At leaf `a`, towards leaf `b`, per tag: (metric, when it came back).
    to_leaf: Vec<(u8, Time)>,
    /// At leaf `b`, from leaf `a`, per tag: the last metric seen, `NO_METRIC` before any.
    from_leaf: Vec<u8>,
    /// At leaf `b`, for leaf `a`: the tag fed back last (round robin).
    fed_back: Vec<u8>,
}

impl Conga {
    /// The state for `topo`, which must be a leaf-spine fabric: every host on one leaf,
    /// every leaf's other ports to spines, spines linked to leaves only.
    pub fn new(topo: &Topology, cfg: &LbConfig) -> Result<Conga, String> {
        super::refuse_nvlink("CONGA", topo)?;
        let n = topo.nodes.len();
        let peer_is_host = |p: &PortId| topo.is_host(topo.ports[p.idx()].peer_node);
        let mut leaf_of = vec![NO_LEAF; n];
        let mut is_leaf = vec![false; n];
        let mut leaves = 0usize;
        for s in topo.switches() {
            if topo.nodes[s.idx()].ports.iter().any(peer_is_host) {
                is_leaf[s.idx()] = true;
                leaf_of[s.idx()] = leaves as u16;
                leaves += 1;
            }
        }
        let mut tag = vec![0u8; topo.ports.len()];
        for s in topo.switches() {
            let ports = &topo.nodes[s.idx()].ports;
            for &p in ports.iter().filter(|p| !peer_is_host(p)) {
                let peer = topo.ports[p.idx()].peer_node;
                if is_leaf[s.idx()] == is_leaf[peer.idx()] {
                    return Err(format!(
                        "CONGA is defined on two-tier leaf-spine fabrics; switch {} links to switch {} of the same tier",
                        s.0, peer.0
                    ));
                }
            }
            if is_leaf[s.idx()] {
                let up: Vec<PortId> = ports.iter().copied().filter(|p| !peer_is_host(p)).collect();
                if up.len() > MAX_UPLINKS {
                    return Err(format!(
                        "leaf {} has {} uplinks; CONGA's 4-bit tag names at most {MAX_UPLINKS}",
                        s.0,
                        up.len()
                    ));
                }
                for (i, p) in up.iter().enumerate() {
                    tag[p.idx()] = i as u8 + 1;
                }
            }
        }
        for h in topo.hosts() {
            let ports = &topo.nodes[h.idx()].ports;
            let sw: Vec<NodeId> = ports.iter().map(|p| topo.ports[p.idx()].peer_node).collect();
            if sw.is_empty() || sw.iter().any(|&x| x != sw[0] || !is_leaf[x.idx()]) {
                return Err(format!("CONGA needs every host on one leaf; host {} is not", h.0));
            }
            leaf_of[h.idx()] = leaf_of[sw[0].idx()];
        }
        let tau = cfg.conga_dre_period.ps() as f64 * 1e-12 / cfg.conga_alpha;
        let full = topo.ports.iter().map(|p| topo.links[p.link.idx()].rate.bps() as f64 / 8.0 * tau).collect();
        Ok(Conga {
            period: cfg.conga_dre_period,
            keep: 1.0 - cfg.conga_alpha,
            levels: 1 << cfg.conga_bits,
            aging: cfg.conga_aging,
            leaf_of,
            is_leaf,
            tag,
            dre: vec![Dre::default(); topo.ports.len()],
            full,
            leaves,
            to_leaf: vec![(0, Time::ZERO); leaves * leaves * TAGS],
            from_leaf: vec![NO_METRIC; leaves * leaves * TAGS],
            fed_back: vec![0; leaves * leaves],
        })
    }

    /// `port`'s DRE brought to `now`'s period.
    fn decayed(&mut self, port: PortId, now: Time) -> &mut Dre {
        let period = now.ps() / self.period.ps();
        let d = &mut self.dre[port.idx()];
        if period > d.period {
            // Past ~10^4 periods any value has decayed below one byte.
            d.x *= self.keep.powi((period - d.period).min(10_000) as i32);
            d.period = period;
        }
        d
    }

    /// `port`'s load quantised to `0..levels`: `x / (C * tau)`, its utilisation.
    fn metric(&mut self, port: PortId, now: Time) -> u8 {
        let full = self.full[port.idx()];
        let x = self.decayed(port, now).x;
        let q = (x / full * self.levels as f64) as u64;
        q.min(self.levels as u64 - 1) as u8
    }

    fn slot(&self, at: u16, other: u16, tag: u8) -> usize {
        (at as usize * self.leaves + other as usize) * TAGS + tag as usize
    }

    /// A new flowlet's uplink at source leaf `node`: the least `max(local, remote)`; among
    /// equals the flowlet's previous uplink `old`, else one at random.
    pub fn best_uplink(
        &mut self,
        now: Time,
        node: NodeId,
        pkt: &Packet,
        hops: &[PortId],
        old: PortId,
        rng: &mut Rng,
    ) -> PortId {
        let (leaf, dst) = (self.leaf_of[node.idx()], self.leaf_of[pkt.dst.idx()]);
        if !self.is_leaf[node.idx()] || dst == leaf || hops.len() > MAX_UPLINKS {
            return hops[rng.gen_range(0..hops.len())];
        }
        let mut best = [PortId::NONE; MAX_UPLINKS];
        let (mut n, mut best_cost) = (0, u8::MAX);
        for &h in hops {
            let (remote, when) = self.to_leaf[self.slot(leaf, dst, self.tag[h.idx()])];
            let remote = if now.ps().saturating_sub(when.ps()) > self.aging.ps() { 0 } else { remote };
            let cost = self.metric(h, now).max(remote);
            if cost < best_cost {
                (best_cost, n) = (cost, 0);
            }
            if cost == best_cost {
                best[n] = h;
                n += 1;
            }
        }
        if best[..n].contains(&old) {
            return old;
        }
        best[rng.gen_range(0..n)]
    }

    /// Every packet a switch forwards: the egress's DRE counts it; at its source leaf it
    /// gets the CONGA header (and a metric to feed back), at a spine its `CE` is raised, at
    /// its destination leaf the header is read and cleared.
    pub fn on_forward(&mut self, now: Time, node: NodeId, egress: PortId, pkt: &mut Packet) {
        self.decayed(egress, now).x += pkt.wire as f64;
        let (src, dst) = (self.leaf_of[pkt.src.idx()], self.leaf_of[pkt.dst.idx()]);
        if !self.is_leaf[node.idx()] {
            let mut h = Header::read(pkt);
            if h.tag != 0 {
                h.ce = h.ce.max(self.metric(egress, now));
                h.write(pkt);
            }
            return;
        }
        let leaf = self.leaf_of[node.idx()];
        if src == dst {
            return;
        }
        if src == leaf {
            let (fb_tag, fb_metric) = self.next_feedback(leaf, dst);
            let h = Header { tag: self.tag[egress.idx()], ce: self.metric(egress, now), fb_tag, fb_metric };
            h.write(pkt);
        } else if dst == leaf {
            let h = Header::read(pkt);
            if h.tag != 0 {
                let i = self.slot(leaf, src, h.tag);
                self.from_leaf[i] = h.ce;
            }
            if h.fb_tag != 0 {
                let i = self.slot(leaf, src, h.fb_tag);
                self.to_leaf[i] = (h.fb_metric, now);
            }
            pkt.int_hops = 0;
        }
    }

    /// The next (tag, metric) leaf `at` feeds back to leaf `to`, round robin over the tags it
    /// has seen; (0, 0) when none.
    fn next_feedback(&mut self, at: u16, to: u16) -> (u8, u8) {
        let rr = at as usize * self.leaves + to as usize;
        let last = self.fed_back[rr] as usize;
        for step in 1..=MAX_UPLINKS {
            let tag = ((last + step - 1) % MAX_UPLINKS + 1) as u8;
            let m = self.from_leaf[self.slot(at, to, tag)];
            if m != NO_METRIC {
                self.fed_back[rr] = tag;
                return (tag, m);
            }
        }
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_round_trip_through_the_packet() {
        let mut p = Packet::pfc(crate::fabric::PacketKind::Data, 3, 1000);
        let h = Header { tag: 15, ce: 7, fb_tag: 3, fb_metric: 5 };
        h.write(&mut p);
        assert_eq!(Header::read(&p), h);
    }
}
