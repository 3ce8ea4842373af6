//! Congestion control: the interface every algorithm implements, and the registry.
//!
//! # Shape
//!
//! A congestion-control state (`CcGroup`) belongs to one QP by default, or is shared by
//! several QPs (per destination, per source-destination pair: the CC-attack paper's enforcement
//! granularity, see [`Granularity`]). The sender calls it on every ACK/NACK
//! ([`CcGroup::on_ack`]) and when one of its timers fires ([`CcGroup::on_timer`]); the
//! algorithm updates `CcGroup::rate`, the rate the whole group may send at. The simulator
//! then hands that rate to the group's QPs (split evenly, or unsplit), and through the rate
//! a window when VAR_WIN is on (`Qp::window`).
//!
//! Algorithms are enum variants dispatched by `match` (no trait objects on the per-ACK
//! path), one file each: [`dcqcn`] (CC_MODE 1), [`hpcc`] (3), [`timely`] (7), [`dctcp`]
//! (8). Each keeps its parameters in a `*Params` struct (a variant of [`CcConfig`]) and its
//! per-group state in a `*State` struct (a variant of [`CcState`]); adding one touches this
//! file's registry and its own file only. Numbers and rules cite the reference's code
//! (alibaba-edu/High-Precision-Congestion-Control; functions named `RdmaHw::*` are in
//! `simulation/src/point-to-point/model/rdma-hw.cc`).
//!
//! # Timers
//!
//! An algorithm never touches the event queue. It arms or cancels its timers in
//! [`CcTimers`] (a due time per timer kind, plus a dirty mask); the simulator turns every
//! newly armed timer into an `Event::CcTimer(group, kind)` and, when it fires, calls
//! `on_timer` only if the due time still matches (lazy cancellation: a cancelled or
//! re-armed timer leaves a stale event that is ignored). Periodic handlers re-arm
//! themselves before doing their work (`RdmaHw::CheckRateDecreaseMlx`, `RateIncEventTimerMlx`).
//! Timers die with the group, i.e. when its last QP completes (`RdmaHw::QpComplete`).
//!
//! # Rate changes
//!
//! [`CcConfig::retimes_pacing`] says how a new rate reaches the QPs: HPCC re-times the
//! gap of the packet already sent (`RdmaHw::ChangeRate`); the others write the
//! rate and the next gap uses it.
//!
//! # Receiver-driven rates
//!
//! Blitz ([`dasr`], `cc = "blitz"`) is the one scheme with receiver-side state: each
//! receiving host keeps its set of active senders ([`dasr::DasrReceivers`], owned by the
//! simulator and touched only in the receiver handler, behind one `Option` test), and every
//! ACK/NACK carries the share it computes (`Packet::ack_share_kbps`, [`AckEvent::share`]). The
//! sender's `on_ack` adopts min(share, DCQCN's rate); grouping, splitting, pacing and
//! windows stay as they are.
//!
//! Switch-side actions (marking policies, INT variants) live in `sim::switch` behind
//! [`CcConfig::needs_int`] and the ECN config; Blitz's deflection (IOFD) changes forwarding,
//! not marking, and is a fabric feature independent of the algorithm (`fabric::deflection`).

pub mod dasr;
pub mod dcqcn;
pub mod dctcp;
pub mod hpcc;
pub mod ib;
pub mod ib_presets;
pub mod nscc;
pub mod rccc;
pub mod swift;
pub mod timely;

pub use dasr::{BlitzParams, BlitzState, DasrCount, DasrFallback, DasrParams};
pub use dcqcn::{DcqcnParams, DcqcnState};
pub use dctcp::{DctcpParams, DctcpState};
pub use hpcc::{HpccParams, HpccState};
pub use ib::{CctEntry, IbParams, IbState};
pub use nscc::{NsccParams, NsccState};
pub use swift::{SwiftParams, SwiftState};
pub use timely::{TimelyParams, TimelyState};

use crate::fabric::IntHeader;
use crate::ids::QpId;
use crate::units::{Rate, Time};

