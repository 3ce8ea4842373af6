//! ConWeave (Song et al., SIGCOMM'23) on a leaf-spine fabric: the source ToR probes the
//! RTT of each flow's current path once per epoch and reroutes the flow, at most once per
//! epoch, when the reply does not come back within the base RTT plus a margin; the
//! destination ToR holds the packets sent on the new path in a per-flow reorder queue until
//! the last packet of the old path (TAIL) arrives, or a deadline predicted from timestamps
//! passes, and then releases them in order.
//!
//! The rules follow the public ns-3 artifact (`conweave-project/conweave-ns3`,
//! `src/point-to-point/model/conweave-routing.cc`), read for its logic and parameters, not
//! copied; `docs/load-balancing.md` lists where we differ. Terms as the artifact's: an
//! *epoch* starts when a flow's entry expires (no packet for `tx_expiry`) or has
//! stabilised (a timely RTT_REPLY, or the CLEAR that answers a TAIL); its first packet
//! asks for an RTT_REPLY (INIT); *phase* 1 marks the packets after a reroute (the paper's
//! REROUTED), the TAIL being the last packet on the old path.
//!
//! Locality: a source ToR's tables (per flow, and per (destination leaf, uplink) the time a
//! path stays avoided after a NOTIFY) and a destination ToR's tables and reorder queues
//! change only in the hook running at that switch; what one ToR tells another travels in
//! packets: the header of data packets, and RTT_REPLY, CLEAR and NOTIFY packets
//! (`PacketKind::LbControl`, 64 bytes, the control class) that the source ToR consumes.
//!
//! The header of a data packet is packed into `Packet::int_hops` and `Packet::deflections`
//! (24 bits: flag, phase, uplink tag, epoch modulo 32, a send time in 256 ns units modulo
//! 2^12), free when no INT-based congestion control and no IOFD run (the scenario refuses
//! `conweave` with either); the destination ToR clears them.

use super::{LbConfig, Packet, PacketKind};
use crate::engine::rng::RngExt;
use crate::engine::Rng;
use crate::fabric::PacketRef;
use crate::ids::{NodeId, PortId};
use crate::topology::ecmp::ecmp_hash;
use crate::topology::Topology;
use crate::units::Time;
use std::collections::VecDeque;

/// Most uplinks per leaf: tags 1..=15 in a 4-bit field.
pub const MAX_UPLINKS: usize = 15;
const TAGS: usize = MAX_UPLINKS + 1;
const NO_LEAF: u16 = u16::MAX;
const NONE: u32 = u32::MAX;

/// What a data packet's header asks (2 bits; 0: no header).
const DATA: u16 = 1;
const INIT: u16 = 2;
const TAIL: u16 = 3;
/// What a control packet says.
const RTT_REPLY: u16 = 1;
const CLEAR: u16 = 2;
const NOTIFY: u16 = 3;

/// The header fields (data or control), 24 bits: `int_hops` holds the flag (2 bits), the
/// phase (1), the uplink tag (4), the epoch (5) and the timestamp's high 4 bits;
/// `deflections` its low 8 bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Header {
    flag: u16,
    phase: u16,
    tag: u16,
    epoch: u8,
    /// A send time in units of `TS_UNIT_NS`, modulo 2^12 (1.05 ms).
    ts: u16,
}

const EPOCH_MASK: u8 = 31;
const TS_MASK: u16 = 0xFFF;
/// The timestamp's unit: 256 ns (the artifact keeps ns; our header has 12 bits for it).
const TS_UNIT_NS: u64 = 256;

impl Header {
    fn read(p: &Packet) -> Header {
        let h = p.int_hops;
        Header {
            flag: h >> 14 & 3,
            phase: h >> 13 & 1,
            tag: h >> 9 & 15,
            epoch: (h >> 4 & 31) as u8,
            ts: (h & 15) << 8 | p.deflections as u16,
        }
    }

    fn write(self, p: &mut Packet) {
        p.int_hops = self.flag << 14 | self.phase << 13 | self.tag << 9 | (self.epoch as u16) << 4 | self.ts >> 8;
        p.deflections = self.ts as u8;
    }
}

/// Whether epoch `a` is after `b` (serial arithmetic modulo 32).
fn after(a: u8, b: u8) -> bool {
    let d = a.wrapping_sub(b) & EPOCH_MASK;
    d != 0 && d < 16
}

