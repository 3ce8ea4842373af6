//! The sender half of a multipath connection: cuts messages into chunks, gives each QP
//! its chunks (dynamic or static allocation) and refills a QP when one of its chunks
//! completes (the data-partition paper, Alg. 1).

use std::collections::VecDeque;

use super::{Allocation, MpConfig, RefillOn};
use crate::app::{AppHeader, AppId, SendCompletion, SendDone, Verbs, Wr};
use crate::ids::QpId;
use crate::units::Time;
use crate::workload::FlowSpec;

/// Token of a timer that starts message `local` (below: refill of QP slot `token`).
const START: u32 = 1 << 31;

/// A message as the sender tracks it.
#[derive(Clone, Debug)]
pub struct SenderMessage {
    /// Global message id (the data id of its headers).
    pub id: u32,
    /// Data bytes.
    pub size: u64,
    /// Posting time.
    pub start: Time,
    /// Chunks in total.
    pub chunks: u32,
    /// Dynamic: next chunk to hand out.
    next: u32,
    /// Static: per QP slot, (next chunk, end of its share).
    shares: Vec<(u32, u32)>,
    /// Chunks acknowledged.
    pub acked: u32,
    /// When the last chunk was acknowledged.
    pub done: Option<Time>,
}

/// One chunk handed to a QP.
#[derive(Clone, Copy, Debug)]
pub struct ChunkLog {
    /// Index of its message in the sender's list.
    pub msg: u32,
    /// Chunk number in the message.
    pub index: u32,
    /// QP slot (0-based) that carried it.
    pub slot: u32,
    /// Data offset in the message.
    pub offset: u64,
    /// Data bytes.
    pub size: u64,
    /// When it was posted.
    pub post: Time,
    /// Its last packet left the NIC (only tracked with `refill_on = sent`).
    pub sent: bool,
    /// When it was acknowledged.
    pub done: Option<Time>,
}

/// Where the chunks of `QpPolicy::Recreate` go: each on a QP of its own, opened like
/// `spec` with its slot's source port (the port of the slot's kept QP, so the chunk takes
/// the slot's path) and heard of by application `rx` at the receiver.
#[derive(Clone, Debug)]
pub struct FreshQps {
    /// The connection's source, destination, class and destination port.
    pub spec: FlowSpec,
    /// Source port per slot.
    pub sports: Vec<u16>,
    /// The receiver half of the connection.
    pub rx: AppId,
}

/// What a completion changed, for the simulator to record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendOutcome {
    /// This message (index in the sender's list) just completed.
    pub message_done: Option<u32>,
    /// Everything posted is done and the connection was asked to close.
    pub close: bool,
}

/// The sending application of one connection, on the source host.
#[derive(Clone, Debug, Default)]
pub struct MpSender {
    chunk_size: u64,
    small_as_one_chunk: bool,
    header: u64,
    outstanding: u32,
    allocation: Allocation,
    refill_on: RefillOn,
    post_delay: Time,
    /// `Some`: every chunk on a fresh QP (`QpPolicy::Recreate`).
    fresh: Option<FreshQps>,
    /// The connection's QPs, by slot.
    pub qps: Vec<QpId>,
    /// Chunks posted per slot and not yet freed (by ACK or by sending, per `refill_on`).
    busy: Vec<u32>,
    /// Per slot: its last fill stopped at a full send queue (`[rnic] max_send_wr`); its next
    /// acknowledgement fills it again.
    sq_full: Vec<bool>,
    /// Messages in post order.
    pub messages: Vec<SenderMessage>,
    /// Started messages that still have chunks to hand out, oldest first.
    active: VecDeque<u32>,
    /// Every chunk posted, in post order (index = the WR's cookie).
    pub chunks: Vec<ChunkLog>,
    /// Messages not yet completed.
    pending: u32,
    closing: bool,
}

impl MpSender {
    /// A sender over `qps` (already open) with `cfg`'s allocation.
    pub fn new(cfg: &MpConfig, qps: Vec<QpId>) -> MpSender {
        let n = qps.len();
        MpSender {
            chunk_size: cfg.chunk_size,
            small_as_one_chunk: cfg.small_as_one_chunk,
            header: cfg.chunk_header,
            outstanding: cfg.outstanding,
            allocation: cfg.allocation,
            refill_on: cfg.refill_on,
            post_delay: cfg.post_delay,
            qps,
            busy: vec![0; n],
            sq_full: vec![false; n],
            ..Default::default()
        }
    }

    /// Every chunk goes on a fresh QP opened as `fresh` says, closed once it is acknowledged.
    pub fn with_fresh_qps(mut self, fresh: FreshQps) -> MpSender {
        self.fresh = Some(fresh);
        self
    }

    /// Registers a message of `size` bytes starting at `start`; returns its local index and
    /// the timer token that starts it.
    pub fn add_message(&mut self, id: u32, size: u64, start: Time) -> (u32, u32) {
        let chunks = size.div_ceil(self.chunk_size) as u32;
        let q = self.qps.len() as u64;
        let shares = match self.allocation {
            Allocation::Dynamic => Vec::new(),
            // Slot s gets chunks [s n / q, (s+1) n / q): contiguous, sizes differing by one.
            Allocation::Static => {
                (0..q).map(|s| ((s * chunks as u64 / q) as u32, ((s + 1) * chunks as u64 / q) as u32)).collect()
            }
        };
        let local = self.messages.len() as u32;
        self.messages.push(SenderMessage { id, size, start, chunks, next: 0, shares, acked: 0, done: None });
        self.pending += 1;
        (local, START | local)
    }