/// Which algorithm, with its parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CcConfig {
    /// No congestion control: every QP sends at line rate (a documented extension of the
    /// reference's CC_MODE, numbered 0).
    #[default]
    None,
    /// DCQCN, the reference's Mellanox version (CC_MODE 1, `RdmaHw::*Mlx`).
    Dcqcn(DcqcnParams),
    /// HPCC (CC_MODE 3, `RdmaHw::UpdateRateHp`).
    Hpcc(HpccParams),
    /// TIMELY (CC_MODE 7, `RdmaHw::UpdateRateTimely`).
    Timely(TimelyParams),
    /// Rate-based DCTCP (CC_MODE 8, `RdmaHw::HandleAckDctcp`).
    Dctcp(DctcpParams),
    /// Blitz: DASR's receiver-given share over DCQCN (our CC_MODE 20, the Blitz poster).
    Blitz(BlitzParams),
    /// InfiniBand congestion control (IBA annex A10): FECN marks, BECNs, the CCT index.
    Ib(IbParams),
    /// Swift: a delay-based window (htsim's `swift.cpp`).
    Swift(SwiftParams),
    /// NSCC: UEC's window on ECN, delay and loss (htsim's UEC sender).
    Nscc(NsccParams),
}

/// Every name `fabric.cc` accepts ([`CcConfig::from_name`]), as the scenario reference lists them.
pub const CC_NAMES: &[&str] = &["none", "dcqcn", "hpcc", "timely", "dctcp", "blitz", "ib", "swift", "nscc"];

impl CcConfig {
    /// Bytes of INT header this algorithm needs on data packets (`IntHeader::GetStaticSize`).
    pub fn int_bytes(&self) -> u32 {
        match self {
            CcConfig::Hpcc(_) => 42,
            CcConfig::Timely(_) => 8,
            // Swift's and NSCC's send time rides in the transport header (htsim's packets
            // carry it within their size).
            CcConfig::None
            | CcConfig::Dcqcn(_)
            | CcConfig::Dctcp(_)
            | CcConfig::Blitz(_)
            | CcConfig::Ib(_)
            | CcConfig::Swift(_)
            | CcConfig::Nscc(_) => 0,
        }
    }
    /// A window algorithm: the group's window bounds each member's bytes in flight
    /// (`CcGroup::window`).
    #[inline]
    pub fn windowed(&self) -> bool {
        matches!(self, CcConfig::Swift(_) | CcConfig::Nscc(_))
    }
    /// Whether switches must stamp INT hop records (HPCC only, `SwitchNode::SwitchNotifyDequeue`).
    pub fn needs_int(&self) -> bool {
        matches!(self, CcConfig::Hpcc(_))
    }
    /// Whether data packets carry a header slot echoed by the ACK (INT hops or TIMELY's
    /// send timestamp).
    pub fn carries_header(&self) -> bool {
        matches!(self, CcConfig::Hpcc(_) | CcConfig::Timely(_) | CcConfig::Swift(_) | CcConfig::Nscc(_))
    }
    /// A rate change re-times the pending pacing gap (HPCC's `RdmaHw::ChangeRate`)
    /// instead of applying from the next packet on.
    pub fn retimes_pacing(&self) -> bool {
        matches!(self, CcConfig::Hpcc(_))
    }
    /// The algorithm called `name` (one of [`CC_NAMES`]) with the reference's default
    /// parameters (the values of its `simulation/run.py`).
    pub fn from_name(name: &str) -> std::result::Result<CcConfig, String> {
        match name {
            "none" => Ok(CcConfig::None),
            "dcqcn" => Ok(CcConfig::Dcqcn(DcqcnParams::default())),
            "hpcc" => Ok(CcConfig::Hpcc(HpccParams::default())),
            "timely" => Ok(CcConfig::Timely(TimelyParams::default())),
            "dctcp" => Ok(CcConfig::Dctcp(DctcpParams::default())),
            "blitz" => Ok(CcConfig::Blitz(BlitzParams::default())),
            "ib" => Ok(CcConfig::Ib(IbParams::default())),
            "swift" => Ok(CcConfig::Swift(SwiftParams::default())),
            "nscc" => Ok(CcConfig::Nscc(NsccParams::default())),
            other => Err(format!("unknown congestion control `{other}` (known: {})", CC_NAMES.join(", "))),
        }
    }
    /// A display name.
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::None => "none",
            CcConfig::Dcqcn(_) => "dcqcn",
            CcConfig::Hpcc(_) => "hpcc",
            CcConfig::Timely(_) => "timely",
            CcConfig::Dctcp(_) => "dctcp",
            CcConfig::Blitz(_) => "blitz",
            CcConfig::Ib(_) => "ib",
            CcConfig::Swift(_) => "swift",
            CcConfig::Nscc(_) => "nscc",
        }
    }
    /// InfiniBand CC's settings when it runs (`cc = "ib"`, or Blitz's `ib` fall-back).
    pub fn ib_params(&self) -> Option<&IbParams> {
        match self {
            CcConfig::Ib(p) => Some(p),
            CcConfig::Blitz(b) if b.fallback == DasrFallback::Ib => Some(&b.ib),
            _ => None,
        }
    }
    /// The switches' FECN settings when InfiniBand CC runs (`cc = "ib"`, or Blitz with
    /// `dasr_fallback = "ib"`).
    #[inline]
    pub fn fecn(&self) -> Option<crate::fabric::fecn::FecnParams> {
        self.ib_params().map(|p| p.marking)
    }
    /// DASR's parameters when the receivers apportion rates (Blitz).
    pub fn dasr(&self) -> Option<&DasrParams> {
        match self {
            CcConfig::Blitz(p) => Some(&p.dasr),
            _ => None,
        }
    }
}

