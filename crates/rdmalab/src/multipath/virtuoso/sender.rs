//! Virtuoso's sender half, on the source host: the probe, eq. 1's split, the sub-WRs of
//! each MP verb, the notice SEND of a large SEND, and one MP completion per message.
//! The lossy mode's size search and the retry of failed WRs are in `sender/lossy.rs`.

mod lossy;

use std::collections::{BTreeMap, VecDeque};

use super::chunk::ChunkSearch;
use super::{split_by_weights, ChunkSignal, MpVerb, VirtuosoConfig, Weights};
use crate::app::held::HeldWrs;
use crate::app::{AppHeader, RecvCompletion, SendCompletion, SendDone, Verbs, Wr};
use crate::ids::QpId;
use crate::units::Time;

/// Opcodes Virtuoso writes in its WRs' headers (`AppHeader::op`), read by the other half.
pub(super) mod op {
    /// A WRITE sub-flow (placed at `offset`; the receiver's CPU is not told).
    pub(crate) const WRITE: u8 = 1;
    /// A SEND carrying a whole small message (one receive completion).
    pub(crate) const SEND: u8 = 2;
    /// The notice SEND after a large SEND's WRITE sub-flows (one receive completion).
    pub(crate) const NOTICE: u8 = 3;
    /// A READ request for `length` bytes at `offset`.
    pub(crate) const READ_REQ: u8 = 4;
    /// READ response data, flowing back to the requester.
    pub(crate) const READ_DATA: u8 = 5;
}

/// Bytes of a READ request on the wire: its RETH (address 8, key 4, length 4). A real
/// request has no payload; ours carries these 16 B so that it is a packet of its own.
pub(super) const READ_REQUEST_BYTES: u64 = 16;

/// What a WR was posted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrKind {
    /// A probe of its path (no message).
    Probe,
    /// Data of a message (a WRITE sub-flow, a whole small WRITE or SEND).
    Data,
    /// The notice SEND that completes a large SEND at the receiver.
    Notice,
    /// A READ request; its data comes back on the reverse QP of the same path.
    ReadRequest,
    /// A WR of the lossy-mode size search (no message, no header).
    ChunkProbe,
}

/// The message of a probe WR, which carries none (`WrLog::msg`).
const NO_MESSAGE: u32 = u32::MAX;

/// One WR posted by the sender (its index is the WR's cookie).
#[derive(Clone, Copy, Debug)]
pub struct WrLog {
    /// Its message (local index), or `NO_MESSAGE` for a probe.
    pub msg: u32,
    /// Path (QP slot).
    pub path: u32,
    /// What it is.
    pub kind: WrKind,
    /// Data bytes it moves (for a READ request: the bytes requested).
    pub size: u64,
    /// When it was posted.
    pub post: Time,
    /// When it completed (ACK, or for a READ the last data byte back); `None` if not yet.
    pub done: Option<Time>,
    /// It completed with an error status (retry exceeded or flushed), or, for a size
    /// search WR under `chunk_probe_signal = "retransmission"`, was retransmitted.
    pub failed: bool,
    /// Its QP's go-back-N rounds when it was posted.
    rtx: u32,
    /// Offset of its data in the message (data and READ requests).
    offset: u64,
}

/// A message as the sender tracks it.
#[derive(Clone, Debug)]
pub struct VMessage {
    /// Global message id (the data id of its headers).
    pub id: u32,
    /// Its verb.
    pub verb: MpVerb,
    /// Data bytes.
    pub size: u64,
    /// When it was posted.
    pub start: Time,
    /// WRs posted for it (sub-WRs, READ requests, the notice SEND).
    pub wrs: u32,
    /// Completions the sender polled for it.
    pub cqes: u32,
    /// Sub-WRs not yet complete.
    open: u32,
    /// Sub-WRs it was cut into (data pieces, or READ requests).
    pub pieces: u32,
    /// READ: data bytes back at the source so far.
    pub placed: u64,
    /// Time it waited for the connection's probe (0 if it did not).
    pub probe: Time,
    /// Its MP completion at the sender.
    pub done: Option<Time>,
}

