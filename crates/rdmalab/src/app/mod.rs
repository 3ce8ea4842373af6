//! The host-application interface: what software on a host sees of its RNIC.
//!
//! An application opens QPs, posts work requests (WRs) on them and consumes completions,
//! as a verbs program does. The simulator hands it three things, all outside the
//! per-packet path:
//!
//! - a **send completion** when a WR it posted is done: its last byte acknowledged (RC
//!   semantics, [`SendDone::Acked`]) or, when the WR asked for it, its last packet handed
//!   to the wire ([`SendDone::Sent`]);
//! - a **receive completion** on the receiving host when a WR's last byte is placed in
//!   order, with the in-payload header the sender wrote ([`RecvCompletion`]);
//! - a **timer** it set itself ([`Verbs::wake`]).
//!
//! A handler issues its verbs; it does not run them. The simulator carries out the verbs of
//! one handler after it returns, in the order issued ([`Verb`], [`VerbQueue`]); only
//! opening a QP acts at once, since the handler needs the QP it gets back.
//!
//! Locality: an application instance lives on one host. The sender and receiver ends of a
//! connection are two instances that learn of each other only through what crosses the
//! network: the bytes of a WR (its header travels in the packets, see [`Headers`]) and
//! completions on their own host. A later parallel engine can cut the fabric between hosts
//! without touching an application.
//!
//! Applications built on this: the CC-attack paper's attack generators, `multipath` (the data-partition paper's
//! data partition), Virtuoso's MP verbs, the Blitz poster's serial incast
//! (`sim/apps/serial_incast.rs`, rows of `AppKind::Attack`: the scenario's host
//! applications), and the DRUM paper's closed-loop applications with the host model around them
//! ([`closed_loop`], [`host_model`], [`drum_agent`]). The simulator side is `sim/apps/`.
//! Each is one [`AppKind`] variant and its handlers.

pub mod closed_loop;
pub mod collective;
pub mod deps;
pub mod drum_agent;
pub mod drum_select;
pub mod held;
pub mod host_model;
pub mod rank;
pub mod trace_nodes;

use crate::ids::QpId;
pub use crate::ids::{AgentId, AppId, HeaderSlot};
use crate::units::Time;
use crate::workload::FlowSpec;

/// The kinds of application, each an index into its own arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppKind {
    /// A host application of the scenario's list (`workload::attacks::HostApp`: the CC-attack paper's
    /// staggered transfer or shuffled-overlay member, the Blitz poster's paced message or serial
    /// incast aggregator and sender), by its index in that list.
    Attack(u32),
    /// The sending half of a multipath connection (`multipath::MpSender`).
    MpSender(u32),
    /// The receiving half of a multipath connection (`multipath::MpReceiver`).
    MpReceiver(u32),
    /// The sending half of a Virtuoso connection (`multipath::virtuoso::VirtuosoSender`).
    VSender(u32),
    /// The receiving half of a Virtuoso connection, which also answers READs.
    VReceiver(u32),
    /// A closed-loop application of the DRUM paper (`closed_loop::ClosedLoop`, `sim/apps/closed_loop.rs`).
    Closed(u32),
    /// DRUM's scheduler of one host (`drum_agent::DrumAgent`, `sim/apps/drum.rs`): its
    /// releases, polls and local control periods are its timers.
    DrumAgent(AgentId),
    /// DRUM's network-wide control loop (`control = "out_of_band"` or `"in_band"`,
    /// `sim/apps/drum_control.rs`): a period of every scheduler, the coordinator's round
    /// and new prices at the schedulers are its timers. It belongs to no one host.
    DrumNet,
    /// An end of DRUM's in-band control: scheduler `h`'s, or the coordinator's
    /// ([`AgentId::NONE`], `sim/apps/drum_inband.rs`).
    DrumCtl(AgentId),
    /// A host's part of dependency-driven job `n` (`rank::RankApp`, `sim/apps/collective.rs`):
    /// a collective's rank, or a host of a job of transfers.
    Rank(u32),
}

/// An application's header at the start of a WR's payload. The data-partition paper names three fields and
/// not their width; we take 8 bytes each (24 B, `chunk_header`'s default). The bytes count
/// as payload on the wire: the WR's size includes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppHeader {
    /// Which message (data id) the WR carries a piece of.
    pub data_id: u64,
    /// Size of the whole message in bytes (lets the receiver allocate and know when done).
    pub total: u64,
    /// Offset of this piece in the message.
    pub offset: u64,
    /// Bytes of this piece (Virtuoso: what a READ request asks for); 0 if unused.
    pub length: u64,
    /// The application's own opcode (Virtuoso: which MP verb piece this is); 0 if unused.
    pub op: u8,
}

/// One work request to post on a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wr {
    /// Bytes of the WR, header included.
    pub bytes: u64,
    /// The application's own tag, returned in the send completion.
    pub cookie: u32,
    /// In-payload header, if the application writes one.
    pub header: Option<AppHeader>,
    /// Also report when the last packet leaves the NIC, not only when it is acknowledged.
    pub notify_sent: bool,
}

/// What a send completion reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendDone {
    /// The WR's last packet left the NIC for the first time (only if `notify_sent`).
    Sent,
    /// The WR's last byte was acknowledged (the RC work completion).
    Acked,
    /// Error status: the WR made `fabric.retry_limit` go-back-N rounds without progress
    /// and one more was due (verbs' retry-exceeded error). Its QP is now in the error state.
    Failed,
    /// Error status: the WR was behind a failed one on its QP and was never completed
    /// (verbs' flush error).
    Flushed,
}