/// Which QPs share one congestion-control state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One state per QP (what the IB specification and the reference do).
    #[default]
    PerQp,
    /// One state per (sending NIC, destination address), its rate split evenly among the
    /// group's active QPs. Opening QPs to several addresses of one host escapes it.
    PerDestination,
    /// One state per (source host, destination host) pair, whatever the addresses, rate
    /// split evenly.
    PerPair,
    /// Per destination, but the rate applied to every QP unsplit (the ConnectX-5 the CC-attack
    /// paper measured: k QPs to one destination together send k times the computed rate).
    PerDestinationUnsplit,
    /// One state per (sending NIC, service level = priority group), its rate split evenly:
    /// InfiniBand CC's SL-based mode (A10 `Port_Control` bit 0).
    PerSl,
}

impl Granularity {
    /// Whether several QPs may share one state.
    pub fn shared(self) -> bool {
        self != Granularity::PerQp
    }
    /// Whether the group rate is divided among the group's QPs.
    pub fn splits(self) -> bool {
        matches!(self, Granularity::PerDestination | Granularity::PerPair | Granularity::PerSl)
    }
}

/// What a sender tells the algorithm about an ACK or NACK.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent<'a> {
    /// Arrival time.
    pub now: Time,
    /// Cumulative sequence acknowledged (for a shared group: the group's acknowledged
    /// bytes, so that sequence comparisons stay meaningful across its QPs).
    pub seq: u64,
    /// The next byte to send (for a shared group: the group's bytes sent).
    pub snd_nxt: u64,
    /// The ACK carries the CNP flag (ECN echo).
    pub cnp: bool,
    /// It is a NACK.
    pub nack: bool,
    /// The header echoed by the receiver (INT hops, TIMELY timestamp), when carried.
    pub int: Option<&'a IntHeader>,
    /// Payload bytes per packet (DCTCP's batch size).
    pub mtu: u32,
    /// INT unit multiplier (HPCC's field read-back, `IntHop::multi`).
    pub int_multi: u32,
    /// The rate share the receiver gives (DASR); `Rate(0)` when the ACK carries none.
    pub share: Rate,
}

/// What says a packet was lost (the window algorithms' loss signal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// A NACK naming one lost (or trimmed) packet: every call is a loss.
    Packet,
    /// A RoCE NACK naming the hole at this cumulative sequence: the first NACK of a hole is
    /// a loss, the next ones naming the same hole are not.
    Hole(u64),
    /// A retransmission timeout.
    Timeout,
}

/// Number of timer kinds a group can have (DCQCN uses three).
pub const MAX_TIMERS: usize = 3;

/// The timers of one group: a due time per kind (`Time::MAX` = not armed), and which ones
/// were armed since the simulator last looked.
#[derive(Clone, Copy, Debug)]
pub struct CcTimers {
    /// When each timer kind fires.
    pub due: [Time; MAX_TIMERS],
    /// Bit k set: timer k was (re-)armed and needs an event.
    pub dirty: u8,
}

impl Default for CcTimers {
    fn default() -> Self {
        CcTimers { due: [Time::MAX; MAX_TIMERS], dirty: 0 }
    }
}

impl CcTimers {
    /// Arms timer `kind` at `at` (replacing any earlier arming).
    #[inline]
    pub fn arm(&mut self, kind: usize, at: Time) {
        self.due[kind] = at;
        self.dirty |= 1 << kind;
    }
    /// Cancels every timer.
    pub fn cancel_all(&mut self) {
        self.due = [Time::MAX; MAX_TIMERS];
        self.dirty = 0;
    }
    /// Takes the dirty mask.
    #[inline]
    pub fn take_dirty(&mut self) -> u8 {
        std::mem::take(&mut self.dirty)
    }
}