/// Probe state of a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Probe {
    /// Nothing sent yet (weights = probe).
    #[default]
    Pending,
    /// Probes in flight; this many to go.
    Running(u32),
    /// `caps` are known.
    Done,
}

/// Token of a timer that starts message `local`.
const START: u32 = 1 << 31;
/// Token of a timer at which path `p`'s QP is reconnected after a failed WR.
const RECONNECT: u32 = 1 << 30;
/// Token of the timer that posts the size search's next round after a failed one.
const SEARCH_ROUND: u32 = 1 << 29;

/// Lossy-mode size search state of a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Search {
    /// Not configured, or finished.
    #[default]
    Off,
    /// To run at the first message.
    Pending,
    /// Running.
    Running,
}

/// A piece of a message waiting for its path (lossy mode: one WR out per path).
#[derive(Clone, Copy, Debug)]
struct Piece {
    local: u32,
    offset: u64,
    len: u64,
    verb: MpVerb,
    whole: bool,
}

/// The sending half of a Virtuoso connection.
#[derive(Clone, Debug, Default)]
pub struct VirtuosoSender {
    cfg: VirtuosoConfig,
    notice_bytes: u64,
    /// Base RTT of the connection: what reconnecting a failed QP takes (the exchange of
    /// the connection manager).
    rtt: Time,
    /// One QP per path, by slot.
    pub qps: Vec<QpId>,
    /// Capacity estimate per path (Gb/s for probe and monitor; the weights otherwise).
    pub caps: Vec<f64>,
    /// Data bytes sent per path (probes excluded).
    pub path_bytes: Vec<u64>,
    /// Largest data WR posted per path; with `chunk_probe`, the size the search found.
    pub path_max_wr: Vec<u64>,
    probe: Probe,
    search: Search,
    /// The size search (lossy mode only), its round's WRs not yet over and whether all
    /// of them succeeded so far.
    sizer: ChunkSearch,
    round_open: u32,
    round_ok: bool,
    /// When the search's current round was posted.
    round_start: Time,
    /// Per path: the largest WR data may use (`u64::MAX` without `chunk_probe`).
    limits: Vec<u64>,
    /// Lossy mode, per path: pieces not yet posted, and whether one is out.
    backlog: Vec<VecDeque<Piece>>,
    busy: Vec<bool>,
    /// Per path: WRs that failed or were flushed, posted again once the QP is back.
    redo: Vec<Vec<WrLog>>,
    /// Per path: WRs that found the send queue full, posted as acknowledgements free slots
    /// (at most the WRs of the messages posted to it).
    held: Vec<HeldWrs>,
    /// When the probes were posted.
    probe_start: Time,
    /// Messages posted before the probe finished, oldest first.
    waiting: VecDeque<u32>,
    /// Messages in post order.
    pub messages: Vec<VMessage>,
    /// Every WR posted, in post order (index = cookie).
    pub wrs: Vec<WrLog>,
    /// READ requests whose data is not back yet: (data id, offset) -> cookie.
    open_reads: BTreeMap<(u64, u64), u32>,
    pending: u32,
    closing: bool,
}

/// What a completion changed, for the simulator to record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VOutcome {
    /// This message (local index) just completed at the sender.
    pub message_done: Option<u32>,
    /// Everything posted is done and the connection was asked to close.
    pub close: bool,
}

impl VirtuosoSender {
    /// A sender over `qps` (open, one per path). `notice_bytes`: payload of the notice SEND;
    /// `rtt`: the connection's base RTT.
    pub fn new(cfg: &VirtuosoConfig, qps: Vec<QpId>, notice_bytes: u64, rtt: Time) -> VirtuosoSender {
        let n = qps.len();
        let (caps, probe) = match &cfg.weights {
            Weights::Probe => (vec![0.0; n], Probe::Pending),
            Weights::Equal => (vec![1.0; n], Probe::Done),
            Weights::List(w) => (w.clone(), Probe::Done),
        };
        VirtuosoSender {
            cfg: cfg.clone(),
            notice_bytes,
            rtt,
            qps,
            caps,
            path_bytes: vec![0; n],
            path_max_wr: vec![0; n],
            probe,
            search: if cfg.chunk_probe.is_some() { Search::Pending } else { Search::Off },
            limits: vec![u64::MAX; n],
            backlog: vec![VecDeque::new(); n],
            busy: vec![false; n],
            redo: vec![Vec::new(); n],
            held: vec![HeldWrs::default(); n],
            ..Default::default()
        }
    }

