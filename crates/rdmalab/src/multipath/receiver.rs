//! The receiver half of a multipath connection: every QP stays open and every chunk that
//! arrives is placed at its offset, by the (data id, offset) header it carries, until all
//! bytes of its message are there (the data-partition paper, Alg. 2).

use std::collections::BTreeMap;

use crate::app::RecvCompletion;
use crate::ids::QpId;
use crate::units::Time;

/// A chunk placed at the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Data id (message) from the header.
    pub data_id: u64,
    /// Offset from the header.
    pub offset: u64,
    /// Data bytes (the WR's bytes less the header).
    pub bytes: u64,
    /// The QP it came on.
    pub qp: QpId,
    /// When its last byte was placed.
    pub time: Time,
}

/// A message being put back together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reassembly {
    /// Size from the headers.
    pub total: u64,
    /// Data bytes placed so far.
    pub placed: u64,
    /// When the last byte was placed.
    pub done: Option<Time>,
}

/// The receiving application of one connection, on the destination host.
#[derive(Clone, Debug, Default)]
pub struct MpReceiver {
    /// Header bytes at the start of each chunk (agreed when the connection was set up).
    header: u64,
    /// Messages by data id.
    pub messages: BTreeMap<u64, Reassembly>,
    /// Every chunk placed, in arrival order.
    pub placements: Vec<Placement>,
    /// Chunks whose header contradicted what was placed before (a bug if ever non-zero).
    pub anomalies: u64,
}

impl MpReceiver {
    /// A receiver expecting `header` bytes of header per chunk.
    pub fn new(header: u64) -> MpReceiver {
        MpReceiver { header, ..Default::default() }
    }

    /// A chunk's last byte was placed: record it and complete its message when whole.
    pub fn on_receive(&mut self, c: RecvCompletion) {
        let bytes = c.bytes.saturating_sub(self.header);
        let h = c.header;
        let m = self.messages.entry(h.data_id).or_insert(Reassembly { total: h.total, placed: 0, done: None });
        if m.total != h.total || h.offset + bytes > h.total || m.placed + bytes > m.total {
            self.anomalies += 1;
        }
        m.placed += bytes;
        if m.placed == m.total && m.done.is_none() {
            m.done = Some(c.time);
        }
        self.placements.push(Placement { data_id: h.data_id, offset: h.offset, bytes, qp: c.qp, time: c.time });
    }
}
