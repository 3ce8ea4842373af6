//! Run parameters of the simulated fabric, with the reference's defaults.

use super::{OnDeadlock, QlenMonitorConfig, TraceConfig};
use crate::cc::{CcConfig, Granularity};
use crate::fabric::{EcnConfig, IofdConfig};
use crate::ids::NodeId;
use crate::rnic::QpCacheConfig;
use crate::tenancy::{Defense, DefenseParams};
use crate::topology::routing::{NeighborOrder, PathSelection};
use crate::units::{Time, TimingModel};

/// Window limiting (the reference's HAS_WIN / VAR_WIN / GLOBAL_T).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowConfig {
    /// Limit bytes in flight to a window of one BDP.
    pub enabled: bool,
    /// Scale the window with the current rate / line rate.
    pub variable: bool,
    /// Use the largest base RTT (and BDP) of the whole topology for every QP.
    pub global: bool,
}

/// A scheduled change of a link's state, by the nodes it joins (`sim::failures`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    /// When it happens.
    pub at: Time,
    /// One end.
    pub a: NodeId,
    /// The other end.
    pub b: NodeId,
    /// true: the link comes up; false: it goes down.
    pub up: bool,
}

/// The RNR NAK timer field's values (IBA vol. 1 rel. 1.3, §9.7.5.2.8, Table 45 "Encoding
/// for RNR NAK Timer Field"; the same list in ibv_modify_qp(3) for `min_rnr_timer`), in µs:
/// code 0 is the longest, 655.36 ms; codes 1 to 31 grow from 0.01 ms to 491.52 ms.
pub const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840, 5_120, 7_680,
    10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
];

/// `rnr_retry` that means "retry forever" (ibv_modify_qp(3); IBA §9.7.5.2.8: 7 is infinite).
pub const RNR_RETRY_FOREVER: u8 = 7;

/// Receive queues and RNR NAKs (`[rnic]`): what a responder keeps posted, how soon its
/// application posts a consumed receive WQE again, and the two ibverbs QP attributes that
/// govern an RNR NAK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RnrConfig {
    /// Receive WQEs kept posted per connection at the responder (at least 1), or, with
    /// `shared`, in the one shared receive queue of each responder host.
    pub recv_queue_depth: u32,
    /// One shared receive queue (SRQ, `ibv_create_srq`) per responder host serves the SENDs
    /// of every connection to it (`[rnic] srq_depth`), instead of a queue per connection.
    pub shared: bool,
    /// From a message's receive completion to its WQE posted again.
    pub recv_repost_delay: Time,
    /// The responder's application handles one receive completion at a time, this long
    /// each, before `recv_repost_delay` starts (`[rnic] recv_processing`; zero: every
    /// completion handled the moment it is made).
    pub recv_processing: Time,
    /// The RNR NAK timer the responder asks for (`RNR_TIMER_US` code, 0 to 31).
    pub min_rnr_timer: u8,
    /// RNR NAKs a WR may meet without progress before it fails (0 to 6; 7: never fails).
    pub rnr_retry: u8,
}

impl RnrConfig {
    /// How long a requester waits after an RNR NAK before sending again.
    pub fn timer(&self) -> Time {
        Time::from_us(RNR_TIMER_US[self.min_rnr_timer as usize & 31] as u64)
    }
}

/// What a PFC watchdog does to a queue it finds in a storm (`[fabric.pfc_watchdog] action`,
/// SONiC's `config pfcwd start --action`; its `forward` is not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfcWatchdogAction {
    /// Stop honouring PFC on the queue, discard what it holds and every packet bound for it.
    Drop,
    /// Only record the storm.
    Alert,
}

/// PAUSE frames that carry a pause time, as 802.1Qbb's do (`[fabric.pfc_pause]`,
/// `sim::mech::pfc_pause`): the paused transmitter resumes when it runs out, and a sender
/// still over its threshold sends its PAUSE again before then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcPauseConfig {
    /// The pause time a PAUSE carries, in quanta of 512 bit times at the link's rate (1 to
    /// 65,535; a time of 0 is a RESUME).
    pub quanta: u16,
    /// A sender still over XOFF sends its PAUSE again this many quanta after the last one
    /// (fewer than `quanta`, so that a refresh arrives before the pause runs out).
    pub refresh_quanta: u16,
}