/// `t` as a header timestamp.
fn stamp(t: Time) -> u16 {
    (t.ns() / TS_UNIT_NS) as u16 & TS_MASK
}

/// `later - earlier` of two header timestamps (0 when `later` is not later).
fn stamp_gap(later: u16, earlier: u16) -> Time {
    let d = later.wrapping_sub(earlier) & TS_MASK;
    if d >= 2048 {
        Time::ZERO
    } else {
        Time::from_ns(d as u64 * TS_UNIT_NS)
    }
}

/// A source ToR's entry for one flow.
#[derive(Clone, Copy, Debug)]
struct TxEntry {
    key: u32,
    epoch: u8,
    phase: u16,
    stabilized: bool,
    /// The uplink the flow's packets take (`PortId::NONE`: no packet yet).
    path: PortId,
    active: Time,
    /// When a missing RTT_REPLY becomes a reroute; `Time::MAX` when none is awaited.
    reply_deadline: Time,
    /// Send time of this epoch's TAIL (0: none).
    tail: u16,
}

const TX_EMPTY: TxEntry = TxEntry {
    key: 0,
    epoch: 0,
    phase: 0,
    stabilized: false,
    path: PortId::NONE,
    active: Time::ZERO,
    reply_deadline: Time::MAX,
    tail: 0,
};

/// A destination ToR's entry for one flow.
#[derive(Clone, Copy, Debug)]
struct RxEntry {
    key: u32,
    epoch: u8,
    phase: u16,
    /// The send and arrival times of the latest phase-0 packet, valid once `phase0` is set.
    phase0_tx: u16,
    phase0_rx: Time,
    phase0: bool,
    tail: u16,
    /// Its reorder queue while one is held (`NONE` otherwise).
    queue: u32,
}

const RX_EMPTY: RxEntry =
    RxEntry { key: 0, epoch: 0, phase: 0, phase0_tx: 0, phase0_rx: Time::ZERO, phase0: false, tail: 0, queue: NONE };

/// One reorder queue of a destination ToR's host port: the flow's packets held, in
/// arrival order, with the class each was admitted in.
#[derive(Clone, Debug, Default)]
pub struct ReorderQueue {
    /// The Rx entry (index) it serves; `NONE` when free.
    owner: u32,
    /// Bumped on every flush and new deadline: a timer of an older generation is stale.
    pub generation: u32,
    packets: VecDeque<(PacketRef, u8, u32)>,
    bytes: u64,
}

/// What the destination ToR does with a data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxAction {
    /// Forward it now.
    Forward,
    /// Hold it in reorder queue `q` (after MMU admission).
    Hold(u32),
    /// Forward it, then release reorder queue `q` behind it (a TAIL arrived).
    ForwardThenRelease(u32),
}

/// A timer the caller schedules: flush reorder queue `queue` at `at` unless its generation
/// moved on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushTimer {
    /// The queue.
    pub queue: u32,
    /// Its generation when set.
    pub generation: u32,
    /// When.
    pub at: Time,
}

/// One reorder-occupancy row: per destination ToR and window, the peak number of flows
/// with a reorder queue and the peak packets and bytes held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReorderRow {
    /// Start of the window.
    pub window_start: Time,
    /// The ToR.
    pub switch: NodeId,
    /// Most reorder queues in use at once.
    pub queues: u32,
    /// Most packets held at once.
    pub packets: u64,
    /// Most bytes held at once.
    pub bytes: u64,
}

/// `[fabric.lb]`'s ConWeave times, as the hook uses them.
#[derive(Clone, Copy, Debug)]
struct Params {
    tx_expiry: Time,
    reply_extra: Time,
    path_pause: Time,
    flush_extra: u64,
    default_wait: u64,
    table_mask: usize,
    queues: usize,
}