    /// Registers a message; returns its local index and the timer token that starts it.
    pub fn add_message(&mut self, id: u32, verb: MpVerb, size: u64, start: Time) -> (u32, u32) {
        let local = self.messages.len() as u32;
        let m = VMessage {
            id,
            verb,
            size,
            start,
            wrs: 0,
            cqes: 0,
            open: 0,
            pieces: 0,
            placed: 0,
            probe: Time::ZERO,
            done: None,
        };
        self.messages.push(m);
        self.pending += 1;
        (local, START | local)
    }

    /// No more messages: returns true when everything posted is already done.
    pub fn disconnect(&mut self) -> bool {
        self.closing = true;
        self.pending == 0
    }

    /// A timer of this sender fired: a message starts (after the connection's set-up:
    /// the size search and the probe, if due), or a reconnected path goes on.
    pub fn on_timer(&mut self, token: u32, v: &mut impl Verbs) {
        if token & START == 0 && token & RECONNECT != 0 {
            return self.on_reconnected((token & !RECONNECT) as usize, v);
        }
        if token & START == 0 && token & SEARCH_ROUND != 0 {
            return self.post_round(v);
        }
        let local = token & !START;
        if self.search == Search::Off && self.probe == Probe::Done {
            return self.start_message(local, v);
        }
        self.waiting.push_back(local);
        self.set_up(v);
    }

    /// Moves the connection's set-up on: the size search, then the capacity probe, then
    /// the messages that waited for them.
    fn set_up(&mut self, v: &mut impl Verbs) {
        match (self.search, self.probe) {
            (Search::Pending, _) => self.start_search(v),
            (Search::Running, _) | (_, Probe::Running(_)) => {}
            (Search::Off, Probe::Pending) => self.start_probe(v),
            (Search::Off, Probe::Done) => {
                let now = v.now();
                while let Some(local) = self.waiting.pop_front() {
                    let m = &mut self.messages[local as usize];
                    m.probe = now - m.start;
                    self.start_message(local, v);
                }
            }
        }
    }

    /// §3.5: one `probe_size` WRITE on every path at once.
    fn start_probe(&mut self, v: &mut impl Verbs) {
        self.probe = Probe::Running(self.qps.len() as u32);
        self.probe_start = v.now();
        for path in 0..self.qps.len() {
            let size = self.cfg.probe_size;
            self.post(NO_MESSAGE, path, WrKind::Probe, size, None, v);
        }
    }

    /// Cuts message `local` into its WRs and posts them.
    fn start_message(&mut self, local: u32, v: &mut impl Verbs) {
        let (verb, size) = (self.messages[local as usize].verb, self.messages[local as usize].size);
        if size < self.cfg.small_message {
            let path = self.cfg.small_path as usize;
            self.add_piece(Piece { local, offset: 0, len: size, verb, whole: true }, path, v);
            return;
        }
        let shares = split_by_weights(size, &self.caps, self.cfg.block);
        let mut offset = 0;
        for (path, &share) in shares.iter().enumerate() {
            // Lossy mode: at most the path's limit per WR (one WR without a limit).
            let limit = self.limits[path];
            let mut at = offset;
            while at < offset + share {
                let len = (offset + share - at).min(limit);
                self.add_piece(Piece { local, offset: at, len, verb, whole: false }, path, v);
                at += len;
            }
            offset += share;
        }
    }

    /// Counts a piece for its message and path and posts it, or in lossy mode queues it
    /// behind the path's WR in flight (§3.5: the next WR after the previous CQE).
    fn add_piece(&mut self, p: Piece, path: usize, v: &mut impl Verbs) {
        let m = &mut self.messages[p.local as usize];
        m.open += 1;
        m.pieces += 1;
        self.path_bytes[path] += p.len;
        if self.cfg.chunk_probe.is_none() {
            self.path_max_wr[path] = self.path_max_wr[path].max(p.len);
            return self.post_piece(p.local, path, p.offset, p.len, p.verb, p.whole, v);
        }
        self.backlog[path].push_back(p);
        self.pump(path, v);
    }

