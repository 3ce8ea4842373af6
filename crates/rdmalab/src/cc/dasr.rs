//! Blitz's direct apportioning of sending rates (DASR, the Blitz poster's §2 ¶2), with DCQCN as the
//! fall-back for in-network congestion (§2 ¶4). See `docs/blitz.md`.
//!
//! Two halves that never touch each other's state:
//!
//! * **Receiver** ([`DasrReceivers`]): each receiving host keeps the set A of incoming QPs
//!   (or sending hosts) with data in progress; every ACK/NACK it sends carries the share
//!   u·C/|A| of its NIC rate C. A QP joins A with its first new data packet and leaves when
//!   its `last_of_msg` packet is delivered in order (†: our rule, the poster gives none).
//! * **Sender** ([`BlitzState`]): DCQCN runs unchanged on the CNP flags and keeps its own
//!   current rate Rc; the group sends at min(share, Rc). The share is adopted as soon as an
//!   ACK brings it, so arrivals and departures reach every sender within one RTT.
//!
//! The poster piggybacks the count n; we carry the share itself, which is the same thing
//! when every NIC runs at one rate and spares the sender knowing the receiver's rate.

use super::dcqcn::{DcqcnParams, DcqcnState};
use super::ib::{IbParams, IbState};
use super::{AckEvent, CcTimers};
use crate::ids::{NicId, NodeId, QpId};
use crate::units::{Rate, Time};

/// What the receiver counts in n.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DasrCount {
    /// Incoming QPs: k QPs of one host get k/n of the receiver (as gameable as per-QP
    /// DCQCN, the CC-attack paper).
    #[default]
    Qp,
    /// Sending hosts: each host with any QP in progress counts once (needs the
    /// `per_pair` granularity, whose group shares the host's rate among its QPs).
    Host,
}

impl DasrCount {
    /// From the scenario's spelling.
    pub fn from_name(s: &str) -> Result<DasrCount, String> {
        match s {
            "qp" => Ok(DasrCount::Qp),
            "host" => Ok(DasrCount::Host),
            other => Err(format!("unknown dasr_count `{other}` (known: qp, host)")),
        }
    }
}

/// Checks that the enforcement granularity matches what DASR counts: per-QP shares need
/// per-QP groups, per-host shares the per-pair group that splits a host's rate among its
/// QPs (†: shared groups would apply one QP's share to several QPs).
pub fn check_granularity(count: DasrCount, gran: super::Granularity) -> Result<(), String> {
    use super::Granularity::{PerPair, PerQp};
    match (count, gran) {
        (DasrCount::Qp, PerQp) | (DasrCount::Host, PerPair) => Ok(()),
        (DasrCount::Qp, g) => Err(format!(
            "`dasr_count = \"qp\"` gives each QP its own share and needs `granularity = \"per_qp\"` (got {})",
            granularity_name(g)
        )),
        (DasrCount::Host, g) => Err(format!(
            "`dasr_count = \"host\"` gives each sending host one share and needs `granularity = \"per_pair\"` \
             (got {})",
            granularity_name(g)
        )),
    }
}

fn granularity_name(g: super::Granularity) -> &'static str {
    match g {
        super::Granularity::PerQp => "per_qp",
        super::Granularity::PerDestination => "per_destination",
        super::Granularity::PerPair => "per_pair",
        super::Granularity::PerDestinationUnsplit => "per_destination_unsplit",
        super::Granularity::PerSl => "per_sl",
    }
}

/// DASR parameters (`[fabric.cc_params]` keys in brackets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DasrParams {
    /// Fraction u of the receiver's NIC rate apportioned [dasr_utilization], 1.0.
    pub utilization: f64,
    /// What n counts [dasr_count], QPs.
    pub count: DasrCount,
    /// Keep ECN marking at host-facing switch ports [dasr_edge_ecn], off (†): receiver
    /// congestion is DASR's alone, so the one-RTT overshoot of a new QP causes no cuts.
    pub edge_ecn: bool,
}

impl Default for DasrParams {
    fn default() -> Self {
        DasrParams { utilization: 1.0, count: DasrCount::Qp, edge_ecn: false }
    }
}

/// What throttles in-network congestion under DASR's share [dasr_fallback].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DasrFallback {
    /// DCQCN on the CNP flags (the poster's RoCE design).
    #[default]
    Dcqcn,
    /// InfiniBand congestion control on the BECNs (the poster's testbed, §3).
    Ib,
}

impl DasrFallback {
    /// From the scenario's spelling.
    pub fn from_name(s: &str) -> Result<DasrFallback, String> {
        match s {
            "dcqcn" => Ok(DasrFallback::Dcqcn),
            "ib" => Ok(DasrFallback::Ib),
            other => Err(format!("unknown dasr_fallback `{other}` (known: dcqcn, ib)")),
        }
    }
}