/// The run's ConWeave state (each part indexed by the leaf or port that owns it).
#[derive(Clone, Debug)]
pub struct ConWeave {
    p: Params,
    leaves: usize,
    /// Leaf index of each leaf switch and of each host's leaf; `NO_LEAF` for spines.
    leaf_of: Vec<u16>,
    is_leaf: Vec<bool>,
    /// Per port: its uplink tag at a leaf (1..=15), 0 for other ports.
    tag: Vec<u8>,
    /// Per (leaf, leaf): the base RTT between them (propagation both ways).
    base_rtt: Vec<Time>,
    tx: Vec<TxEntry>,
    rx: Vec<RxEntry>,
    /// At a source leaf, per (destination leaf, tag): avoided until then (NOTIFY).
    avoid_until: Vec<Time>,
    /// Per port: the first of its reorder queues (host ports of leaves), `NONE` otherwise.
    first_queue: Vec<u32>,
    /// Per queue: its port, and that port's leaf.
    queue_port: Vec<PortId>,
    queue_leaf: Vec<u16>,
    queue: Vec<ReorderQueue>,
    /// Per leaf: queues in use, packets and bytes held now, and the open window's peaks.
    held: Vec<Occupancy>,
    window: Time,
    rows: Vec<ReorderRow>,
    leaf_node: Vec<NodeId>,
    /// Control packets the last `destination` call asks to send (reused buffer).
    pub outbox: Vec<Packet>,
    /// Packets the last `release` let go (reused buffer).
    pub released: Vec<(PacketRef, u8, u32)>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Occupancy {
    queues: u32,
    packets: u64,
    bytes: u64,
    window: u64,
    peak: (u32, u64, u64),
}

/// What the source or destination ToR did that the run counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Flows moved to another uplink by a missing reply.
    pub reroutes: u64,
    /// Data packets held in a reorder queue.
    pub held: u64,
    /// Reorder queues released by their deadline rather than by the TAIL.
    pub timeouts: u64,
    /// Packets that needed a reorder queue when none was free (forwarded out of order).
    pub unheld: u64,
    /// RTT_REPLY, CLEAR and NOTIFY packets sent.
    pub control: u64,
}

/// The leaf-spine structure shared with CONGA's check: leaf index of each node, whether it
/// is a leaf, and each leaf's uplinks in port order. An error (a sentence) off leaf-spine.
fn two_tiers(topo: &Topology) -> Result<(Vec<u16>, Vec<bool>, Vec<Vec<PortId>>), String> {
    let n = topo.nodes.len();
    let peer_is_host = |p: &PortId| topo.is_host(topo.ports[p.idx()].peer_node);
    let mut leaf_of = vec![NO_LEAF; n];
    let mut is_leaf = vec![false; n];
    let mut uplinks = Vec::new();
    for s in topo.switches() {
        if topo.nodes[s.idx()].ports.iter().any(peer_is_host) {
            is_leaf[s.idx()] = true;
            leaf_of[s.idx()] = uplinks.len() as u16;
            uplinks.push(Vec::new());
        }
    }
    for s in topo.switches() {
        for &p in topo.nodes[s.idx()].ports.iter().filter(|p| !peer_is_host(p)) {
            let peer = topo.ports[p.idx()].peer_node;
            if is_leaf[s.idx()] == is_leaf[peer.idx()] {
                return Err(format!(
                    "ConWeave is defined here on two-tier leaf-spine fabrics; switch {} links to switch {} of the same tier",
                    s.0, peer.0
                ));
            }
            if is_leaf[s.idx()] {
                uplinks[leaf_of[s.idx()] as usize].push(p);
            }
        }
    }
    if let Some(u) = uplinks.iter().find(|u| u.len() > MAX_UPLINKS) {
        return Err(format!("a leaf has {} uplinks; ConWeave's 4-bit path tag names at most {MAX_UPLINKS}", u.len()));
    }
    for h in topo.hosts() {
        let sw: Vec<NodeId> = topo.nodes[h.idx()].ports.iter().map(|p| topo.ports[p.idx()].peer_node).collect();
        if sw.is_empty() || sw.iter().any(|&x| x != sw[0] || !is_leaf[x.idx()]) {
            return Err(format!("ConWeave needs every host on one leaf; host {} is not", h.0));
        }
        leaf_of[h.idx()] = leaf_of[sw[0].idx()];
    }
    Ok((leaf_of, is_leaf, uplinks))
}

/// The flow's key, the same at both ToRs and for the replies coming back (the data
/// direction's 5-tuple hashed with seed 0).
fn data_key(sip: u32, dip: u32, sport: u16, dport: u16) -> u32 {
    ecmp_hash(sip, dip, sport, dport, 0) | 1
}