/// The per-group state.
#[derive(Clone, Debug, Default)]
pub enum CcState {
    /// Line rate, nothing to keep.
    #[default]
    None,
    /// DCQCN reaction point.
    Dcqcn(DcqcnState),
    /// HPCC sender.
    Hpcc(Box<HpccState>),
    /// TIMELY sender.
    Timely(TimelyState),
    /// DCTCP sender.
    Dctcp(DctcpState),
    /// Blitz sender (DCQCN plus the receiver's share).
    Blitz(BlitzState),
    /// InfiniBand CC source.
    Ib(IbState),
    /// Swift sender.
    Swift(Box<SwiftState>),
    /// NSCC sender.
    Nscc(Box<NsccState>),
}

/// Constants of a group fixed at creation: the path's base RTT and BDP (HPCC's T and W).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathInfo {
    /// Base RTT (HPCC's T; `m_baseRtt`).
    pub base_rtt: Time,
    /// Bandwidth-delay product in bytes (HPCC's W; `m_win`).
    pub bdp: u64,
}

/// A congestion-control state shared by the QPs of one group.
///
/// Laid out by hand in cache lines (`repr(C)`, aligned to a line), as `rnic::Qp` is: with
/// one group per QP a run holds as many groups as QPs (147,152 in a Virtuoso cut), and a
/// packet's ACK should touch as few of a group's lines as it can.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct CcGroup {
    // Lines 0-1: what an ACK, a CNP and a rate change read.
    /// Algorithm state.
    pub state: CcState,
    /// The rate the group may send at (the reference's `m_rate` of a per-QP group).
    pub rate: Rate,
    /// QPs currently in the group (changes only when QPs open or finish).
    pub members: Vec<QpId>,
    // Line 2: the timers and what a timer's handler checks first.
    /// Its timers.
    pub timers: CcTimers,
    /// Line rate.
    pub max_rate: Rate,
    /// Base RTT and BDP.
    pub path: PathInfo,
    /// The sending node whose QPs it serves (its timers run there).
    pub owner: u32,
    /// Still in use (false once its last QP completed; its timers are then dead).
    pub alive: bool,
    /// Several QPs may share it (sequence numbers are then group-wide sums).
    pub shared: bool,
    /// The rate is divided among the members.
    pub split: bool,
    // Line 3: shared groups, lingering, and the tenant defense.
    /// Bytes of members that left (keeps group-wide sequence sums monotonic).
    pub retired_bytes: u64,
    /// Lingering without members until then (`Time::MAX`: not lingering).
    pub linger_until: Time,
    /// Its key in the simulator's map of shared groups (`None`: one QP's own).
    pub key: Option<(u32, u32)>,
    /// HPCC under the tenant defense: the last INT hop records per destination.
    pub paths: Vec<(crate::ids::NodeId, [crate::fabric::int::IntHop; crate::fabric::int::MAX_HOPS])>,
    /// Under the tenant defense: the one pacing clock of the state's members (`pacer`,
    /// `pacer_mut`). Boxed, because most groups never have one.
    pacer: Option<Box<crate::tenancy::TenantPacer>>,
}

impl CcGroup {
    /// The tenant state's pacing clock (a fresh one if it has none yet).
    pub fn pacer(&self) -> crate::tenancy::TenantPacer {
        self.pacer.as_deref().copied().unwrap_or_default()
    }

    /// The tenant state's pacing clock, made on first use.
    pub fn pacer_mut(&mut self) -> &mut crate::tenancy::TenantPacer {
        self.pacer.get_or_insert_with(Default::default)
    }