/// Packet trimming at switches (`[fabric.trimming]`, `sim::mech::trimming`): a UET data
/// packet that would queue past the threshold, or that the buffer refuses, goes on as its
/// header alone, in a class of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrimConfig {
    /// Trim when the egress queue of the packet's class holds this many bytes with it
    /// (`None`: only when the buffer would drop it).
    pub threshold: Option<u64>,
    /// Bytes of a trimmed packet on the wire (its headers).
    pub header_bytes: u32,
    /// The class the trimmed header is queued in (served by strict priority).
    pub class: u8,
}

/// A switch's PFC watchdog (`[fabric.pfc_watchdog]`, `sim::mech::pfc_watchdog`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcWatchdogConfig {
    /// A queue paused without a break this long is in a storm.
    pub detection_time: Time,
    /// A storm ends once no PFC frame has arrived for its queue this long.
    pub restoration_time: Time,
    /// Checks happen at multiples of this (SONiC's `POLL_INTERVAL`); `None`: exactly at the
    /// deadline.
    pub poll_interval: Option<Time>,
    /// What the storm's queue does.
    pub action: PfcWatchdogAction,
}

/// Everything about a run that is not topology or traffic.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// How serialisation times are computed (exact ps, or the reference's truncated ns).
    pub timing: TimingModel,
    /// Payload bytes per packet (MTU payload).
    pub mtu: u32,
    /// Header bytes of a data packet without INT (14 L2 + 20 IP + 8 UDP + 6 BTH-like = 48).
    pub header_bytes: u32,
    /// Wire bytes of an ACK/NACK without INT (padded to the 60-byte minimum).
    pub ack_bytes: u32,
    /// Wire bytes of a PFC frame.
    pub pfc_bytes: u32,
    /// ACK every this many in-order packets (and always the last packet of a message).
    pub ack_interval: u32,
    /// ACK/NACKs travel in switch queue 0 (strict priority, outside the MMU), and the
    /// NIC's ACK FIFO obeys PFC of class 0 instead of 3.
    pub ack_high_prio: bool,
    /// Switches honour `ack_high_prio`. Off reproduces the reference binary: its
    /// `third.cc` sets ACK_HIGH_PRIO only on the hosts (`RdmaEgressQueue::ack_q_idx`) and
    /// never on the switches (`SwitchNode::AckHighPrio` keeps its default 0), so ACKs
    /// queue behind data at every switch. Its DCQCN FCTs show it (small flows of a host
    /// whose downlink is congested wait for their ACKs).
    pub ack_prio_at_switches: bool,
    /// Answer duplicate data with a fresh cumulative ACK (the reference stays silent,
    /// which can leave a flow stuck when its last ACK is lost).
    pub ack_duplicates: bool,
    /// PFC on (lossless). Off: buffer overflow drops packets.
    pub lossless: bool,
    /// The link layer (`fabric.link_layer`): RoCE's PFC and shared buffer, or InfiniBand's
    /// credits per VL (`fabric::ib`, `sim::mech::ib`).
    pub link_layer: crate::fabric::LinkLayer,
    /// InfiniBand: input buffer per port and VL, bytes (`fabric.ib_vl_buffer`).
    pub ib_vl_buffer: u64,
    /// Switch shared buffer in bytes.
    pub buffer_bytes: u64,
    /// Where a switch's buffer is counted: one shared pool (the reference) or a fixed share
    /// per egress port (`fabric::buffer_model`).
    pub buffer_model: crate::fabric::BufferModel,
    /// Under `BufferModel::PerPort`: bytes each egress port owns (`None`: `buffer_bytes`
    /// less the PFC headroom, split evenly among the switch's ports).
    pub port_buffer_bytes: Option<u64>,
    /// PFC headroom of every switch ingress port, bytes (`fabric.pfc_headroom_kb`); `None`:
    /// what can still arrive after a PAUSE is decided (`fabric::mmu`, docs/model/pfc.md#pfc-headroom).
    pub pfc_headroom_bytes: Option<u64>,
    /// Under `BufferModel::EgressDynamic`: an egress port may hold this many times the
    /// pool's free bytes (`fabric.dt_alpha`).
    pub dt_alpha: f64,
    /// The order a switch egress queue serves its packets in: arrival order (the
    /// reference) or fair among input ports (`fabric::arbitration`).
    pub egress_arbitration: crate::fabric::EgressArbitration,
    /// How each NIC shares its data turns: per QP (the reference) or per tenant first
    /// (`rnic::tenant_rr`).
    pub nic_arbitration: crate::rnic::NicArbitration,
    /// Reserve per (port, class), bytes.
    pub reserve_bytes: u64,
    /// PFC resume hysteresis, bytes.
    pub resume_offset_bytes: u64,
    /// ECN marking thresholds per port rate; `None` = no marking.
    pub ecn: Option<EcnConfig>,
    /// Traffic classes (`[[fabric.classes]]`): per-class scheduling, PFC and ECN; `None`:
    /// the built-in scheduler, PFC on every class as `lossless` says, fabric-wide ECN.
    pub classes: Option<Box<crate::fabric::classes::ClassTable>>,
    /// Congestion control.
    pub cc: CcConfig,
    /// In-order flow deflection at switches (Blitz's IOFD); `None` = off.
    pub iofd: Option<IofdConfig>,
    /// Which QPs share a congestion-control state.
    pub granularity: Granularity,
    /// Window limiting.
    pub window: WindowConfig,
    /// The global base RTT and window (bytes) every QP uses under `window.global`, given by
    /// the run's dialect instead of the topology's largest (m4's `FIXED_WIN`); `None`: the
    /// topology's, as the reference computes them.
    pub global_path: Option<(Time, u64)>,
    /// Some host pairs have no path, which the run's dialect has checked no flow needs (the
    /// simai dialect's NVLS NVSwitches, hosts that forward nothing): routes are built without
    /// the all-pairs reachability check (`Routes::compute_without_down_links`).
    pub partial_routes: bool,
    /// A flow completes when its receiver holds the last byte in order (m4's FCT), not when
    /// the sender holds its ACK: the receiver notes the time and the record carries it
    /// (`RxFlowCounts::delivered`).
    pub fct_at_receiver: bool,
    /// The switches' buffer rules: the reference's, or a fork's (`rdmalab hpcc --dialect m4`).
    pub mmu_rule: crate::fabric::MmuRule,
    /// Pace each QP at its congestion-control rate (off: at line rate).
    pub rate_bound: bool,
    /// At most one CNP-flagged ACK per QP within this interval at the receiver (a
    /// notification-point CNP pacer, as in DCQCN's paper); `None` = every CE-marked packet's
    /// ACK carries the flag, as in the reference (`RdmaHw::ReceiveUdp`).
    pub cnp_interval: Option<Time>,
    /// Retransmission timeout; `None` = none (the reference has none).
    pub rto: Option<Time>,
    /// Go-back-N rounds (NACK or timeout) a QP may make without progress; one more and its
    /// WR fails (`fabric.retry_limit`, `sim::retry`). `None`: retry forever.
    pub retry_limit: Option<u32>,
    /// The receiver sends at most one NACK per expected sequence within this interval
    /// (go-back-N; IRN NACKs every out-of-order packet).
    pub nack_interval: Time,
    /// Loss recovery (`fabric.loss_recovery`): `None` is go-back-N (the reference); `Some`
    /// is IRN's selective retransmission with BDP-FC and two timeouts (`rnic::irn`).
    pub irn: Option<crate::rnic::IrnConfig>,
    /// The Ultra Ethernet transport's settings (`[fabric.uet]`, `rnic::uet`), read by QPs
    /// whose transport is `uet` only.
    pub uet: crate::rnic::uet::UetConfig,
    /// Receiver-credit congestion control (`cc = "rccc"` or `"nscc+rccc"`, `[fabric.rccc]`,
    /// `cc::rccc`) on UET QPs; `None`: off (no cost).
    pub rccc: Option<crate::cc::rccc::RcccConfig>,
    /// Receive queues and RNR NAKs (`[rnic] recv_queue_depth`, `sim::mech::rnr`); `None`:
    /// receive WQEs are never short, as before (no cost).
    pub rnr: Option<RnrConfig>,
    /// Send-queue depth of every QP an application keeps open (multipath, Virtuoso, jobs'
    /// ranks; `[rnic] max_send_wr`): a post on a full queue fails, and the application holds
    /// the WR until a completion frees a slot. Default [`crate::rnic::DEFAULT_MAX_SEND_WR`].
    /// The host model's QPs take `[host] max_send_wr` instead.
    pub max_send_wr: u32,
    /// The switches' PFC watchdog (`[fabric.pfc_watchdog]`); `None`: none (no cost).
    pub pfc_watchdog: Option<PfcWatchdogConfig>,
    /// Packet trimming at switches (`[fabric.trimming]`); `None`: none (one test per
    /// admission).
    pub trimming: Option<TrimConfig>,
    /// PAUSE frames with a pause time and refreshes (`[fabric.pfc_pause]`); `None`: a PAUSE
    /// holds until its RESUME, as in the reference (no cost).
    pub pfc_pause: Option<PfcPauseConfig>,
    /// The receiving NIC sets the CNP flag on its reply to an out-of-order packet
    /// (`fabric.cnp_on_ooo`; off in the reference).
    pub cnp_on_ooo: bool,
    /// INT units multiplier (the reference's INT_MULTI).
    pub int_multi: u32,
    /// QP-context cache; `None` = not modelled.
    pub qp_cache: Option<QpCacheConfig>,
    /// Order of equal-cost next hops (matters for which path a hash picks).
    pub neighbor_order: NeighborOrder,
    /// How switches choose among equal-cost next hops (`fabric.path_selection`).
    pub path_selection: PathSelection,
    /// The switch-side balancers' parameters (`[fabric.lb]`, `fabric::lb`).
    pub lb: crate::fabric::lb::LbConfig,
    /// Seed of every random stream.
    pub seed: u64,
    /// Absolute time at which the run stops whatever is left.
    pub stop_time: Time,
    /// Sample every switch port's queue length at this interval.
    pub queue_sample_interval: Option<Time>,
    /// Queue lengths are sampled from this time on.
    pub queue_sample_start: Time,
    /// Sample every active QP's rate and delivered throughput at this interval (from time
    /// zero, so samples of different runs line up). `None`: no sampling and no cost.
    pub rate_sample_interval: Option<Time>,
    /// A shared congestion state outlives its last QP this long; a QP joining meanwhile
    /// inherits its rate and timers (zero: forgotten at once, as in the reference).
    pub cc_state_linger: Time,
    /// Tenant isolation (`fabric.defense`).
    pub defense: Defense,
    /// Constants of the defense.
    pub defense_params: DefenseParams,
    /// Receivers meter in-order payload per tenant over time (`Results::tenant_bins`).
    pub tenant_meter: bool,
    /// Record every chunk an application posts (`Results::app_posts`; tests and figures).
    pub trace_apps: bool,
    /// A cycle of switch ports paused at least this long is a PFC deadlock (`sim::watch`).
    pub deadlock_timeout: Time,
    /// What a run does when it finds a PFC deadlock.
    pub on_deadlock: OnDeadlock,
    /// Record the bytes every port sends per interval (link utilisation per direction).
    pub link_sample_interval: Option<Time>,
    /// The per-packet trace (`[trace]`); `None`: no trace and no cost.
    pub trace: Option<TraceConfig>,
    /// The reference's queue-length monitor (`rdmalab hpcc` QLEN_MON_*); `None`: off.
    pub qlen_monitor: Option<QlenMonitorConfig>,
    /// Links that go down or come up during the run (`sim::failures`).
    pub link_events: Vec<LinkEvent>,
    /// Time from a link's change of state to the new routes (the reference: 0).
    pub reroute_delay: Time,
    /// Threads of the parallel engine (`--threads N`). `None`: the sequential engine with
    /// the reference's FIFO tie order (the default). `Some(n)`: the partition-independent
    /// origin order (`sim::order`), whose results do not depend on `n`; `n` > 1 is run by
    /// `sim::parallel::Runner` in up to `n` partitions, one thread each.
    pub threads: Option<u32>,
    /// DCQCN's timer shortcuts (`sim::mech::dcqcn_timers`): parked and lazy ticks, which
    /// change no result, only the events a run takes. Off only to check that claim.
    pub dcqcn_shortcuts: bool,
    /// Switch dequeues without `TxDone` events in the origin order on one thread
    /// (`sim::mech::deferred_dequeues`), which change no result, only the events a run
    /// takes. Off only to check that claim.
    pub deferred_dequeues: bool,
    /// The parallel engine's partition of every node, by node id (`partition_map` in a
    /// scenario file); `None`: the automatic map (`sim::parallel::auto_map`).
    pub partition_map: Option<Vec<u16>>,
    /// What the scenario parser found valid but costly or probably unintended (a field and
    /// what it costs: `scenario::limits`); the simulation's own warnings follow them.
    pub input_warnings: Vec<String>,
    /// The most bytes of queue, link and rate samples a run keeps (`SAMPLE_MAX_BYTES`).
    pub sample_max_bytes: u64,
    /// The most completed flows' records a run (each partition) holds in memory; past it they
    /// are written to a temporary file in runs of this many and read back in order when the
    /// results are read (`stats::spill`). `usize::MAX` keeps them all in memory.
    pub records_in_memory: usize,
}