impl ConWeave {
    /// The state for `topo`, which must be a leaf-spine fabric.
    pub fn new(topo: &Topology, cfg: &LbConfig) -> Result<ConWeave, String> {
        let (leaf_of, is_leaf, uplinks) = two_tiers(topo)?;
        let leaves = uplinks.len();
        let mut tag = vec![0u8; topo.ports.len()];
        for ups in &uplinks {
            for (i, &p) in ups.iter().enumerate() {
                tag[p.idx()] = i as u8 + 1;
            }
        }
        let delay = |p: PortId| topo.links[topo.ports[p.idx()].link.idx()].delay;
        // Base RTT between two leaves: the longest propagation over their paths, both ways
        // (the artifact sets 4 one-hop delays on a leaf-spine, `m_rxToRId2BaseRTT`).
        let mut base_rtt = vec![Time::ZERO; leaves * leaves];
        for (a, ups) in uplinks.iter().enumerate() {
            for &u in ups {
                let spine = topo.ports[u.idx()].peer_node;
                for &d in &topo.nodes[spine.idx()].ports {
                    let b = leaf_of[topo.ports[d.idx()].peer_node.idx()];
                    if b != NO_LEAF {
                        let rtt = Time::from_ps(2 * (delay(u).ps() + delay(d).ps()));
                        let slot = &mut base_rtt[a * leaves + b as usize];
                        *slot = (*slot).max(rtt);
                    }
                }
            }
        }
        let mut first_queue = vec![NONE; topo.ports.len()];
        let mut queue_port = Vec::new();
        let mut queue_leaf = Vec::new();
        let mut leaf_node = vec![NodeId::NONE; leaves];
        for s in topo.switches().filter(|s| is_leaf[s.idx()]) {
            leaf_node[leaf_of[s.idx()] as usize] = s;
            for &p in topo.nodes[s.idx()].ports.iter().filter(|p| topo.is_host(topo.ports[p.idx()].peer_node)) {
                first_queue[p.idx()] = queue_port.len() as u32;
                queue_port.extend(std::iter::repeat(p).take(cfg.conweave_queues as usize));
                queue_leaf.extend(std::iter::repeat(leaf_of[s.idx()]).take(cfg.conweave_queues as usize));
            }
        }
        let table = cfg.conweave_table as usize;
        let queues = queue_port.len();
        Ok(ConWeave {
            p: Params {
                tx_expiry: cfg.conweave_tx_expiry,
                reply_extra: cfg.conweave_reply_extra,
                path_pause: cfg.conweave_path_pause,
                flush_extra: cfg.conweave_flush_extra.ns(),
                default_wait: cfg.conweave_default_wait.ns(),
                table_mask: table - 1,
                queues: cfg.conweave_queues as usize,
            },
            leaves,
            leaf_of,
            is_leaf,
            tag,
            base_rtt,
            tx: vec![TX_EMPTY; leaves * table],
            rx: vec![RX_EMPTY; leaves * table],
            avoid_until: vec![Time::ZERO; leaves * leaves * TAGS],
            first_queue,
            queue_port,
            queue_leaf,
            queue: vec![ReorderQueue { owner: NONE, ..Default::default() }; queues],
            held: vec![Occupancy::default(); leaves],
            window: Time::from_ps(cfg.window.ps().max(1)),
            rows: Vec::new(),
            leaf_node,
            outbox: Vec::new(),
            released: Vec::new(),
        })
    }

    /// Whether `node` is the source ToR of `pkt` (a data packet leaving for another leaf).
    pub fn at_source(&self, node: NodeId, pkt: &Packet) -> bool {
        let leaf = self.leaf_of[node.idx()];
        self.is_leaf[node.idx()] && self.leaf_of[pkt.src.idx()] == leaf && self.leaf_of[pkt.dst.idx()] != leaf
    }

    /// Whether `node` is the destination ToR of `pkt` coming from another leaf.
    pub fn at_destination(&self, node: NodeId, pkt: &Packet) -> bool {
        let leaf = self.leaf_of[node.idx()];
        self.is_leaf[node.idx()] && self.leaf_of[pkt.dst.idx()] == leaf && self.leaf_of[pkt.src.idx()] != leaf
    }

    /// A path not avoided, from two random samples among `hops` (the artifact's
    /// path-aware choice); `None` when both are avoided.
    fn good_path(&self, leaf: usize, dst: usize, hops: &[PortId], now: Time, rng: &mut Rng) -> Option<PortId> {
        let a = hops[rng.gen_range(0..hops.len())];
        let b = hops[rng.gen_range(0..hops.len())];
        let ok = |p: PortId| self.avoid_until[(leaf * self.leaves + dst) * TAGS + self.tag[p.idx()] as usize] <= now;
        [a, b].into_iter().find(|&p| ok(p))
    }

