//! ConWeave (Song et al., SIGCOMM'23) on a leaf-spine or a fat tree: the source ToR probes the
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
//! A path is the choice at every upward hop, named by a tag the data packet carries; the
//! switches above the ToRs follow it (`paths.rs`).
//!
//! Locality: a source ToR's tables (per flow, and per (destination leaf, path) the time a
//! path stays avoided after a NOTIFY) and a destination ToR's tables and reorder queues
//! change only in the hook running at that switch; what one ToR tells another travels in
//! packets: the header of data packets, and RTT_REPLY, CLEAR and NOTIFY packets
//! (`PacketKind::LbControl`, 64 bytes, the control class) that the source ToR consumes.
//!
//! The header of a data packet is packed into `Packet::int_hops` and `Packet::deflections`
//! (24 bits: flag, phase, path tag, epoch modulo 32, a send time in 256 ns units modulo
//! 2^12), free when no INT-based congestion control and no IOFD run (the scenario refuses
//! `conweave` with either); the destination ToR clears them.

mod causes;
mod destination;
mod flow_table;
mod header;
mod paths;
mod source;
#[cfg(test)]
mod tests;

use super::{LbConfig, Packet};
use crate::fabric::PacketRef;
use crate::ids::{NodeId, PortId};
use crate::topology::ecmp::ecmp_hash;
use crate::topology::Topology;
use crate::units::Time;
use std::collections::VecDeque;

pub use causes::{Causes, CAUSES, CAUSE_NAMES};
use flow_table::FlowTable;
pub use flow_table::TableKind;

pub use paths::MAX_PATHS;
/// Path tags: 0..16 in a 4-bit field.
const TAGS: usize = MAX_PATHS;
const NONE: u32 = u32::MAX;

/// A source ToR's entry for one flow.
#[derive(Clone, Copy, Debug)]
struct TxEntry {
    epoch: u8,
    phase: u16,
    stabilized: bool,
    /// The uplink the flow's packets take (`PortId::NONE`: no packet yet).
    path: PortId,
    /// The path's choices above the ToR (`paths.rs`; 0 on a leaf-spine).
    upper: u8,
    active: Time,
    /// When a missing RTT_REPLY becomes a reroute; `Time::MAX` when none is awaited.
    reply_deadline: Time,
    /// Send time of this epoch's TAIL (0: none).
    tail: u16,
}

const TX_EMPTY: TxEntry = TxEntry {
    epoch: 0,
    phase: 0,
    stabilized: false,
    path: PortId::NONE,
    upper: 0,
    active: Time::ZERO,
    reply_deadline: Time::MAX,
    tail: 0,
};

/// A destination ToR's entry for one flow.
#[derive(Clone, Copy, Debug)]
struct RxEntry {
    epoch: u8,
    phase: u16,
    /// The send and arrival times of the latest phase-0 packet, valid once `phase0` is set.
    phase0_tx: u16,
    phase0_rx: Time,
    phase0: bool,
    tail: u16,
    /// Its reorder queue while one is held (`NONE` otherwise).
    queue: u32,
    /// Its flow's last packet here (an entry idle past `tx_expiry` may be taken over).
    active: Time,
    /// What this ToR has sent on to the host of the flow, as a go-back-N receiver sees it
    /// (`causes.rs`): a measurement only, no rule reads it.
    seen: causes::Seen,
}

const RX_EMPTY: RxEntry = RxEntry {
    epoch: 0,
    phase: 0,
    phase0_tx: 0,
    phase0_rx: Time::ZERO,
    phase0: false,
    tail: 0,
    queue: NONE,
    active: Time::ZERO,
    seen: causes::SEEN_EMPTY,
};

/// One reorder queue of a destination ToR's host port: the flow's packets held, in
/// arrival order, with the class each was admitted in.
#[derive(Clone, Debug, Default)]
pub struct ReorderQueue {
    /// The Rx entry (index) it serves; `NONE` when free.
    owner: u32,
    /// Bumped on every flush and new deadline: a timer of an older generation is stale.
    pub generation: u32,
    packets: VecDeque<(PacketRef, u8, u32)>,
    /// The held packets' (sequence, payload), in the same order (for `causes.rs`).
    seqs: VecDeque<(u64, u32)>,
    /// Set when the TAIL releases it (the release is not its deadline's).
    by_tail: bool,
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
    queues: usize,
    admit_on_release: bool,
}