/// `SimConfig::records_in_memory`'s default: 65,536 records (6 MB at their 88 B), a few
/// hundredths of a second of writing per million flows, and a file of 70 B per flow.
pub const RECORDS_IN_MEMORY: usize = 1 << 16;

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            timing: TimingModel::Exact,
            mtu: 1000,
            header_bytes: 48,
            ack_bytes: 60,
            pfc_bytes: 64,
            ack_interval: 1,
            ack_high_prio: true,
            ack_prio_at_switches: true,
            ack_duplicates: true,
            lossless: true,
            link_layer: crate::fabric::LinkLayer::Roce,
            ib_vl_buffer: crate::fabric::ib::DEFAULT_VL_BUFFER,
            buffer_bytes: 32 * 1024 * 1024,
            buffer_model: Default::default(),
            port_buffer_bytes: None,
            pfc_headroom_bytes: None,
            dt_alpha: 1.0,
            egress_arbitration: Default::default(),
            nic_arbitration: Default::default(),
            reserve_bytes: 4096,
            resume_offset_bytes: 3072,
            ecn: Some(EcnConfig::hpcc_default()),
            classes: None,
            cc: CcConfig::None,
            iofd: None,
            granularity: Granularity::PerQp,
            window: WindowConfig::default(),
            global_path: None,
            partial_routes: false,
            fct_at_receiver: false,
            mmu_rule: crate::fabric::MmuRule::Reference,
            rate_bound: true,
            cnp_interval: None,
            rto: Some(Time::from_us(1000)),
            retry_limit: None,
            nack_interval: Time::from_us(500),
            irn: None,
            uet: Default::default(),
            rccc: None,
            rnr: None,
            max_send_wr: crate::rnic::DEFAULT_MAX_SEND_WR,
            pfc_watchdog: None,
            trimming: None,
            pfc_pause: None,
            cnp_on_ooo: false,
            int_multi: 1,
            qp_cache: None,
            neighbor_order: NeighborOrder::Ascending,
            path_selection: PathSelection::Ecmp,
            lb: Default::default(),
            seed: 1,
            stop_time: Time::MAX,
            queue_sample_interval: None,
            queue_sample_start: Time::ZERO,
            rate_sample_interval: None,
            cc_state_linger: Time::ZERO,
            defense: Defense::None,
            defense_params: DefenseParams::default(),
            tenant_meter: true,
            trace_apps: false,
            deadlock_timeout: Time::from_ms(1),
            on_deadlock: OnDeadlock::Stop,
            link_sample_interval: None,
            trace: None,
            qlen_monitor: None,
            link_events: Vec::new(),
            reroute_delay: Time::ZERO,
            threads: None,
            dcqcn_shortcuts: true,
            deferred_dequeues: true,
            partition_map: None,
            input_warnings: Vec::new(),
            sample_max_bytes: super::SAMPLE_MAX_BYTES,
            records_in_memory: RECORDS_IN_MEMORY,
        }
    }
}