    /// The source ToR's rule for data packet `pkt` at `node` among uplinks `hops`: its
    /// uplink, with the header written (epoch, phase, INIT or TAIL, timestamp).
    pub fn source(&mut self, now: Time, node: NodeId, hops: &[PortId], pkt: &mut Packet, rng: &mut Rng, tally: &mut Tally) -> PortId {
        let leaf = self.leaf_of[node.idx()] as usize;
        let dst = self.leaf_of[pkt.dst.idx()] as usize;
        let key = data_key(pkt.sip, pkt.dip, pkt.sport, pkt.dport);
        let good = self.good_path(leaf, dst, hops, now, rng);
        let base = self.base_rtt[leaf * self.leaves + dst];
        let p = self.p;
        let i = leaf * (p.table_mask + 1) + (key as usize & p.table_mask);
        let e = &mut self.tx[i];
        let new = e.key != key || !hops.contains(&e.path);
        if new {
            *e = TxEntry { key, ..TX_EMPTY };
        }
        let expired = new || now.ps().saturating_sub(e.active.ps()) > p.tx_expiry.ps();
        let stabilized = !expired && e.stabilized;
        e.stabilized = false;
        e.active = now;
        let fresh = expired || stabilized;
        let mut timeout = false;
        if fresh {
            e.reply_deadline = now + base + p.reply_extra;
        } else if e.reply_deadline != Time::MAX && e.reply_deadline < now {
            e.reply_deadline = Time::MAX;
            timeout = true;
        }
        if fresh {
            e.epoch = e.epoch.wrapping_add(1) & EPOCH_MASK;
        }
        let phase = if fresh {
            e.phase = 0;
            0
        } else if timeout {
            e.phase = 1;
            0
        } else {
            e.phase
        };
        if e.path == PortId::NONE {
            e.path = good.unwrap_or_else(|| hops[rng.gen_range(0..hops.len())]);
        }
        let used = if expired {
            if let Some(g) = good {
                e.path = g;
            }
            e.path
        } else if timeout {
            let old = e.path;
            if let Some(g) = good.filter(|&g| g != old) {
                e.path = g;
                tally.reroutes += 1;
            }
            old
        } else {
            e.path
        };
        if fresh {
            e.tail = 0;
        } else if timeout {
            e.tail = stamp(now);
        }
        let flag = if fresh {
            INIT
        } else if timeout {
            TAIL
        } else {
            DATA
        };
        let ts = if phase == 0 { stamp(now) } else { e.tail };
        Header { flag, phase, tag: self.tag[used.idx()] as u16, epoch: e.epoch, ts }.write(pkt);
        used
    }

    /// The source ToR receives a control packet for one of its flows (consumed there).
    pub fn on_control(&mut self, now: Time, node: NodeId, pkt: &Packet) {
        let leaf = self.leaf_of[node.idx()] as usize;
        let h = Header::read(pkt);
        if h.flag == NOTIFY {
            let dst = self.leaf_of[pkt.src.idx()] as usize;
            self.avoid_until[(leaf * self.leaves + dst) * TAGS + h.tag as usize] = now + self.p.path_pause;
            return;
        }
        // The reply travels back: its 5-tuple is the data's, reversed.
        let key = data_key(pkt.dip, pkt.sip, pkt.dport, pkt.sport);
        let i = leaf * (self.p.table_mask + 1) + (key as usize & self.p.table_mask);
        let e = &mut self.tx[i];
        if e.key != key || e.epoch != h.epoch || e.phase != h.phase {
            return; // another epoch's, or the entry was taken over
        }
        let timely = h.flag == CLEAR || (e.reply_deadline != Time::MAX && now < e.reply_deadline);
        if timely {
            e.stabilized = true;
            e.reply_deadline = Time::MAX;
        }
    }