    /// Lossy mode: posts path `path`'s next piece if none is out.
    fn pump(&mut self, path: usize, v: &mut impl Verbs) {
        if self.busy[path] {
            return;
        }
        if let Some(p) = self.backlog[path].pop_front() {
            self.busy[path] = true;
            self.post_piece(p.local, path, p.offset, p.len, p.verb, p.whole, v);
        }
    }

    /// Posts the WR that moves `[offset, offset + len)` of a message over `path`: a WRITE
    /// (also for a large SEND), a whole SEND (`whole`), or a READ request.
    #[allow(clippy::too_many_arguments)]
    fn post_piece(
        &mut self,
        local: u32,
        path: usize,
        offset: u64,
        len: u64,
        verb: MpVerb,
        whole: bool,
        v: &mut impl Verbs,
    ) {
        let m = &self.messages[local as usize];
        let (opcode, kind, wire) = match verb {
            MpVerb::Read => (op::READ_REQ, WrKind::ReadRequest, READ_REQUEST_BYTES),
            MpVerb::Send if whole => (op::SEND, WrKind::Data, len),
            MpVerb::Write | MpVerb::Send => (op::WRITE, WrKind::Data, len),
        };
        let header = AppHeader { data_id: m.id as u64, total: m.size, offset, length: len, op: opcode };
        if kind == WrKind::ReadRequest {
            self.open_reads.insert((m.id as u64, offset), self.wrs.len() as u32);
        }
        self.post_wr(local, path, kind, len, wire, Some(header), v);
    }

    fn post(
        &mut self,
        local: u32,
        path: usize,
        kind: WrKind,
        size: u64,
        header: Option<AppHeader>,
        v: &mut impl Verbs,
    ) {
        self.post_wr(local, path, kind, size, size, header, v);
    }

    #[allow(clippy::too_many_arguments)]
    fn post_wr(
        &mut self,
        local: u32,
        path: usize,
        kind: WrKind,
        size: u64,
        wire: u64,
        header: Option<AppHeader>,
        v: &mut impl Verbs,
    ) {
        let cookie = self.wrs.len() as u32;
        let rtx = v.retransmissions(self.qps[path]);
        let offset = header.map_or(0, |h| h.offset);
        let log =
            WrLog { msg: local, path: path as u32, kind, size, post: v.now(), done: None, failed: false, rtx, offset };
        self.wrs.push(log);
        if let Some(m) = self.messages.get_mut(local as usize) {
            m.wrs += 1;
        }
        let wr = Wr { bytes: wire, cookie, header, notify_sent: false };
        self.held[path].post_or_hold(self.qps[path], wr, v);
    }

    /// Path `path`'s send queue has room again (an acknowledgement, a reconnection): the
    /// WRs it holds go, in order, while it lasts.
    pub(super) fn post_held(&mut self, path: usize, v: &mut impl Verbs) {
        let qp = self.qps[path];
        let (now, rtx) = (v.now(), v.retransmissions(qp));
        let wrs = &mut self.wrs;
        // Posted now: its time and its QP's rounds count from here (`monitor`, the size search).
        self.held[path]
            .post_while_room(qp, v, |wr| (wrs[wr.cookie as usize].post, wrs[wr.cookie as usize].rtx) = (now, rtx));
    }