/// Blitz: DASR's share on top of DCQCN or InfiniBand CC.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlitzParams {
    /// The DCQCN fall-back (its keys and defaults unchanged).
    pub dcqcn: DcqcnParams,
    /// DASR.
    pub dasr: DasrParams,
    /// Which fall-back runs.
    pub fallback: DasrFallback,
    /// The InfiniBand fall-back's settings (used when `fallback` is `Ib`).
    pub ib: IbParams,
}

/// A Blitz sender: the fall-back's state and rate Rc, and the last share heard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlitzState {
    /// DCQCN reaction point.
    pub dcqcn: DcqcnState,
    /// InfiniBand CC source (the `ib` fall-back).
    pub ib: IbState,
    /// DCQCN's current rate Rc, kept apart from the share.
    pub rc: Rate,
    /// The last share an ACK carried (line rate until the first ACK).
    pub share: Rate,
}

impl BlitzState {
    /// A new sender: line rate until the first ACK brings a share.
    pub fn new(p: &BlitzParams, line: Rate) -> BlitzState {
        let ib = IbState::new(&p.ib);
        let rc = match p.fallback {
            DasrFallback::Dcqcn => line,
            DasrFallback::Ib => p.ib.rate_at(ib.ccti, line),
        };
        BlitzState { dcqcn: DcqcnState::new(line), ib, rc, share: line }
    }

    /// The rate the group may send at.
    #[inline]
    pub fn rate(&self) -> Rate {
        self.rc.min(self.share)
    }

    /// An ACK/NACK: adopt its share, then let DCQCN see its CNP flag. Before a CNP, Rc is
    /// brought down to the rate actually sent (†): DCQCN's cut then acts on that rate, not
    /// on a line-rate Rc that the share hides (which would take several cuts to matter).
    pub fn on_ack(&mut self, p: &BlitzParams, timers: &mut CcTimers, line: Rate, ack: &AckEvent<'_>) -> Rate {
        if ack.share.0 > 0 {
            self.share = ack.share;
        }
        if p.fallback == DasrFallback::Ib {
            self.rc = self.ib.on_ack(&p.ib, timers, line, ack);
            return self.rate();
        }
        let p = &p.dcqcn;
        if ack.cnp {
            self.rc = self.rc.min(self.share);
        }
        self.dcqcn.on_ack(p, timers, &mut self.rc, ack);
        self.rate()
    }

    /// A timer of the fall-back fired.
    pub fn on_timer(&mut self, p: &BlitzParams, timers: &mut CcTimers, line: Rate, kind: usize, now: Time) -> Rate {
        match p.fallback {
            DasrFallback::Dcqcn => self.dcqcn.on_timer(&p.dcqcn, timers, &mut self.rc, line, kind, now),
            DasrFallback::Ib => self.rc = self.ib.on_timer(&p.ib, timers, line, now),
        }
        self.rate()
    }
}

/// Receiver-side bookkeeping of every host: who is in its set A. Indexed by the
/// receiving host's NIC; each entry is that host's own state.
#[derive(Clone, Debug)]
pub struct DasrReceivers {
    params: DasrParams,
    hosts: Vec<ReceiverSet>,
    /// Per QP (receiver side): currently in its receiver's A.
    member: Vec<bool>,
}

/// One receiving host's set A.
#[derive(Clone, Debug, Default)]
struct ReceiverSet {
    /// NIC rate C.
    rate: Rate,
    /// Active incoming QPs.
    qps: u32,
    /// Sending hosts with at least one active QP, and how many each has (counted per
    /// host only with `DasrCount::Host`; small, searched only when a QP joins or leaves).
    senders: Vec<(NodeId, u32)>,
}

impl ReceiverSet {
    fn n(&self, count: DasrCount) -> u32 {
        match count {
            DasrCount::Qp => self.qps,
            DasrCount::Host => self.senders.len() as u32,
        }
    }

    fn join(&mut self, from: NodeId) {
        self.qps += 1;
        match self.senders.iter_mut().find(|(h, _)| *h == from) {
            Some((_, k)) => *k += 1,
            None => self.senders.push((from, 1)),
        }
    }

    fn leave(&mut self, from: NodeId) {
        self.qps -= 1;
        if let Some(i) = self.senders.iter().position(|(h, _)| *h == from) {
            self.senders[i].1 -= 1;
            if self.senders[i].1 == 0 {
                self.senders.swap_remove(i);
            }
        }
    }
}

/// What the receiver saw of one data packet.
#[derive(Clone, Copy, Debug)]
pub struct DataSeen {
    /// The receiving host's NIC index.
    pub nic: NicId,
    /// The QP it belongs to.
    pub qp: QpId,
    /// Its sending host.
    pub from: NodeId,
    /// It carries data beyond what was delivered (not a duplicate).
    pub new_data: bool,
    /// It was delivered in order and ends a message.
    pub ends_message: bool,
}

impl DasrReceivers {
    /// Empty sets for hosts whose NICs run at `nic_rates`.
    pub fn new(params: DasrParams, nic_rates: impl Iterator<Item = Rate>) -> DasrReceivers {
        let hosts = nic_rates.map(|rate| ReceiverSet { rate, ..ReceiverSet::default() }).collect();
        DasrReceivers { params, hosts, member: Vec::new() }
    }