    /// The destination ToR's rule for data packet `pkt` arriving at `node` for host port
    /// `egress`: what to do with it, the control packets to send back (into `outbox`), the
    /// flush timer to set. Clears the header.
    pub fn destination(
        &mut self,
        now: Time,
        node: NodeId,
        egress: PortId,
        pkt: &mut Packet,
        timer: &mut Option<FlushTimer>,
        tally: &mut Tally,
    ) -> RxAction {
        let h = Header::read(pkt);
        let ts = h.ts;
        pkt.int_hops = 0;
        pkt.deflections = 0;
        if h.flag == 0 {
            return RxAction::Forward;
        }
        let leaf = self.leaf_of[node.idx()] as usize;
        let key = data_key(pkt.sip, pkt.dip, pkt.sport, pkt.dport);
        let p = self.p;
        let i = leaf * (p.table_mask + 1) + (key as usize & p.table_mask);
        if self.rx[i].key != key {
            if self.rx[i].queue != NONE {
                return RxAction::Forward; // the entry is busy reordering another flow
            }
            self.rx[i] = RxEntry { key, epoch: h.epoch.wrapping_sub(1) & EPOCH_MASK, ..RX_EMPTY };
        }
        let e = &mut self.rx[i];
        let new_epoch = after(h.epoch, e.epoch);
        if !new_epoch && h.epoch != e.epoch {
            return RxAction::Forward; // an earlier epoch's straggler
        }
        if new_epoch {
            e.epoch = h.epoch;
        }
        if h.phase == 0 {
            e.phase0_tx = ts;
            e.phase0_rx = now;
        }
        let mut out_of_order = false;
        if new_epoch {
            e.phase = if h.flag == TAIL { 1 } else { 0 };
            out_of_order = h.phase > e.phase;
            e.phase0 = h.phase == 0;
        } else {
            if h.flag == TAIL {
                if e.queue == NONE {
                    e.phase = 1;
                }
            } else if e.phase < h.phase {
                out_of_order = true;
            }
            if h.phase == 0 {
                e.phase0 = true;
            }
        }
        if h.flag == TAIL || h.phase == 1 {
            e.tail = ts;
        }
        // When the old path's TAIL is expected: the send-time gap between the last phase-0
        // packet and the TAIL, added to that packet's arrival, plus a margin.
        let gap = if e.phase0 { stamp_gap(e.tail, e.phase0_tx) } else { Time::from_ns(p.default_wait) };
        let extra = Time::from_ns(p.flush_extra);
        let deadline = if h.phase == 1 {
            if e.phase0 {
                e.phase0_rx + gap + extra
            } else {
                now + gap + extra
            }
        } else if h.flag == TAIL {
            now
        } else {
            now + gap + extra
        };
        let mut action = RxAction::Forward;
        if h.phase == 0 {
            if e.queue != NONE {
                let q = e.queue;
                if h.flag == TAIL {
                    action = RxAction::ForwardThenRelease(q);
                } else {
                    let g = &mut self.queue[q as usize].generation;
                    *g = g.wrapping_add(1);
                    *timer = Some(FlushTimer { queue: q, generation: *g, at: deadline });
                }
            }
        } else if out_of_order {
            if e.queue == NONE {
                match self.free_queue(egress) {
                    Some(q) => {
                        self.rx[i].queue = q;
                        let rq = &mut self.queue[q as usize];
                        rq.owner = i as u32;
                        rq.generation = rq.generation.wrapping_add(1);
                        *timer = Some(FlushTimer { queue: q, generation: rq.generation, at: deadline });
                        self.held[leaf].queues += 1;
                    }
                    None => tally.unheld += 1,
                }
            }
            if self.rx[i].queue != NONE {
                action = RxAction::Hold(self.rx[i].queue);
            }
        }
        let (src, out) = (pkt, &mut self.outbox);
        if src.ce {
            out.push(control(src, Header { flag: NOTIFY, tag: h.tag, ..Header::default() }));
        }
        if h.flag == INIT {
            out.push(control(src, Header { flag: RTT_REPLY, tag: h.tag, epoch: h.epoch, ..Header::default() }));
        } else if h.flag == TAIL {
            out.push(control(src, Header { flag: CLEAR, phase: 1, tag: h.tag, epoch: h.epoch, ts: 0 }));
        }
        tally.control += out.len() as u64;
        action
    }

    /// A free reorder queue of host port `egress`.
    fn free_queue(&self, egress: PortId) -> Option<u32> {
        let first = self.first_queue[egress.idx()];
        if first == NONE {
            return None;
        }
        (first..first + self.p.queues as u32).find(|&q| self.queue[q as usize].owner == NONE)
    }