    /// No more messages: close the QPs once everything posted is done. Returns true when
    /// that is already the case.
    pub fn disconnect(&mut self) -> bool {
        self.closing = true;
        self.pending == 0
    }

    /// A timer set by this sender fired.
    pub fn on_timer(&mut self, token: u32, v: &mut impl Verbs) {
        if token & START != 0 {
            self.active.push_back(token & !START);
            for slot in 0..self.qps.len() {
                self.fill(slot, v);
            }
        } else {
            self.fill(token as usize, v);
        }
    }

    /// A WR of this sender completed (sent or acknowledged).
    pub fn on_completion(&mut self, c: SendCompletion, v: &mut impl Verbs) -> SendOutcome {
        let chunk = &mut self.chunks[c.cookie as usize];
        let slot = chunk.slot as usize;
        let mut out = SendOutcome::default();
        let frees = match c.done {
            SendDone::Sent => !std::mem::replace(&mut chunk.sent, true),
            SendDone::Acked => {
                chunk.done = Some(c.time);
                let m = &mut self.messages[chunk.msg as usize];
                m.acked += 1;
                if m.acked == m.chunks {
                    m.done = Some(c.time);
                    out.message_done = Some(chunk.msg);
                    self.pending -= 1;
                    out.close = self.closing && self.pending == 0;
                }
                self.refill_on == RefillOn::Ack
            }
            // The data-partition paper has no recovery: a chunk that fails (`fabric.retry_limit`) leaves its
            // message unfinished and its QP in the error state.
            SendDone::Failed | SendDone::Flushed => false,
        };
        // An acknowledged WQE leaves the send queue: a fill stopped there goes on.
        let room = c.done == SendDone::Acked && std::mem::take(&mut self.sq_full[slot]);
        if frees || room {
            if frees {
                self.busy[slot] -= 1;
            }
            if self.post_delay == Time::ZERO {
                self.fill(slot, v);
            } else {
                v.wake(c.time + self.post_delay, slot as u32);
            }
        }
        out
    }

    /// Posts chunks on `slot` until it has `outstanding` of them, nothing is left for it, or
    /// its send queue is full (a fresh QP per chunk is never full).
    fn fill(&mut self, slot: usize, v: &mut impl Verbs) {
        while self.busy[slot] < self.outstanding {
            if self.fresh.is_none() && v.sq_room(self.qps[slot]) == 0 {
                self.sq_full[slot] = true;
                return;
            }
            let Some((msg, index)) = self.next_chunk(slot) else { return };
            self.post_chunk(slot, msg, index, v);
        }
    }

    /// The next chunk `slot` may send: in offset order from the oldest started message
    /// (dynamic), or from that slot's own share (static).
    fn next_chunk(&mut self, slot: usize) -> Option<(u32, u32)> {
        while let Some(&msg) = self.active.front() {
            let m = &mut self.messages[msg as usize];
            if m.next < m.chunks && self.allocation == Allocation::Dynamic {
                m.next += 1;
                return Some((msg, m.next - 1));
            }
            if m.next >= m.chunks {
                self.active.pop_front();
                continue;
            }
            break;
        }
        // Static: the oldest active message whose share for this slot is not used up.
        for &msg in &self.active {
            let m = &mut self.messages[msg as usize];
            let (next, end) = &mut m.shares[slot];
            if *next < *end {
                *next += 1;
                m.next += 1; // chunks handed out, over all slots
                return Some((msg, *next - 1));
            }
        }
        None
    }

    fn post_chunk(&mut self, slot: usize, msg: u32, index: u32, v: &mut impl Verbs) {
        let m = &self.messages[msg as usize];
        let offset = index as u64 * self.chunk_size;
        let size = self.chunk_size.min(m.size - offset);
        let header = AppHeader { data_id: m.id as u64, total: m.size, offset, ..AppHeader::default() };
        let cookie = self.chunks.len() as u32;
        self.chunks.push(ChunkLog {
            msg,
            index,
            slot: slot as u32,
            offset,
            size,
            post: v.now(),
            sent: false,
            done: None,
        });
        self.busy[slot] += 1;
        let wr = Wr {
            bytes: size + self.header,
            cookie,
            header: Some(header),
            notify_sent: self.refill_on == RefillOn::Sent,
        };
        match &self.fresh {
            None => v.post(self.qps[slot], wr).expect("room was checked"),
            Some(f) => {
                let spec = FlowSpec { sport: Some(f.sports[slot]), start: v.now(), ..f.spec };
                let qp = v.open_qp(&spec, f.rx);
                v.post(qp, wr).expect("a fresh QP's send queue is empty");
                v.close_qp(qp); // once its one chunk is acknowledged
            }
        }
    }

    /// Checks a message of `size` bytes against the chunk size.
    pub fn check_size(&self, size: u64) -> crate::error::Result<()> {
        super::check_message_size(self.chunk_size, size, self.small_as_one_chunk)
    }

    /// True when every message posted so far is complete.
    pub fn idle(&self) -> bool {
        self.pending == 0
    }
}