impl SimConfig {
    /// Wire bytes of a data packet carrying `payload`.
    #[inline]
    pub fn data_wire(&self, payload: u32) -> u32 {
        payload + self.header_bytes + self.cc.int_bytes()
    }
    /// Class `q` is lossless (PFC pauses it rather than dropping).
    pub fn pfc_on(&self, q: usize) -> bool {
        match &self.classes {
            Some(t) => t.classes[q].pfc,
            None => self.lossless,
        }
    }
    /// Some data class is lossless: PFC can pause something (PAUSE frames, a watchdog).
    pub fn any_pfc(&self) -> bool {
        (1..crate::fabric::NUM_PRIOS).any(|q| self.pfc_on(q))
    }
    /// Why class `escape` cannot be IOFD's escape class: it drops (PFC off) while some
    /// other class is lossless, so deflected packets of lossless flows could be lost.
    pub fn lossy_escape_class(&self, escape: u8) -> Option<String> {
        let lossless = (1..crate::fabric::NUM_PRIOS).find(|&q| q != escape as usize && self.pfc_on(q))?;
        (!self.pfc_on(escape as usize)).then(|| {
            format!(
                "class {escape} has PFC off (`fabric.classes`) but class {lossless} is lossless: the escape \
                 class must be a PFC class, or deflected packets of lossless flows are dropped"
            )
        })
    }
    /// The link layer is InfiniBand's.
    #[inline]
    pub fn infiniband(&self) -> bool {
        self.link_layer == crate::fabric::LinkLayer::Infiniband
    }
    /// Wire bytes of an ACK/NACK (INT echoed when on, padded to the ACK minimum).
    #[inline]
    pub fn ack_wire(&self) -> u32 {
        let int = self.cc.int_bytes();
        if int == 0 {
            self.ack_bytes
        } else {
            (14 + 20 + 12 + int).max(self.ack_bytes)
        }
    }
}
