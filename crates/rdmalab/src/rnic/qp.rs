//! A queue pair: the sender's byte stream (messages posted as WQEs, cut into MTU packets)
//! and the receiver's expected sequence number for the same connection.

use crate::ids::{AppId, CcGroupId, FlowId, HeaderSlot, NicId, NodeId};
use crate::units::{Rate, Time};

/// The largest send queue a ConnectX-3 (mlx4) accepts: `max_qp_wr: 16351` in its
/// `ibv_devinfo -v` (16384 less the driver's reserved spare WQEs). The default depth of
/// application QPs (`SimConfig::max_send_wr`, `[rnic]`) and of the host model's (`[host]`).
pub const DEFAULT_MAX_SEND_WR: u32 = 16351;

/// One posted WQE (a message): bytes `[end - size, end)` of the QP's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Index of the flow/message in the scenario (reported in results).
    pub flow: FlowId,
    /// Offset one past the message's last byte in the QP's stream.
    pub end: u64,
    /// Payload bytes.
    pub size: u64,
    /// When it was posted.
    pub posted: Time,
    /// The application that posted it ([`AppId::NONE`] for a plain flow, which records its
    /// own FCT instead of completing to an application).
    pub app: AppId,
    /// The application's cookie for this WR.
    pub cookie: u32,
    /// Slot of its in-payload header, carried by its last packet.
    pub hdr: HeaderSlot,
    /// The application also wants to hear when its last packet leaves the NIC.
    pub notify_sent: bool,
}

impl Message {
    /// A message of flow `flow` that no application posted (its `end` is set when posted).
    pub fn plain(flow: FlowId, size: u64, now: Time) -> Message {
        let (app, hdr) = (AppId::NONE, HeaderSlot::NONE);
        Message { flow, end: 0, size, posted: now, app, cookie: 0, hdr, notify_sent: false }
    }
}

/// A completion queue entry: a message whose last byte the sender saw acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The message.
    pub flow: FlowId,
    /// When the ACK covering its last byte arrived.
    pub time: Time,
}

/// Receiver state of the connection (lives with the QP: one QP, one connection).
#[derive(Clone, Copy, Debug)]
pub struct RxState {
    /// Next in-order byte expected.
    pub expected: u64,
    /// `expected` when the last NACK was sent.
    pub last_nack: u64,
    /// No NACK for the same `expected` before this time.
    pub nack_quiet_until: Time,
    /// In-order packets since the last ACK.
    pub unacked_packets: u32,
    /// No CNP flag before this time (only with `SimConfig::cnp_interval`).
    pub cnp_quiet_until: Time,
    /// Stream offset where the message being received began.
    pub msg_start: u64,
    /// The receiving host's application for this QP ([`AppId::NONE`]: none), told when a
    /// message carrying an application header is placed.
    pub app: AppId,
    /// The plain flow this QP carries ([`FlowId::NONE`]: an application's QP), for the
    /// receiver's per-flow counts (out-of-order arrivals, CNPs by cause).
    pub flow: FlowId,
    /// UC: the message being received had a gap; its remaining packets are discarded.
    pub discarding: bool,
    /// The connection's messages are SENDs, each taking a receive WQE at this end
    /// (`sim::mech::rnr`): a plain flow's verb, or that of the flow an application opened
    /// the QP for (a staggered incast's).
    pub sends: bool,
    /// UC or UD (the QP's `transport`, copied here so that an arrival reads the receiver's
    /// line only; set where the QP is opened).
    pub unreliable: bool,
    /// UET (`rnic::uet`): packets are accepted in any order (copied here as `unreliable` is).
    pub uet: bool,
}

impl Default for RxState {
    fn default() -> Self {
        RxState {
            expected: 0,
            last_nack: 0,
            nack_quiet_until: Time::ZERO,
            unacked_packets: 0,
            cnp_quiet_until: Time::ZERO,
            msg_start: 0,
            app: AppId::NONE,
            flow: FlowId::NONE,
            discarding: false,
            sends: false,
            unreliable: false,
            uet: false,
        }
    }
}