/// A send completion on the sending host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCompletion {
    /// The QP the WR was posted on.
    pub qp: QpId,
    /// The WR's cookie.
    pub cookie: u32,
    /// Which event.
    pub done: SendDone,
    /// When.
    pub time: Time,
}

/// A receive completion on the receiving host: a whole WR placed in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvCompletion {
    /// The QP it arrived on.
    pub qp: QpId,
    /// Bytes of the WR, header included.
    pub bytes: u64,
    /// The header the sender wrote at the start of the payload.
    pub header: AppHeader,
    /// When its last byte was placed.
    pub time: Time,
}

/// The verbs an application calls, implemented by the simulator for one host.
pub trait Verbs {
    /// Current simulated time.
    fn now(&self) -> Time;
    /// Posts `wr` on `qp` (one of the application's QPs) and lets the NIC send it. Fails,
    /// as `ibv_post_send` does with ENOMEM, when the QP's send queue is full: its depth
    /// counts the WQEs posted and not yet completed, those this handler issued included.
    fn post(&mut self, qp: QpId, wr: Wr) -> Result<(), PostError>;
    /// Free slots in `qp`'s send queue now, less the posts this handler already issued
    /// on it (`u32::MAX` less those for a QP without a depth).
    fn sq_room(&self, qp: QpId) -> u32;
    /// Calls the application back with `token` at `at` (not before now).
    fn wake(&mut self, at: Time, token: u32);
    /// Go-back-N rounds `qp` (one of the application's QPs) made so far: a WR whose
    /// completion finds this changed since its post was retransmitted (in part).
    fn retransmissions(&self, qp: QpId) -> u32;
    /// Brings `qp` back from the error state (after a [`SendDone::Failed`]): both ends
    /// reset and agree on where the stream resumes. The exchange that does this takes a
    /// round trip, which the caller models by posting again no sooner than that.
    fn reconnect(&mut self, qp: QpId);
    /// Opens a QP from this host for traffic like `f` (its destination, class, ports) that
    /// stays open until [`Verbs::close_qp`]; what it delivers is heard of by application
    /// `rx` on the destination host ([`AppId::NONE`]: by none).
    fn open_qp(&mut self, f: &FlowSpec, rx: AppId) -> QpId;
    /// The application is done with `qp`: it closes once everything posted on it is
    /// acknowledged.
    fn close_qp(&mut self, qp: QpId);
}

/// Why a post was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The send queue holds its depth of WQEs (`ibv_post_send`'s ENOMEM: "Send Queue is
    /// full"); the WR was not posted.
    SendQueueFull,
}

/// A verb an application issued from a handler. The simulator carries the verbs of one
/// handler out after it returns, in the order it issued them ([`VerbQueue`]); what a
/// handler reads meanwhile (the time, a QP's go-back-N rounds) none of them changes, so a
/// handler sees its host as if each verb had acted at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// [`Verbs::post`].
    Post(QpId, Wr),
    /// [`Verbs::wake`].
    Wake(Time, u32),
    /// [`Verbs::reconnect`].
    Reconnect(QpId),
    /// [`Verbs::close_qp`].
    CloseQp(QpId),
}

/// The verbs a handler issued and the simulator has not yet carried out, oldest first.
/// Kept by the simulator between handlers so that its buffer is allocated once.
#[derive(Clone, Debug, Default)]
pub struct VerbQueue {
    verbs: Vec<Verb>,
}

impl VerbQueue {
    /// Issues `v` after the verbs already waiting.
    #[inline]
    pub fn push(&mut self, v: Verb) {
        self.verbs.push(v);
    }

    /// Hands the waiting verbs over, oldest first, and leaves `self` empty (with its
    /// buffer): give the buffer back with [`VerbQueue::restore`].
    pub fn take(&mut self) -> Vec<Verb> {
        std::mem::take(&mut self.verbs)
    }

    /// Takes back a buffer from [`VerbQueue::take`], emptied, unless verbs were issued
    /// meanwhile.
    pub fn restore(&mut self, mut buf: Vec<Verb>) {
        if self.verbs.is_empty() {
            buf.clear();
            self.verbs = buf;
        }
    }

    /// True when no verb waits.
    pub fn is_empty(&self) -> bool {
        self.verbs.is_empty()
    }

    /// Posts on `qp` waiting to be carried out.
    pub fn posts_on(&self, qp: QpId) -> u32 {
        self.verbs.iter().filter(|v| matches!(v, Verb::Post(q, _) if *q == qp)).count() as u32
    }
}

/// The in-payload headers of WRs in flight, referenced by a slot number that the packets
/// of the WR carry (`Packet::app_hdr`). This is packet content stored out of line, as the
/// INT headers are: written once by the sender when it posts the WR, read by the receiver
/// when the WR's last byte is placed, never changed. Append-only: one slot per WR that has
/// a header, 24 bytes each, so growth is amortised and nothing is freed during a run.
#[derive(Clone, Debug, Default)]
pub struct Headers {
    slots: Vec<AppHeader>,
}

impl Headers {
    /// Stores a header; returns the slot the packets carry.
    pub fn write(&mut self, h: AppHeader) -> HeaderSlot {
        self.slots.push(h);
        HeaderSlot::new(self.slots.len() - 1)
    }

    /// The header in `slot`.
    #[inline]
    pub fn read(&self, slot: HeaderSlot) -> AppHeader {
        self.slots[slot.idx()]
    }

    /// Slots written so far.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no header was written.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}