/// The run's ConWeave state (each part indexed by the leaf or port that owns it).
#[derive(Clone, Debug)]
pub struct ConWeave {
    p: Params,
    leaves: usize,
    /// Leaf index of each leaf switch and of each host's leaf; `NO_LEAF` for spines.
    leaf_of: Vec<u16>,
    is_leaf: Vec<bool>,
    /// Per port: its index among its leaf's uplinks (0..16), 0 for other ports.
    tag: Vec<u8>,
    /// Per leaf: its uplinks (a tag's radix at the source).
    n_up: Vec<u8>,
    /// Per node: the divisor of a tag's upper part at a switch above the leaves (0 elsewhere).
    stride: Vec<u8>,
    /// Per (leaf, leaf): the choices above the source ToR (1 on a leaf-spine or in a pod).
    upper: Vec<u8>,
    /// Per (leaf, leaf): the base RTT between them (propagation both ways).
    base_rtt: Vec<Time>,
    /// Per leaf, its flows as a source ToR and as a destination ToR (`flow_table.rs`).
    tx: FlowTable<TxEntry>,
    rx: FlowTable<RxEntry>,
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
    /// Out-of-order arrivals at the hosts behind each destination ToR, by cause.
    pub causes: Causes,
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
    /// Data packets a ToR did not track (hashed at the source, not reordered at the
    /// destination): under the direct table, their flow's slot was another active flow's;
    /// under the exact one, the table was full.
    pub untracked: u64,
    /// Of `untracked`, those the exact table had no room for (0 under the direct table).
    pub table_full: u64,
    /// Under `conweave_admit_on_release`: released packets the buffer refused (the
    /// artifact's `DoSwitchSend` drops them too, lossless fabric or not).
    pub release_drops: u64,
}

/// The flow's hash, the same at both ToRs and for the replies coming back (the data
/// direction's 5-tuple hashed with seed 0); the flow tables' home slot, and the direct
/// table's key.
fn data_key(sip: u32, dip: u32, sport: u16, dport: u16) -> u32 {
    // The top bit set: never 0, an empty slot's key; the index takes the low bits.
    ecmp_hash(sip, dip, sport, dport, 0) | 1 << 31
}

impl ConWeave {
    /// The state for `topo`, which must be a layered fabric (leaf-spine, fat tree).
    pub fn new(topo: &Topology, cfg: &LbConfig) -> Result<ConWeave, String> {
        super::refuse_nvlink("ConWeave", topo)?;
        let paths::Layout { leaf_of, is_leaf, uplinks, stride, upper, base_rtt } = paths::layout(topo)?;
        let leaves = uplinks.len();
        let mut tag = vec![0u8; topo.ports.len()];
        for ups in &uplinks {
            for (i, &p) in ups.iter().enumerate() {
                tag[p.idx()] = i as u8;
            }
        }
        let n_up = uplinks.iter().map(|u| u.len().min(u8::MAX as usize) as u8).collect();
        let mut first_queue = vec![NONE; topo.ports.len()];
        let mut queue_port = Vec::new();
        let mut queue_leaf = Vec::new();
        let mut leaf_node = vec![NodeId::NONE; leaves];
        for s in topo.switches().filter(|s| is_leaf[s.idx()]) {
            leaf_node[leaf_of[s.idx()] as usize] = s;
            for &p in topo.nodes[s.idx()].ports.iter().filter(|p| topo.is_host(topo.ports[p.idx()].peer_node)) {
                first_queue[p.idx()] = queue_port.len() as u32;
                queue_port.extend(std::iter::repeat_n(p, cfg.conweave_queues as usize));
                queue_leaf.extend(std::iter::repeat_n(leaf_of[s.idx()], cfg.conweave_queues as usize));
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
                queues: cfg.conweave_queues as usize,
                admit_on_release: cfg.conweave_admit_on_release,
            },
            leaves,
            leaf_of,
            is_leaf,
            tag,
            n_up,
            stride,
            upper,
            base_rtt,
            tx: FlowTable::new(cfg.conweave_table_kind, leaves, table, TX_EMPTY),
            rx: FlowTable::new(cfg.conweave_table_kind, leaves, table, RX_EMPTY),
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
            causes: Causes::default(),
        })
    }

    /// How the ToRs keep their flows.
    pub fn table_kind(&self) -> TableKind {
        self.tx.kind()
    }

    /// Whether held packets are admitted when released rather than on arrival.
    pub fn admit_on_release(&self) -> bool {
        self.p.admit_on_release
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
}