/// A queue pair.
///
/// Laid out by hand in four cache lines, by when its fields are read (`repr(C)`, aligned
/// to a line): a run with many QPs (Virtuoso's row of `lb-host-vs-switch`, cell 5: 147,152
/// in its 1 ms cut) finds few of them in cache, so a packet should touch as few of a QP's
/// lines as it can. The arbiter's test and
/// the window share line 0; a send and an ACK add line 1 and the header's line 2; the
/// receiver reads line 3. A field added must find room in the line of its readers (the
/// layout test fails if the QP outgrows four lines).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Qp {
    // Line 0: what the NIC's arbiter and the window test read for every packet.
    /// Pacing: earliest time the next packet may leave.
    pub next_avail: Time,
    /// Next byte to send.
    pub snd_nxt: u64,
    /// Bytes posted so far (end of the stream).
    pub posted: u64,
    /// Oldest unacknowledged byte.
    pub snd_una: u64,
    /// Window in bytes (0 = no window).
    pub win: u64,
    /// Current sending rate (set by congestion control).
    pub rate: Rate,
    /// Line rate of the NIC.
    pub max_rate: Rate,
    /// Priority class of its data.
    pub pg: u8,
    /// No more data will be posted and everything is acknowledged.
    pub finished: bool,
    /// The window scales with `rate / max_rate` (HPCC's VAR_WIN).
    pub var_win: bool,
    /// The QP is in the error state: a WR exceeded the retry limit, the rest were flushed,
    /// nothing is sent until the application reconnects it.
    pub error: bool,
    /// RC (default), UC or UD (`fabric::transport`; what UC and UD decide: `rnic::transport`).
    pub transport: crate::fabric::transport::Transport,
    /// A timeout event is in the queue (fires at or before `rto_deadline`).
    pub rto_scheduled: bool,
    /// Close when the last posted message completes (one-flow-one-QP semantics).
    pub close_when_idle: bool,
    // Line 1: what a send and an ACK update.
    /// Posted messages not yet completed, in order.
    pub messages: super::PostedMessages,
    /// One past the highest byte ever sent: a packet ending at or below it is a
    /// retransmission (IRN's new data starts here after a repaired hole).
    pub high_sent: u64,
    /// Retransmission deadline (`Time::MAX` = none armed).
    pub rto_deadline: Time,
    /// Wire size of the last packet sent (for re-timing its pacing gap on a rate change).
    pub last_wire: u32,
    /// Data and ACK/NACK packets of this QP inside the network. A finished QP's slot is
    /// reused only once this is 0, so no late packet can reach its next occupant.
    pub in_flight: u32,
    // Line 2: the packet header's fields and the QP's links to its NIC and group.
    /// Base RTT used by congestion control.
    pub base_rtt: Time,
    /// Under `fabric.defense = "tenant"`: the QP leaves its private line-rate state for
    /// its tenant's shared one once it has sent this many bytes (0: not exempt).
    pub exempt_until: u64,
    /// Index of the sending host's NIC.
    pub nic: NicId,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Source address.
    pub sip: u32,
    /// Destination address.
    pub dip: u32,
    /// Congestion-control state this QP obeys.
    pub cc_group: CcGroupId,
    /// Go-back-N rounds (NACK or timeout) since the last acknowledged progress
    /// (`fabric.retry_limit` counts these).
    pub retries: u32,
    /// Its position in its NIC's arbitration ring (`Nic::attach`), for the NIC's set of QPs
    /// that may have work (`Nic::mark`).
    pub nic_slot: u32,
    /// Source UDP port (fixed for the QP's life, so one QP follows one ECMP path).
    pub sport: u16,
    /// Destination UDP port.
    pub dport: u16,
    /// Tenant of the traffic it carries (index into the scenario's tenants).
    pub tenant: u16,
    /// How many QPs used this slot before (timeout events name it, so that one armed by an
    /// earlier occupant is ignored).
    pub gen: u16,
    /// Send-queue depth: WQEs it may hold posted and not yet completed (`[host]
    /// max_send_wr` for the host model's QPs; `[rnic] max_send_wr` for every other QP an
    /// application keeps, DRUM's control QPs at least the device's; `u32::MAX` for a plain
    /// flow's QP, which carries its one message).
    pub sq_depth: u32,
    /// NACKs this sender received, over the QP's life.
    pub nacks: u32,
    // Line 3: the receiving end.
    /// Receiver side.
    pub rx: RxState,
    /// Go-back-N rounds over the QP's life (what an application reads as "retransmitted").
    pub rewinds: u32,
    /// Data packets sent again (at or below `high_sent`), over the QP's life.
    pub retx_packets: u32,
}