    /// Holds the admitted packet `r` (`wire` bytes, admitted in `class`) in queue `q`.
    pub fn hold(&mut self, now: Time, q: u32, r: PacketRef, class: u8, wire: u32) {
        let rq = &mut self.queue[q as usize];
        rq.packets.push_back((r, class, wire));
        rq.bytes += wire as u64;
        let leaf = self.queue_leaf[q as usize] as usize;
        let o = &mut self.held[leaf];
        o.packets += 1;
        o.bytes += wire as u64;
        self.note(now, leaf);
    }

    /// Whether timer (`q`, `generation`) still stands.
    pub fn timer_live(&self, q: u32, generation: u32) -> bool {
        let rq = &self.queue[q as usize];
        rq.owner != NONE && rq.generation == generation
    }

    /// Empties queue `q` (its flow's entry back to phase 1, not reordering), its packets
    /// into `released` in arrival order; its port.
    pub fn release(&mut self, now: Time, q: u32, released: &mut Vec<(PacketRef, u8, u32)>) -> PortId {
        let rq = &mut self.queue[q as usize];
        let owner = rq.owner as usize;
        rq.owner = NONE;
        rq.generation = rq.generation.wrapping_add(1);
        released.extend(rq.packets.drain(..));
        let bytes = std::mem::take(&mut rq.bytes);
        let e = &mut self.rx[owner];
        e.queue = NONE;
        e.phase = 1;
        let port = self.queue_port[q as usize];
        let leaf = self.queue_leaf[q as usize] as usize;
        let o = &mut self.held[leaf];
        o.queues -= 1;
        o.packets -= released.len() as u64;
        o.bytes -= bytes;
        self.note(now, leaf);
        port
    }

    /// Payload bytes of the data packets held now.
    pub fn held_payload(&self, pool: &crate::fabric::PacketPool) -> u64 {
        self.queue.iter().flat_map(|q| q.packets.iter()).map(|&(r, _, _)| pool.get(r).payload as u64).sum()
    }

    /// The host port of queue `q` (its timer runs at that port's switch).
    pub fn queue_port(&self, q: u32) -> PortId {
        self.queue_port[q as usize]
    }

    /// Occupancy of `leaf` changed at `now`: the open window's peaks, a row per window
    /// closed.
    fn note(&mut self, now: Time, leaf: usize) {
        let w = now.ps() / self.window.ps();
        let o = &mut self.held[leaf];
        if w != o.window {
            if o.peak != (0, 0, 0) {
                let (queues, packets, bytes) = o.peak;
                let window_start = Time::from_ps(o.window * self.window.ps());
                self.rows.push(ReorderRow { window_start, switch: self.leaf_node[leaf], queues, packets, bytes });
            }
            o.window = w;
            o.peak = (0, 0, 0);
        }
        o.peak = (o.peak.0.max(o.queues), o.peak.1.max(o.packets), o.peak.2.max(o.bytes));
    }

    /// The reorder-occupancy rows so far, open windows included, by (window, switch).
    pub fn rows(&self) -> Vec<ReorderRow> {
        let mut rows = self.rows.clone();
        for (leaf, o) in self.held.iter().enumerate() {
            if o.peak != (0, 0, 0) {
                let (queues, packets, bytes) = o.peak;
                let window_start = Time::from_ps(o.window * self.window.ps());
                rows.push(ReorderRow { window_start, switch: self.leaf_node[leaf], queues, packets, bytes });
            }
        }
        rows.sort_by_key(|r| (r.window_start, r.switch));
        rows
    }
}

