//! The packet as the simulator carries it: a small `Copy` struct, never bytes.

use crate::ids::{NodeId, PortId, QpId, QpKey};

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// RoCEv2 data (one MTU segment of a message).
    Data,
    /// Cumulative acknowledgement (may carry the CNP flag).
    Ack,
    /// Negative acknowledgement: "resend from `seq`" (go-back-N).
    Nack,
    /// PFC PAUSE for priority `pg`.
    Pause,
    /// PFC RESUME for priority `pg`.
    Resume,
    /// InfiniBand flow-control packet for VL `pg`, its FCCL in `seq` (`fabric::ib`).
    FlowControl,
    /// A switch-side balancer's control packet from one ToR to another (ConWeave's
    /// RTT_REPLY, CLEAR and NOTIFY, `fabric::lb::conweave`): addressed to the host whose
    /// ToR consumes it; it never reaches a host.
    LbControl,
    /// An Ultra Ethernet receiver's credit for the QP it names (`cc::rccc`): the cumulative
    /// packets granted in `seq`. Queued as ACKs are (it is one for `is_ack`).
    Credit,
}

/// A packet in flight. 64 bytes, copied by value along its path.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Byte offset of the first payload byte (data) or the cumulative next byte (ACK/NACK).
    pub seq: u64,
    /// The sending QP (for ACKs: the QP being acknowledged).
    pub qp: QpId,
    /// Source host.
    pub src: NodeId,
    /// Destination host.
    pub dst: NodeId,
    /// Source IPv4 address (ECMP input).
    pub sip: u32,
    /// Destination IPv4 address (ECMP input).
    pub dip: u32,
    /// Ingress port at the current switch, for buffer accounting.
    pub ingress: PortId,
    /// The ingress port's position on its switch (indexes the MMU; saves a lookup).
    pub ingress_local: u16,
    /// Slot of this packet's INT header in the `IntSlab`, or `u32::MAX`.
    pub int_slot: u32,
    /// On the last data packet of an application's WR: the slot of the WR's in-payload
    /// header in `app::Headers` (packet content stored out of line, like INT), else
    /// `HeaderSlot::NONE`. On an IRN NACK: the offset of the packet that triggered it past
    /// the cumulative ACK (`sim::mech::irn::sack_field`), which keeps the packet 64 bytes.
    pub app_hdr: crate::ids::HeaderSlot,
    /// Payload bytes of a data packet. An ACK/NACK carries none, so under Blitz the field
    /// holds the receiver's rate share instead (`ack_share_kbps`) rather than a field of its
    /// own, which every copy of every packet would pay for.
    pub payload: u32,
    /// Bytes on the wire (payload plus headers).
    pub wire: u32,
    /// Source UDP port (ECMP input).
    pub sport: u16,
    /// Destination UDP port (ECMP input).
    pub dport: u16,
    /// Kind.
    pub kind: PacketKind,
    /// Priority class 0..8 (for PFC frames: the paused class).
    pub pg: u8,
    /// Congestion Experienced mark set by a switch.
    pub ce: bool,
    /// On an ACK/NACK: the acknowledged data packet was CE-marked (DCQCN's CNP).
    pub cnp: bool,
    /// On data: last packet of a message (asks the receiver for an ACK whatever the
    /// ACK interval, like RoCE's AckReq bit).
    pub last_of_msg: bool,
    /// On data: IOFD's deflection count and flags (`fabric::deflection`); 0 without IOFD.
    pub deflections: u8,
    /// On data with an INT header: hop records stamped so far. The header's own count is
    /// set from it at the receiver, so that a switch writes its record without first
    /// reading the header (a cache miss on every hop; the write alone does not stall).
    pub int_hops: u16,
    /// The tenant the QP's traffic belongs to (a VNI-like tag, as an overlay would carry).
    /// The receiver's meter reads it from its own half of the QP; a parallel run makes that
    /// half from the first packet, whose sender may live in another partition.
    pub tenant: u16,
}

/// No INT header.
pub const NO_INT: u32 = u32::MAX;

impl Packet {
    /// The fabric-wide name of the packet's QP: data names its sender, an ACK or NACK the
    /// sender it goes back to.
    #[inline]
    pub fn qp_key(&self) -> QpKey {
        let sender = if self.kind == PacketKind::Data { self.src } else { self.dst };
        QpKey(sender, self.qp)
    }

    /// A PFC frame of `kind` for class `pg`. Its addressing fields are unused.
    pub fn pfc(kind: PacketKind, pg: u8, wire: u32) -> Packet {
        Packet {
            seq: 0,
            qp: QpId::NONE,
            src: NodeId::NONE,
            dst: NodeId::NONE,
            sip: 0,
            dip: 0,
            ingress: PortId::NONE,
            ingress_local: 0,
            int_slot: NO_INT,
            app_hdr: crate::ids::HeaderSlot::NONE,
            payload: 0,
            wire,
            sport: 0,
            dport: 0,
            kind,
            pg,
            ce: false,
            cnp: false,
            last_of_msg: false,
            deflections: 0,
            int_hops: 0,
            tenant: 0,
        }
    }

    /// True for link-level control frames: PFC PAUSE and RESUME, IB flow control. They
    /// end at the link's far end (`Simulation::on_pfc`).
    #[inline]
    pub fn is_pfc(&self) -> bool {
        matches!(self.kind, PacketKind::Pause | PacketKind::Resume | PacketKind::FlowControl)
    }

    /// True for ACK, NACK and an RCCC credit (the replies a receiver sends its sender).
    #[inline]
    pub fn is_ack(&self) -> bool {
        matches!(self.kind, PacketKind::Ack | PacketKind::Nack | PacketKind::Credit)
    }

    /// On an ACK/NACK: the receiver's rate share for its QP in kb/s (Blitz's DASR,
    /// `cc::dasr`; kb/s fits 32 bits up to 4 Tb/s); 0 = none. Kept in `payload`, which an
    /// ACK does not use.
    #[inline]
    pub fn ack_share_kbps(&self) -> u32 {
        if self.is_ack() {
            self.payload
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn packet_stays_small() {
        // One cache line at most; Blitz's share rides in an ACK's payload field and its
        // deflection count in a padding byte, so it adds nothing.
        assert!(std::mem::size_of::<super::Packet>() <= 64, "{}", std::mem::size_of::<super::Packet>());
    }
}