    /// A fresh group at line rate (every algorithm starts at line rate: `RdmaHw::AddQueuePair`).
    pub fn new(cfg: &CcConfig, line: Rate, path: PathInfo, gran: Granularity, key: Option<(u32, u32)>) -> CcGroup {
        let state = match cfg {
            CcConfig::None => CcState::None,
            CcConfig::Dcqcn(_) => CcState::Dcqcn(DcqcnState::new(line)),
            CcConfig::Hpcc(_) => CcState::Hpcc(Box::new(HpccState::new(line))),
            CcConfig::Timely(_) => CcState::Timely(TimelyState::new(line)),
            CcConfig::Dctcp(_) => CcState::Dctcp(DctcpState::new()),
            CcConfig::Blitz(p) => CcState::Blitz(BlitzState::new(p, line)),
            CcConfig::Ib(p) => CcState::Ib(IbState::new(p)),
            CcConfig::Swift(p) => CcState::Swift(Box::new(SwiftState::new(p, path.bdp, path.base_rtt))),
            CcConfig::Nscc(p) => CcState::Nscc(Box::new(NsccState::new(p, line, path.base_rtt))),
        };
        let rate = match (&state, cfg) {
            (CcState::Blitz(s), _) => s.rate(),
            (CcState::Ib(s), CcConfig::Ib(p)) => p.rate_at(s.ccti, line),
            _ => line,
        };
        CcGroup {
            rate,
            max_rate: line,
            path,
            state,
            timers: CcTimers::default(),
            members: Vec::new(),
            shared: gran.shared(),
            split: gran.splits(),
            retired_bytes: 0,
            alive: true,
            key,
            owner: u32::MAX,
            linger_until: Time::MAX,
            paths: Vec::new(),
            pacer: None,
        }
    }

    /// This fresh group in a recycled slot, keeping the old member list's capacity.
    pub fn reusing(mut self, mut members: Vec<QpId>) -> CcGroup {
        members.clear();
        self.members = members;
        self
    }

    /// Reacts to an ACK/NACK; `self.rate` holds the result.
    #[inline]
    pub fn on_ack(&mut self, cfg: &CcConfig, ack: &AckEvent<'_>) {
        let (line, path) = (self.max_rate, self.path);
        match (cfg, &mut self.state) {
            (CcConfig::Dcqcn(p), CcState::Dcqcn(s)) => s.on_ack(p, &mut self.timers, &mut self.rate, ack),
            (CcConfig::Hpcc(p), CcState::Hpcc(s)) => {
                if let Some(r) = s.on_ack(p, ack, line, path) {
                    self.rate = r;
                }
            }
            (CcConfig::Timely(p), CcState::Timely(s)) => s.on_ack(p, &mut self.rate, line, ack),
            (CcConfig::Dctcp(p), CcState::Dctcp(s)) => s.on_ack(p, &mut self.rate, line, ack),
            (CcConfig::Blitz(p), CcState::Blitz(s)) => self.rate = s.on_ack(p, &mut self.timers, line, ack),
            (CcConfig::Ib(p), CcState::Ib(s)) => self.rate = s.on_ack(p, &mut self.timers, line, ack),
            (CcConfig::Swift(p), CcState::Swift(s)) => {
                s.on_ack(p, ack);
                self.rate = s.rate(line, ack.mtu);
            }
            (CcConfig::Nscc(p), CcState::Nscc(s)) => s.on_ack(p, ack),
            _ => {}
        }
    }

    /// A loss of `bytes` of a member, for the window algorithms; `in_flight`: the group's
    /// bytes sent and not acknowledged.
    pub fn on_loss(&mut self, cfg: &CcConfig, bytes: u64, kind: LossKind, now: Time, in_flight: u64, mtu: u32) {
        match (cfg, &mut self.state) {
            (CcConfig::Swift(p), CcState::Swift(s)) => {
                s.on_loss(p, kind, now, mtu);
                self.rate = s.rate(self.max_rate, mtu);
            }
            (CcConfig::Nscc(p), CcState::Nscc(s)) => s.on_loss(p, bytes, kind, now, in_flight, mtu),
            _ => {}
        }
    }

    /// The window of a window algorithm in bytes of payload (0: none), so that a member may
    /// send a packet of `mtu` while its bytes in flight plus the packet fit in the window
    /// (`rnic::Qp::window_bound` stops a QP once the bytes in flight reach it). Swift below
    /// one packet paces instead and has none.
    #[inline]
    pub fn window(&self, mtu: u32) -> u64 {
        let cwnd = match &self.state {
            CcState::Swift(s) if s.cwnd >= mtu as f64 => s.cwnd,
            CcState::Nscc(s) => s.cwnd,
            _ => return 0,
        };
        let n = if self.split { self.members.len().max(1) as f64 } else { 1.0 };
        ((cwnd / n) as u64).saturating_sub(mtu as u64).saturating_add(1).max(1)
    }

