//! Blitz's hook into the event loop (the Blitz poster, `docs/blitz.md`): the DASR receiver, called
//! once per data packet from the receiver handler, and nothing else. The sender side is an
//! ordinary congestion-control variant (`cc::dasr::BlitzState`), the switch side (IOFD) a
//! fabric feature.

use crate::cc::dasr::{DasrReceivers, DataSeen};
use crate::fabric::Packet;
use crate::ids::{NicId, QpId};

/// Hook "receiver, per data packet": updates the receiving host's set of active senders for
/// this data packet (`rx`: the receiver's slot of its QP; `nic_of`: NIC index by node) and
/// returns the share (kb/s) its ACK/NACK carries; 0 without Blitz (`dasr` is `None`).
#[inline]
pub(in crate::sim) fn share_for_ack(
    dasr: Option<&mut DasrReceivers>,
    nic_of: &[NicId],
    pkt: &Packet,
    rx: QpId,
    new_data: bool,
    delivered: bool,
) -> u32 {
    let Some(dasr) = dasr else {
        return 0;
    };
    let seen = DataSeen {
        nic: nic_of[pkt.dst.idx()],
        qp: rx,
        from: pkt.src,
        new_data,
        ends_message: delivered && pkt.last_of_msg,
    };
    let share = dasr.on_data(seen);
    (share.0 / 1000).clamp(1, u32::MAX as u64) as u32
}