impl Qp {
    /// An empty, finished slot with every counter at zero: `open_qp` sets what a new QP
    /// needs and takes the rest from here.
    pub fn placeholder() -> Qp {
        Qp {
            nic: NicId(0),
            src: NodeId(0),
            dst: NodeId(0),
            sip: 0,
            dip: 0,
            sport: 0,
            dport: 0,
            pg: 0,
            posted: 0,
            snd_nxt: 0,
            snd_una: 0,
            high_sent: 0,
            messages: super::PostedMessages::default(),
            next_avail: Time::ZERO,
            nic_slot: u32::MAX,
            rate: Rate(0),
            max_rate: Rate(0),
            win: 0,
            var_win: false,
            base_rtt: Time::ZERO,
            last_wire: 0,
            rto_deadline: Time::MAX,
            rto_scheduled: false,
            cc_group: CcGroupId::NONE,
            finished: true,
            close_when_idle: true,
            rx: RxState::default(),
            tenant: 0,
            in_flight: 0,
            exempt_until: 0,
            gen: 0,
            retries: 0,
            rewinds: 0,
            retx_packets: 0,
            nacks: 0,
            error: false,
            transport: crate::fabric::transport::Transport::Rc,
            sq_depth: u32::MAX,
        }
    }

    /// Free send-queue slots: the depth less the WQEs posted and not completed (`in_engine`
    /// of them still in the NIC's WQE engine, the rest on the QP). A post needs one
    /// (`ibv_post_send` fails with ENOMEM otherwise).
    #[inline]
    pub fn sq_room(&self, in_engine: u32) -> u32 {
        self.sq_depth.saturating_sub(self.messages.len() as u32 + in_engine)
    }

    /// Bytes left to send (first transmissions).
    #[inline]
    pub fn has_data(&self) -> bool {
        self.snd_nxt < self.posted
    }

    /// The effective window in bytes, 0 = unlimited.
    #[inline]
    pub fn window(&self) -> u64 {
        if self.win == 0 {
            0
        } else if self.var_win {
            ((self.win as u128 * self.rate.0 as u128 / self.max_rate.0.max(1) as u128) as u64).max(1)
        } else {
            self.win
        }
    }

    /// True when the bytes in flight fill the window. Like the reference the check is on
    /// bytes already sent, so the last packet may overshoot the window by up to one MTU.
    #[inline]
    pub fn window_bound(&self) -> bool {
        let w = self.window();
        w != 0 && self.snd_nxt - self.snd_una >= w
    }

    /// Posts a message of `size` bytes for flow `flow`.
    pub fn post(&mut self, flow: FlowId, size: u64, now: Time) {
        self.post_message(Message::plain(flow, size, now));
    }

    /// Posts `m` (its `end` is set here) at the end of the stream.
    pub fn post_message(&mut self, mut m: Message) {
        self.posted += m.size;
        m.end = self.posted;
        self.messages.push_back(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// The cache line a field starts on.
    fn line(offset: usize) -> usize {
        offset / 64
    }

    #[test]
    fn a_qp_is_four_lines_with_each_path_on_its_own() {
        assert_eq!((size_of::<Qp>(), align_of::<Qp>()), (256, 64), "a field outgrew the QP's four lines");
        // What the arbiter and the window test read (`Nic::walk_marked`, `may_send`).
        for o in [offset_of!(Qp, next_avail), offset_of!(Qp, snd_nxt), offset_of!(Qp, posted), offset_of!(Qp, snd_una)]
        {
            assert_eq!(line(o), 0);
        }
        for o in [offset_of!(Qp, win), offset_of!(Qp, rate), offset_of!(Qp, pg), offset_of!(Qp, finished)] {
            assert_eq!(line(o), 0);
        }
        for o in [offset_of!(Qp, messages), offset_of!(Qp, high_sent), offset_of!(Qp, in_flight)] {
            assert_eq!(line(o), 1);
        }
        for o in [offset_of!(Qp, sip), offset_of!(Qp, dip), offset_of!(Qp, sport), offset_of!(Qp, cc_group)] {
            assert_eq!(line(o), 2);
        }
        // The receiver's state fits one line.
        assert_eq!((line(offset_of!(Qp, rx)), line(offset_of!(Qp, rx) + size_of::<RxState>() - 1)), (3, 3));
    }

    fn qp() -> Qp {
        Qp {
            dst: NodeId(1),
            sport: 10000,
            dport: 100,
            pg: 3,
            rate: Rate::gbps(50),
            max_rate: Rate::gbps(100),
            win: 10_000,
            var_win: true,
            cc_group: CcGroupId(0),
            finished: false,
            ..Qp::placeholder()
        }
    }

    #[test]
    fn variable_window_follows_rate() {
        let mut q = qp();
        q.post(FlowId(0), 100_000, Time(0));
        assert_eq!(q.window(), 5_000);
        q.snd_nxt = 4_999;
        assert!(!q.window_bound());
        q.snd_nxt = 5_000;
        assert!(q.window_bound());
    }
}