    /// Timer `kind` fired at `now` (its due time matched); `self.rate` holds the result.
    pub fn on_timer(&mut self, cfg: &CcConfig, kind: usize, now: Time) {
        let line = self.max_rate;
        match (cfg, &mut self.state) {
            (CcConfig::Dcqcn(p), CcState::Dcqcn(s)) => s.on_timer(p, &mut self.timers, &mut self.rate, line, kind, now),
            (CcConfig::Blitz(p), CcState::Blitz(s)) => self.rate = s.on_timer(p, &mut self.timers, line, kind, now),
            (CcConfig::Ib(p), CcState::Ib(s)) => self.rate = s.on_timer(p, &mut self.timers, line, now),
            _ => {}
        }
    }

    /// The InfiniBand CC index, when the group runs it under `cfg`.
    pub fn cct_index(&self, cfg: &CcConfig) -> Option<u16> {
        match (&self.state, cfg) {
            (CcState::Ib(s), _) => Some(s.ccti),
            (CcState::Blitz(s), CcConfig::Blitz(p)) if p.fallback == DasrFallback::Ib => Some(s.ib.ccti),
            _ => None,
        }
    }

    /// The rate each member QP gets.
    #[inline]
    pub fn member_rate(&self) -> Rate {
        let n = self.members.len() as u64;
        if self.split && n > 1 {
            Rate(self.rate.0 / n)
        } else {
            self.rate
        }
    }
}

/// `r * c` truncated to whole bit/s, as ns-3's `DataRate * double` (`src/network/utils/data-rate.cc`).
#[inline]
pub fn scale(r: Rate, c: f64) -> Rate {
    Rate((r.0 as f64 * c) as u64)
}

/// `r / c` truncated to whole bit/s, as ns-3's `DataRate / double` (`src/network/utils/data-rate.cc`). A zero
/// or tiny `c` saturates (the caller clamps to the line rate).
#[inline]
pub fn div(r: Rate, c: f64) -> Rate {
    Rate((r.0 as f64 / c) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(g: Granularity, members: usize) -> CcGroup {
        let cfg = CcConfig::from_name("dcqcn").unwrap();
        let mut grp = CcGroup::new(&cfg, Rate::gbps(100), PathInfo::default(), g, None);
        grp.members = (0..members).map(QpId::new).collect();
        grp.rate = Rate::gbps(30);
        grp
    }

    #[test]
    fn a_group_is_four_lines_and_an_ack_reads_the_first_two() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!((size_of::<CcGroup>(), align_of::<CcGroup>()), (256, 64), "a field outgrew the group's four lines");
        let end = |o: usize, n: usize| (o + n - 1) / 64;
        assert!(end(offset_of!(CcGroup, state), size_of::<CcState>()) <= 1);
        assert!(end(offset_of!(CcGroup, members), size_of::<Vec<QpId>>()) <= 1);
        assert_eq!(offset_of!(CcGroup, rate) / 64, 1);
    }

    #[test]
    fn member_rate_splits_or_not_by_granularity() {
        assert_eq!(group(Granularity::PerQp, 1).member_rate(), Rate::gbps(30));
        assert_eq!(group(Granularity::PerDestination, 3).member_rate(), Rate::gbps(10));
        assert_eq!(group(Granularity::PerPair, 2).member_rate(), Rate::gbps(15));
        // The CC-attack paper: three QPs each at the destination's 30G, 90G in all.
        assert_eq!(group(Granularity::PerDestinationUnsplit, 3).member_rate(), Rate::gbps(30));
    }

    #[test]
    fn names_round_trip_and_header_sizes() {
        for &n in CC_NAMES {
            assert_eq!(CcConfig::from_name(n).unwrap().name(), n);
        }
        assert!(CcConfig::from_name("pint").is_err());
        let sizes: Vec<u32> = ["none", "dcqcn", "hpcc", "timely", "dctcp"]
            .iter()
            .map(|n| CcConfig::from_name(n).unwrap().int_bytes())
            .collect();
        assert_eq!(sizes, [0, 0, 42, 8, 0]);
        assert!(CcConfig::from_name("hpcc").unwrap().needs_int());
        assert!(!CcConfig::from_name("timely").unwrap().needs_int());
    }

    #[test]
    fn truncating_rate_arithmetic() {
        assert_eq!(scale(Rate(999), 0.5), Rate(499));
        assert_eq!(div(Rate(1000), 3.0), Rate(333));
        assert_eq!(div(Rate(1000), 0.0), Rate(u64::MAX));
    }
}
