//! Switch-side load balancing: how a switch picks one of several equal-cost
//! next hops for a data packet. `spray` (a uniformly random hop per packet), `drill` (the
//! least-loaded of a few sampled hops and the best remembered, DRILL, SIGCOMM'17),
//! `letflow` (a random hop per flowlet, LetFlow, NSDI'17) and `conga` (the least congested
//! leaf-to-leaf path per flowlet, CONGA, SIGCOMM'14) and `conweave` (RTT probing and
//! cautious rerouting at the source ToR, in-order delivery restored at the destination ToR,
//! ConWeave, SIGCOMM'23). Control packets (ACK, NACK, ConWeave's replies) keep the ECMP
//! hash; PFC frames never reach routing.
//!
//! The simulator reaches this module through one hook, [`LoadBalancer::route`], called at
//! every switch hop when a balancer is configured (`sim/switch/mod.rs::switch_receive`). All the
//! state is per switch (its random stream, flowlet table, DRILL memory, CONGA tables) or per
//! switch port (CONGA's DRE), and is only touched by the hook running at that switch.

mod balance;
pub mod conga;
pub mod conweave;
pub mod drill;
pub mod flowlet;
pub mod spray;

pub use balance::{BalanceRecorder, BalanceRow};

use super::{Packet, PacketKind, PortState};
use crate::engine::{stream, Rng, StreamKind};
use crate::ids::{NodeId, PortId};
use crate::topology::routing::{pick, PathSelection};
use crate::topology::Topology;
use crate::units::Time;

/// `[fabric.lb]`'s parameters, each with where its default comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LbConfig {
    /// A `[fabric.lb]` table was given: the balancer (and `balance.parquet`) runs even under
    /// plain ECMP, so that an ECMP row of a study has the same outputs.
    pub enabled: bool,
    /// DRILL's `d`: random hops sampled per packet (DRILL §3: d = 2, m = 1 is its default).
    pub drill_samples: u32,
    /// DRILL's `m`: best hops remembered per destination.
    pub drill_memory: u32,
    /// A gap at least this long starts a new flowlet (LetFlow and CONGA; 100 µs as in
    /// ConWeave's artifact, `letflow_flowletTimeout`, `conga_flowletTimeout`).
    pub flowlet_timeout: Time,
    /// Entries of each switch's flowlet table, a power of two (CONGA §5: 64K entries).
    pub flowlet_table: u32,
    /// CONGA's DRE decay period `T_dre` (50 µs: ConWeave's artifact, `conga_dreTime`).
    pub conga_dre_period: Time,
    /// CONGA's DRE decay factor α per period (0.2: ConWeave's artifact, `conga_alpha`).
    pub conga_alpha: f64,
    /// Bits of a quantised congestion metric (3: CONGA §3.4 and the artifact).
    pub conga_bits: u8,
    /// A remote metric not refreshed for this long counts as 0 (500 µs: the artifact's
    /// `conga_agingTime`).
    pub conga_aging: Time,
    /// Window of the per-ToR uplink imbalance (`balance.parquet`; 100 µs).
    pub window: Time,
    /// ConWeave: a flow idle this long starts a new epoch on a new path (300 µs: the
    /// artifact's `run.py`, `cwh_tx_expiry_time` for leaf-spine).
    pub conweave_tx_expiry: Time,
    /// ConWeave: the RTT_REPLY is due within the base RTT plus this (4 µs: `run.py`,
    /// `cwh_extra_reply_deadline`).
    pub conweave_reply_extra: Time,
    /// ConWeave: a path a NOTIFY (ECN) names is avoided this long (16 µs: `run.py`,
    /// `cwh_path_pause_time`).
    pub conweave_path_pause: Time,
    /// ConWeave: margin added to a reorder queue's predicted flush time (16 µs: `run.py`,
    /// `cwh_extra_voq_flush_time` for leaf-spine).
    pub conweave_flush_extra: Time,
    /// ConWeave: the wait predicted when no phase-0 timing is known (200 µs: `run.py`,
    /// `cwh_default_voq_waiting_time` for leaf-spine).
    pub conweave_default_wait: Time,
    /// ConWeave: flow-table entries per ToR, a power of two (65,536, as `flowlet_table`:
    /// the ns-3 artifact keeps exact per-flow maps, which this makes collide rarely; the P4
    /// artifact's hardware table has 4,096, `CONWEAVE_TABLE_SIZE` in `macro.p4`).
    pub conweave_table: u32,
    /// ConWeave: how a ToR keeps its flows: `Exact` (default), one entry per flow
    /// while the table has room, as the ns-3 artifact's maps; `Direct`, one slot per hash
    /// value, a colliding flow untracked (rdmalab's earlier table, kept so that results made with
    /// it can be reproduced).
    pub conweave_table_kind: conweave::TableKind,
    /// ConWeave: reorder queues per host port of a ToR (24: the P4 artifact's 100G build,
    /// 8 queues in each of 3 stages, `macro.p4`).
    pub conweave_queues: u32,
    /// ConWeave: a held packet waits outside the shared buffer and is admitted (MMU, PFC)
    /// when its queue is released, as in the ns-3 artifact (`conweave-routing.cc` enqueues it
    /// before admission, `conweave-voq.cc` flushes it through `SwitchNode::DoSwitchSend`'s
    /// admission); false (default): admitted on arrival and counted while held, as the P4
    /// version's paused queues.
    pub conweave_admit_on_release: bool,
}