    /// A WR of this sender was acknowledged.
    pub fn on_completion(&mut self, c: SendCompletion, v: &mut impl Verbs) -> VOutcome {
        match c.done {
            SendDone::Acked => self.post_held(self.wrs[c.cookie as usize].path as usize, v),
            SendDone::Sent => return VOutcome::default(),
            SendDone::Failed | SendDone::Flushed => return self.on_failure(c, v),
        }
        let w = &mut self.wrs[c.cookie as usize];
        if w.kind == WrKind::ChunkProbe {
            w.done = Some(c.time);
            let retransmitted = v.retransmissions(self.qps[w.path as usize]) != w.rtx;
            let signal = self.cfg.chunk_probe.map(|p| p.signal).unwrap_or_default();
            w.failed = signal == ChunkSignal::Retransmission && retransmitted;
            let w = *w;
            self.on_search_wr(w, !w.failed, false, v);
            return VOutcome::default();
        }
        if w.kind == WrKind::ReadRequest {
            return VOutcome::default(); // the READ completes when its data is back
        }
        w.done = Some(c.time);
        let w = *w;
        match w.kind {
            WrKind::Probe => {
                self.on_probe_done(w, v);
                VOutcome::default()
            }
            WrKind::Notice => {
                self.messages[w.msg as usize].cqes += 1;
                self.finish(w.msg, c.time)
            }
            _ => self.on_piece_done(w, c.time, v),
        }
    }

    /// READ data came back on the reverse QP of some path: the READ sub-WR that asked
    /// for it (found by its message and offset) is complete.
    pub fn on_receive(&mut self, c: RecvCompletion, v: &mut impl Verbs) -> VOutcome {
        let Some(cookie) = self.open_reads.remove(&(c.header.data_id, c.header.offset)) else {
            return VOutcome::default();
        };
        self.wrs[cookie as usize].done = Some(c.time);
        let w = self.wrs[cookie as usize];
        self.messages[w.msg as usize].placed += c.bytes;
        self.on_piece_done(w, c.time, v)
    }

    /// One sub-WR of a message is complete: monitor its path; complete the message, or for
    /// a large SEND post the notice once every WRITE is done.
    fn on_piece_done(&mut self, w: WrLog, now: Time, v: &mut impl Verbs) -> VOutcome {
        self.monitor(w, now);
        if self.cfg.chunk_probe.is_some() {
            self.busy[w.path as usize] = false;
            self.pump(w.path as usize, v);
        }
        let m = &mut self.messages[w.msg as usize];
        m.cqes += 1;
        m.open -= 1;
        if m.open > 0 {
            return VOutcome::default();
        }
        if m.verb == MpVerb::Send && m.size >= self.cfg.small_message {
            let header = AppHeader { data_id: m.id as u64, total: m.size, offset: 0, length: 0, op: op::NOTICE };
            let (path, bytes) = (self.cfg.small_path as usize, self.notice_bytes);
            self.post(w.msg, path, WrKind::Notice, bytes, Some(header), v);
            return VOutcome::default();
        }
        self.finish(w.msg, now)
    }

    /// Our extension (not the paper's): `cap_i <- (1 - g) cap_i + g * rate`, the rate a
    /// finished sub-WR achieved from post to completion.
    fn monitor(&mut self, w: WrLog, now: Time) {
        let g = self.cfg.monitor_gain;
        if g > 0.0 && matches!(self.cfg.weights, Weights::Probe) && now > w.post {
            let rate = gbps(w.size, now - w.post);
            let c = &mut self.caps[w.path as usize];
            *c = (1.0 - g) * *c + g * rate;
        }
    }

    fn on_probe_done(&mut self, w: WrLog, v: &mut impl Verbs) {
        let Probe::Running(left) = self.probe else { return };
        let now = w.done.unwrap_or(v.now());
        self.caps[w.path as usize] = gbps(w.size, now - self.probe_start);
        if left > 1 {
            self.probe = Probe::Running(left - 1);
            return;
        }
        self.probe = Probe::Done;
        self.set_up(v);
    }

    fn finish(&mut self, local: u32, now: Time) -> VOutcome {
        let m = &mut self.messages[local as usize];
        m.done = Some(now);
        self.pending -= 1;
        VOutcome { message_done: Some(local), close: self.closing && self.pending == 0 }
    }

    /// True when every message posted so far is complete.
    pub fn idle(&self) -> bool {
        self.pending == 0
    }
}

/// Gb/s of `bytes` moved in `t`.
fn gbps(bytes: u64, t: Time) -> f64 {
    bytes as f64 * 8.0 / t.secs_f64() / 1e9
}
