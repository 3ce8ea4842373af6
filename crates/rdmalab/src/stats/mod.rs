//! Results of a run: per-flow records and counters.

pub mod counters;
pub mod ideal;
pub mod max_rtt;
pub mod slowdown;
pub mod spill;
pub mod table;

pub use counters::{Counters, NamedCounts};

use crate::ids::{NodeId, QpId};
use crate::units::{Rate, Time};

/// One completed flow, with everything the FCT file and the slowdown need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    /// Index of the flow in the scenario's flow list.
    pub flow: u32,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Source IPv4 address.
    pub sip: u32,
    /// Destination IPv4 address.
    pub dip: u32,
    /// Source UDP port.
    pub sport: u16,
    /// Destination UDP port.
    pub dport: u16,
    /// Payload bytes.
    pub size: u64,
    /// Start time.
    pub start: Time,
    /// Completion time minus start: until the sender holds the ACK of the last byte.
    pub fct: Time,
    /// The flow's FCT alone on an idle network, by the reference's formula.
    pub ideal: Time,
    /// Tenant index.
    pub tenant: u16,
    /// The sender's counts over the flow's life: data packets sent again, NACKs received.
    pub retx_packets: u32,
    /// NACKs the sender received.
    pub nacks: u32,
    /// Retransmission timeouts at the sender that resent something.
    pub timeouts: u32,
    /// The receiver's counts (`RxFlowCounts`), joined in when the results are assembled.
    pub rx: RxFlowCounts,
}

/// What the receiving host counted for one flow: its own state, kept apart from the
/// sender's record and joined to it by flow when the results are assembled (in a parallel
/// run the two hosts may live in different partitions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxFlowCounts {
    /// Data packets that arrived beyond a gap.
    pub ooo_packets: u32,
    /// CNPs sent for CE-marked packets.
    pub cnps_ecn: u32,
    /// CNPs sent for out-of-order packets alone (`fabric.cnp_on_ooo`).
    pub cnps_ooo: u32,
    /// Trimmed headers of the flow's packets that reached the receiver (UET with
    /// `[fabric.trimming]`): each one a packet some switch cut to its header.
    pub trimmed_packets: u32,
    /// When the receiver held the flow's last byte in order (`SimConfig::fct_at_receiver`
    /// only; zero otherwise).
    pub delivered: Time,
}

impl RxFlowCounts {
    /// Adds another partition's counts of the same flow.
    pub fn add(&mut self, o: &RxFlowCounts) {
        self.ooo_packets += o.ooo_packets;
        self.cnps_ecn += o.cnps_ecn;
        self.cnps_ooo += o.cnps_ooo;
        self.trimmed_packets += o.trimmed_packets;
        self.delivered = self.delivered.max(o.delivered);
    }
}

/// Joins the receivers' counts (indexed by flow) into the flow records.
pub fn attach_rx_counts(records: &mut [FlowRecord], rx: &[RxFlowCounts]) {
    for r in records {
        r.rx = rx.get(r.flow as usize).copied().unwrap_or_default();
    }
}

/// One PFC frame received by a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcEvent {
    /// When it was received (written in whole ns, truncated).
    pub time: Time,
    /// The receiving node.
    pub node: NodeId,
    /// Whether that node is a switch (node_type 1) or a host (0).
    pub node_is_switch: bool,
    /// The receiving port's ns-3 interface index (1-based).
    pub ifindex: u16,
    /// PAUSE (kind 1) or RESUME (kind 0).
    pub pause: bool,
}

/// One sample of a QP's sending state (`SimConfig::rate_sample_interval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// When the sample was taken.
    pub time: Time,
    /// The QP.
    pub qp: QpId,
    /// The flow it carries (one QP per flow).
    pub flow: u32,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// The rate congestion control allows it at `time`.
    pub rate: Rate,
    /// Payload bytes newly acknowledged since the previous sample, over the interval: what
    /// the flow actually got through, which is what convergence plots show.
    pub throughput: Rate,
    /// InfiniBand CC: its group's congestion control table index (0 under other schemes).
    pub ccti: u16,
    /// The QP's window in bytes at `time` (a window algorithm's, Swift's or NSCC's, or
    /// `fabric.window`'s; 0: none).
    pub window: u64,
}

impl FlowRecord {
    /// FCT / ideal, clamped below at 1 as the reference's analysis script does.
    pub fn slowdown(&self) -> f64 {
        (self.fct.0 as f64 / self.ideal.0.max(1) as f64).max(1.0)
    }
}