impl Default for LbConfig {
    fn default() -> Self {
        LbConfig {
            enabled: false,
            drill_samples: 2,
            drill_memory: 1,
            flowlet_timeout: Time::from_us(100),
            flowlet_table: 1 << 16,
            conga_dre_period: Time::from_us(50),
            conga_alpha: 0.2,
            conga_bits: 3,
            conga_aging: Time::from_us(500),
            window: Time::from_us(100),
            conweave_tx_expiry: Time::from_us(300),
            conweave_reply_extra: Time::from_us(4),
            conweave_path_pause: Time::from_us(16),
            conweave_flush_extra: Time::from_us(16),
            conweave_default_wait: Time::from_us(200),
            conweave_table: 1 << 16,
            conweave_table_kind: conweave::TableKind::Exact,
            conweave_queues: 24,
            conweave_admit_on_release: false,
        }
    }
}

/// Whether `scheme` is balanced by this module (rather than by the hash or the alias rule).
pub fn is_switch_scheme(scheme: PathSelection) -> bool {
    matches!(
        scheme,
        PathSelection::Spray
            | PathSelection::Drill
            | PathSelection::Letflow
            | PathSelection::Conga
            | PathSelection::Conweave
    )
}

/// What one switch keeps.
#[derive(Clone, Debug)]
struct SwitchLb {
    rng: Rng,
    flowlets: flowlet::FlowletTable,
    drill: drill::DrillMemory,
}

/// Every switch's balancer, the run's uplink-balance recorder and, under `conga`, the
/// leaf-spine state.
#[derive(Clone, Debug)]
pub struct LoadBalancer {
    scheme: PathSelection,
    cfg: LbConfig,
    /// Index into `switches` of each node (`u32::MAX` for hosts).
    index: Vec<u32>,
    switches: Vec<SwitchLb>,
    conga: Option<Box<conga::Conga>>,
    conweave: Option<Box<conweave::ConWeave>>,
    /// What ConWeave's ToRs did (the run's counters take it at the end).
    pub tally: conweave::Tally,
    balance: BalanceRecorder,
}

/// Random-stream family of the balancers (`StreamKind::Other`, this tag in the high bits).
const STREAM_TAG: u64 = 0x4C42 << 40;

/// CONGA's and ConWeave's refusal of hosts that also link to an NVLink switch: both keep one
/// leaf per host, which a GPU with NVLink beside its rail NIC does not have.
pub(super) fn refuse_nvlink(name: &str, topo: &Topology) -> Result<(), String> {
    if !topo.egress_by_destination {
        return Ok(());
    }
    Err(format!(
        "{name} keeps one leaf per host and does not run where GPUs also link to an NVLink switch \
         (topology.nvlink_rate, or a SimAI topology's NVSwitches)"
    ))
}

impl LoadBalancer {
    /// The balancers of `topo`'s switches under `scheme`; an error (a sentence) when the
    /// scheme does not apply to the topology (CONGA off leaf-spine).
    pub fn new(scheme: PathSelection, cfg: LbConfig, topo: &Topology, seed: u64) -> Result<LoadBalancer, String> {
        let mut index = vec![u32::MAX; topo.nodes.len()];
        let mut switches = Vec::new();
        let flowlets = matches!(scheme, PathSelection::Letflow | PathSelection::Conga);
        let drill = scheme == PathSelection::Drill;
        for s in topo.switches() {
            index[s.idx()] = switches.len() as u32;
            switches.push(SwitchLb {
                rng: stream(seed, StreamKind::Other, STREAM_TAG | s.0 as u64),
                flowlets: flowlet::FlowletTable::new(if flowlets { cfg.flowlet_table } else { 0 }),
                drill: drill::DrillMemory::new(if drill { topo.nodes.len() } else { 0 }, cfg.drill_memory),
            });
        }
        let conga = match scheme {
            PathSelection::Conga => Some(Box::new(conga::Conga::new(topo, &cfg)?)),
            _ => None,
        };
        let conweave = match scheme {
            PathSelection::Conweave => Some(Box::new(conweave::ConWeave::new(topo, &cfg)?)),
            _ => None,
        };
        let balance = BalanceRecorder::new(topo, cfg.window);
        Ok(LoadBalancer { scheme, cfg, index, switches, conga, conweave, tally: Default::default(), balance })
    }