    /// Updates A for a data packet and returns the share its ACK/NACK carries.
    pub fn on_data(&mut self, seen: DataSeen) -> Rate {
        let q = seen.qp.idx();
        if q >= self.member.len() {
            self.member.resize(q + 1, false); // once per QP, not per packet
        }
        let set = &mut self.hosts[seen.nic.idx()];
        if seen.new_data && !self.member[q] {
            self.member[q] = true;
            set.join(seen.from);
        }
        if seen.ends_message && self.member[q] {
            self.member[q] = false;
            set.leave(seen.from);
        }
        self.share(seen.nic)
    }

    /// The share u·C/n host `nic` gives now (n = 0 counts as 1: a late ACK of a QP that
    /// already left).
    pub fn share(&self, nic: NicId) -> Rate {
        let set = &self.hosts[nic.idx()];
        let n = set.n(self.params.count).max(1) as f64;
        Rate((set.rate.0 as f64 * self.params.utilization / n) as u64)
    }

    /// The size of host `nic`'s set A as the configured count sees it.
    pub fn active(&self, nic: NicId) -> u32 {
        self.hosts[nic.idx()].n(self.params.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Rate = Rate::gbps(100);

    fn seen(qp: usize, from: u32, new_data: bool, ends: bool) -> DataSeen {
        DataSeen { nic: NicId(0), qp: QpId::new(qp), from: NodeId(from), new_data, ends_message: ends }
    }

    #[test]
    fn share_is_capacity_over_active_qps() {
        let mut r = DasrReceivers::new(DasrParams::default(), [C].into_iter());
        assert_eq!(r.on_data(seen(0, 1, true, false)), C);
        assert_eq!(r.on_data(seen(1, 2, true, false)), Rate(C.0 / 2));
        assert_eq!(r.on_data(seen(2, 2, true, false)), Rate(C.0 / 3));
        // A duplicate of a QP that left never rejoins.
        assert_eq!(r.on_data(seen(0, 1, true, true)), Rate(C.0 / 2));
        assert_eq!(r.on_data(seen(0, 1, false, false)), Rate(C.0 / 2));
        assert_eq!(r.active(NicId(0)), 2);
    }

    #[test]
    fn host_count_merges_qps_of_one_sender() {
        let p = DasrParams { count: DasrCount::Host, utilization: 0.5, ..DasrParams::default() };
        let mut r = DasrReceivers::new(p, [C].into_iter());
        for q in 0..4 {
            r.on_data(seen(q, 1, true, false));
        }
        assert_eq!(r.on_data(seen(4, 2, true, false)), Rate(C.0 / 4), "u = 1/2 over two hosts");
        for q in 0..4 {
            r.on_data(seen(q, 1, true, true));
        }
        assert_eq!(r.active(NicId(0)), 1);
        assert_eq!(r.share(NicId(0)), Rate(C.0 / 2));
    }

    /// An ACK at 1 µs carrying DASR's `share` and, if `cnp`, a congestion notification.
    fn ack(share: Rate, cnp: bool) -> AckEvent<'static> {
        AckEvent {
            now: Time::from_us(1),
            seq: 0,
            snd_nxt: 0,
            cnp,
            nack: false,
            int: None,
            mtu: 1000,
            int_multi: 1,
            share,
        }
    }

    #[test]
    fn sender_takes_the_smaller_of_share_and_dcqcn() {
        let p = BlitzParams::default();
        let mut s = BlitzState::new(&p, C);
        let mut t = CcTimers::default();
        assert_eq!(s.on_ack(&p, &mut t, C, &ack(Rate::gbps(25), false)), Rate::gbps(25));
        assert_eq!(s.rc, C, "DCQCN untouched without a CNP");
        // A CNP: Rc comes down to the rate sent, DCQCN's timers start.
        assert_eq!(s.on_ack(&p, &mut t, C, &ack(Rate(0), true)), Rate::gbps(25), "no share field: keep");
        assert_eq!(s.rc, Rate::gbps(25));
        assert_ne!(t.dirty, 0);
        // The share rises (a sender left), but Rc now holds the rate.
        assert_eq!(s.on_ack(&p, &mut t, C, &ack(Rate::gbps(50), false)), Rate::gbps(25));
    }

    #[test]
    fn ib_fallback_takes_the_smaller_of_share_and_cct_rate() {
        let p = BlitzParams { fallback: DasrFallback::Ib, ..BlitzParams::default() };
        let mut s = BlitzState::new(&p, C);
        let mut t = CcTimers::default();
        assert_eq!(s.on_ack(&p, &mut t, C, &ack(Rate::gbps(80), false)), Rate::gbps(80));
        for _ in 0..8 {
            s.on_ack(&p, &mut t, C, &ack(Rate(0), true));
        }
        // Index 8 of the default table: half the line, below the share.
        assert_eq!((s.ib.ccti, s.rate()), (8, Rate(C.0 / 2)));
        assert_eq!(s.dcqcn, DcqcnState::new(C), "DCQCN never runs");
    }
}