/// A 64-byte control packet from the destination ToR back to the source ToR of data packet
/// `d`, in the control class (0, ahead of data, as the artifact gives it ACK's priority).
fn control(d: &Packet, h: Header) -> Packet {
    let mut c = Packet::pfc(PacketKind::LbControl, 0, 64);
    c.src = d.dst;
    c.dst = d.src;
    c.sip = d.dip;
    c.dip = d.sip;
    c.sport = d.dport;
    c.dport = d.sport;
    c.qp = d.qp;
    c.tenant = d.tenant;
    h.write(&mut c);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{stream, StreamKind};
    use crate::topology::builders::leaf_spine;
    use crate::units::Rate;

    /// Leaf 2 (host 0) and leaf 3 (host 1), four spines; leaf 2's uplinks.
    fn fabric() -> (Topology, ConWeave, Vec<PortId>) {
        let t = leaf_spine(2, 4, 1, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).unwrap();
        let cw = ConWeave::new(&t, &LbConfig::default()).unwrap();
        let up = t.nodes[2].ports.iter().copied().filter(|p| !t.is_host(t.ports[p.idx()].peer_node)).collect();
        (t, cw, up)
    }

    fn data() -> Packet {
        let mut p = Packet::pfc(PacketKind::Data, 3, 1048);
        (p.src, p.dst, p.sip, p.dip, p.sport, p.dport) = (NodeId(0), NodeId(1), 11, 12, 1000, 100);
        p
    }

    #[test]
    fn header_fields_round_trip_through_the_packet() {
        let mut p = data();
        let h = Header { flag: TAIL, phase: 1, tag: 15, epoch: 31, ts: 0xABC };
        h.write(&mut p);
        assert_eq!(Header::read(&p), h);
        assert!(after(0, 31) && after(5, 3) && !after(3, 5) && !after(7, 7));
        // 10 µs and 2 µs are units 39 and 7 of 256 ns; a later stamp before an earlier is no gap.
        assert_eq!(stamp_gap(stamp(Time::from_us(10)), stamp(Time::from_us(2))), Time::from_ns(32 * 256));
        assert_eq!(stamp_gap(stamp(Time::from_us(2)), stamp(Time::from_us(10))), Time::ZERO);
    }

    #[test]
    fn a_flow_is_rerouted_at_most_once_per_epoch() {
        let (_, mut cw, up) = fabric();
        let mut rng = stream(1, StreamKind::Other, 9);
        let mut tally = Tally::default();
        let leaf = NodeId(2);
        let mut send = |cw: &mut ConWeave, us: u64, tally: &mut Tally| {
            let mut p = data();
            let port = cw.source(Time::from_us(us), leaf, &up, &mut p, &mut rng, tally);
            (port, Header::read(&p))
        };
        let (first, h) = send(&mut cw, 0, &mut tally);
        assert_eq!((h.flag, h.phase, h.epoch), (INIT, 0, 1), "the first packet asks for an RTT_REPLY");
        // The destination ToR reports ECN on the flow's path: it is avoided for 16 µs, so
        // that the reroute below cannot pick it again.
        let mut notify = Packet::pfc(PacketKind::LbControl, 0, 64);
        (notify.src, notify.dst) = (NodeId(1), NodeId(0));
        Header { flag: NOTIFY, tag: cw.tag[first.idx()] as u16, ..Header::default() }.write(&mut notify);
        cw.on_control(Time::from_us(1), leaf, &notify);
        // No reply: the base RTT is 4 µs (two 1 µs hops each way), the reply due by 8 µs.
        for us in 1..=8 {
            let (port, d) = send(&mut cw, us, &mut tally);
            assert_eq!((port, d.flag, d.phase, d.epoch), (first, DATA, 0, 1), "at {us} us");
        }
        let (tail_port, tail) = send(&mut cw, 9, &mut tally);
        assert_eq!((tail_port, tail.flag, tail.phase), (first, TAIL, 0), "the TAIL leaves on the old path");
        let (moved, after_tail) = send(&mut cw, 10, &mut tally);
        assert!(moved != first && after_tail.phase == 1 && after_tail.flag == DATA, "{after_tail:?}");
        assert_eq!(tally.reroutes, 1);
        // Without the CLEAR the epoch lasts: however late, no second reroute.
        for us in 11..250 {
            let (port, h) = send(&mut cw, us, &mut tally);
            assert_eq!((port, h.flag, h.phase, h.epoch), (moved, DATA, 1, 1), "at {us} us");
        }
        assert_eq!(tally.reroutes, 1, "once in the epoch");
        // The CLEAR (the TAIL's reply) closes the epoch: the next packet opens epoch 2 on
        // the same path, whose own late reply may move it once more.
        let mut clear = notify;
        Header { flag: CLEAR, phase: 1, tag: 0, epoch: 1, ts: 0 }.write(&mut clear);
        (clear.sip, clear.dip, clear.sport, clear.dport) = (12, 11, 100, 1000);
        cw.on_control(Time::from_us(250), leaf, &clear);
        let (port, h) = send(&mut cw, 251, &mut tally);
        assert_eq!((port, h.flag, h.phase, h.epoch), (moved, INIT, 0, 2));
        let rerouted = (252..400).filter(|&us| send(&mut cw, us, &mut tally).1.flag == TAIL).count();
        assert_eq!(rerouted, 1, "one TAIL in epoch 2");
    }
}