    /// The hook: the egress of `pkt` at switch `node` among `hops` (not empty), at `now`.
    /// Data packets follow the scheme; control packets the hash. Under CONGA every packet
    /// also updates the DREs and carries (or delivers) congestion in its header. Data bytes
    /// leaving a ToR upwards are counted for `balance.parquet`.
    pub fn route(&mut self, now: Time, node: NodeId, hops: &[PortId], pkt: &mut Packet, ports: &[PortState]) -> PortId {
        let sw = &mut self.switches[self.index[node.idx()] as usize];
        let data = pkt.kind == PacketKind::Data;
        let egress = if hops.len() == 1 {
            hops[0]
        } else if !data {
            hops[pick(self.scheme.key(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node), hops.len())]
        } else {
            let cfg = &self.cfg;
            match self.scheme {
                PathSelection::Spray => spray::pick_hop(&mut sw.rng, hops),
                PathSelection::Drill => sw.drill.pick_hop(&mut sw.rng, hops, pkt.dst, cfg.drill_samples, ports),
                PathSelection::Letflow => {
                    let key = flowlet::flow_key(pkt, node);
                    let rng = &mut sw.rng;
                    sw.flowlets.hop(key, now, cfg.flowlet_timeout, hops, |_| spray::pick_hop(rng, hops))
                }
                PathSelection::Conga => {
                    let conga = self.conga.as_deref_mut().expect("conga state under conga");
                    let key = flowlet::flow_key(pkt, node);
                    let rng = &mut sw.rng;
                    let timeout = cfg.flowlet_timeout;
                    sw.flowlets.hop(key, now, timeout, hops, |old| conga.best_uplink(now, node, pkt, hops, old, rng))
                }
                PathSelection::Conweave => {
                    let cw = self.conweave.as_deref_mut().expect("conweave state under conweave");
                    if cw.at_source(node, pkt) {
                        cw.source(now, node, hops, pkt, &mut sw.rng, &mut self.tally)
                    } else if let Some(i) = cw.follow(node, hops.len(), pkt) {
                        hops[i] // above the ToRs: the path the source ToR chose
                    } else {
                        hops[pick(self.scheme.key(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node), hops.len())]
                    }
                }
                other => hops[pick(other.key(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node), hops.len())],
            }
        };
        if let Some(c) = self.conga.as_deref_mut() {
            c.on_forward(now, node, egress, pkt);
        }
        if data {
            self.balance.count(now, egress, pkt.wire);
        }
        egress
    }

    /// ConWeave's state, when the scheme is `conweave`.
    pub fn conweave(&mut self) -> Option<&mut conweave::ConWeave> {
        self.conweave.as_deref_mut()
    }

    /// ConWeave runs (its reorder table is a result).
    pub fn runs_conweave(&self) -> bool {
        self.conweave.is_some()
    }

    /// How ConWeave's ToRs keep their flows (`None` under other schemes).
    pub fn conweave_table_kind(&self) -> Option<conweave::TableKind> {
        self.conweave.as_ref().map(|c| c.table_kind())
    }

    /// ConWeave holds packets outside the buffer until it releases them
    /// (`conweave_admit_on_release`).
    pub fn conweave_admits_on_release(&self) -> bool {
        self.conweave.as_ref().is_some_and(|c| c.admit_on_release())
    }

    /// Payload bytes held in ConWeave's reorder queues (byte conservation).
    pub fn held_payload(&self, pool: &super::PacketPool) -> u64 {
        self.conweave.as_ref().map_or(0, |c| c.held_payload(pool))
    }

    /// Out-of-order arrivals at hosts by cause under ConWeave (zero under other schemes).
    pub fn reorder_causes(&self) -> conweave::Causes {
        self.conweave.as_ref().map_or_else(Default::default, |c| c.causes)
    }

    /// ConWeave's reorder-occupancy rows (empty under other schemes).
    pub fn reorder_rows(&self) -> Vec<conweave::ReorderRow> {
        self.conweave.as_ref().map_or_else(Vec::new, |c| c.rows())
    }

    /// The uplink-balance rows so far, the windows still open included, in (window, switch)
    /// order.
    pub fn balance_rows(&self) -> Vec<BalanceRow> {
        self.balance.rows()
    }
}
