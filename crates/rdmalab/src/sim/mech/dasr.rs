//! Blitz's hooks into the event loop (seed 004, `docs/blitz.md`): the DASR receiver, called
//! once per data packet from the receiver handler, and nothing else. The sender side is an
//! ordinary congestion-control variant (`cc::dasr::BlitzState`), the switch side (IOFD) a
//! fabric feature.

use crate::cc::dasr::DataSeen;
use crate::fabric::Packet;
use crate::ids::QpId;
use crate::sim::Simulation;

impl Simulation {
    /// DASR at the receiver: updates the receiving host's set of active senders for this
    /// data packet (`rx`: the receiver's slot of its QP) and returns the share (kb/s) its ACK/NACK carries; 0 without Blitz.
    #[inline]
    pub(in crate::sim) fn dasr_on_data(&mut self, pkt: &Packet, rx: QpId, new_data: bool, delivered: bool) -> u32 {
        let Some(dasr) = self.dasr.as_deref_mut() else {
            return 0;
        };
        let seen = DataSeen {
            nic: self.nic_of[pkt.dst.idx()],
            qp: rx,
            from: pkt.src,
            new_data,
            ends_message: delivered && pkt.last_of_msg,
        };
        let share = dasr.on_data(seen);
        (share.0 / 1000).clamp(1, u32::MAX as u64) as u32
    }
}
