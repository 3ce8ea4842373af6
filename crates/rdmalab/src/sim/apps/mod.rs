//! The simulator side of the one application layer (`app`): the table of every
//! application of the run (`Apps`, indexed by `AppId`), the verbs an application calls on
//! its host (`HostVerbs`), and the hook between the RNIC and the applications.
//!
//! The RNIC calls in at three places, none per packet: a WR of an application completes at
//! the sender (`complete_messages`, or `send_data` for the last packet of a WR that asked
//! for it), a WR carrying an application header is placed at the receiver (the in-order
//! last packet, `receive_data`), and an application's timer fires (`Event::App`). Each
//! call is routed by application id to that application's handler, which acts on its own
//! host through [`Verbs`] only.
//!
//! One file per kind of application: `attacks` (seed 002's staggered transfers and
//! overlay members), `multipath` (seed 001's partition) and `virtuoso` (seed 003),
//! `closed_loop` (seed 000's applications and host model) with `drum` (its per-host
//! schedulers), `drum_control` and `drum_inband` (their network-wide control).

mod attacks;
mod closed_loop;
mod drum;
mod drum_control;
mod drum_inband;
mod multipath;
mod virtuoso;

pub use attacks::AppPost;
pub(super) use attacks::AppRun;
pub(super) use closed_loop::HostModel;
pub(super) use drum::PERIOD;

use crate::app::{AppHeader, AppId, AppKind, HeaderSlot, Headers, RecvCompletion, SendCompletion, Verbs, Wr};
use crate::ids::{FlowId, NodeId, QpId};
use crate::multipath::virtuoso::{VirtuosoReceiver, VirtuosoSender};
use crate::multipath::{MpReceiver, MpSender};
use crate::rnic::Message;
use crate::sim::{Event, Simulation};
use crate::units::Time;
use crate::workload::FlowSpec;

/// Every application instance of the run and what they share with the RNIC (their
/// headers in flight). Setup-time bookkeeping (`conns`, `messages`) is read only to
/// report results.
#[derive(Debug, Default)]
pub(in crate::sim) struct Apps {
    pub(in crate::sim) kinds: Vec<AppKind>,
    pub(in crate::sim) headers: Headers,
    pub(in crate::sim) senders: Vec<MpSender>,
    pub(in crate::sim) receivers: Vec<MpReceiver>,
    pub(in crate::sim) vsenders: Vec<VirtuosoSender>,
    pub(in crate::sim) vreceivers: Vec<VirtuosoReceiver>,
    pub(in crate::sim) conns: Vec<Conn>,
    /// Global message id -> (connection, index in its sender, ideal FCT).
    pub(in crate::sim) messages: Vec<(u32, u32, Time)>,
    /// The latest time a message is posted at: until then more work may start, so the
    /// stall watchdog must not call the run stuck (`sim::watch`).
    pub(in crate::sim) last_post: Time,
}

/// A multipath connection as set up. Its two halves sit at index `half` of the arenas of
/// its split (`senders`/`receivers`, or `vsenders`/`vreceivers`).
#[derive(Debug)]
pub(in crate::sim) struct Conn {
    pub(in crate::sim) src: NodeId,
    pub(in crate::sim) dst: NodeId,
    /// Application id of the sending half.
    pub(in crate::sim) sender: AppId,
    /// QPs from `src` to `dst`, by slot (path).
    pub(in crate::sim) qps: Vec<QpId>,
    /// QPs from `dst` back to `src` by path (Virtuoso's READ data); empty otherwise.
    pub(in crate::sim) reverse: Vec<QpId>,
    pub(in crate::sim) disconnected: bool,
    pub(in crate::sim) virtuoso: bool,
    pub(in crate::sim) half: u32,
    /// How long `dst` takes to learn that the connection closed (the first path's
    /// propagation delay): in the origin order its own QPs (`reverse`) close that much
    /// later, since one host never changes another's state at once (`sim::parallel`).
    pub(in crate::sim) notice: Time,
}

impl Apps {
    /// Messages posted on multipath connections (each counts as a flow of the run).
    pub(in crate::sim) fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// Adds an application of kind `kind` to the table; returns its id.
    pub(in crate::sim) fn add(&mut self, kind: AppKind) -> AppId {
        self.kinds.push(kind);
        AppId::new(self.kinds.len() - 1)
    }

    /// The id the next application added will get.
    pub(in crate::sim) fn next_id(&self) -> AppId {
        AppId::new(self.kinds.len())
    }

    /// True when `app` is an attack generator, which hears of its acknowledged chunks
    /// together, after its QP's slot may have been released (`sim::host`).
    #[inline]
    pub(in crate::sim) fn hears_chunks(&self, app: AppId) -> bool {
        !app.is_none() && matches!(self.kinds[app.idx()], AppKind::Attack(_))
    }

    /// True when `app` learns of its failed WRs (`sim::retry`), so that a QP carrying them is
    /// left to it rather than abandoned as a flow's (`sim::failures`). An attack generator's
    /// chunks are given up as flows are.
    pub(in crate::sim) fn learns_of_failures(&self, app: AppId) -> bool {
        !app.is_none() && !matches!(self.kinds[app.idx()], AppKind::Attack(_))
    }
}

/// The verbs of one application on its host.
pub(in crate::sim) struct HostVerbs<'a> {
    pub(in crate::sim) sim: &'a mut Simulation,
    pub(in crate::sim) app: AppId,
}

impl Verbs for HostVerbs<'_> {
    fn now(&self) -> Time {
        self.sim.now
    }

    fn post(&mut self, qp: QpId, wr: Wr) {
        let hdr = wr.header.map_or(HeaderSlot::NONE, |h| self.sim.apps.headers.write(h));
        // A WR with a header carries part of message `data_id`, which is flow row
        // `flows + data_id` of the results (rate samples label QPs by it).
        let flow = wr.header.map_or(FlowId::NONE, |h| FlowId((self.sim.flows.len() as u64 + h.data_id) as u32));
        let m = Message {
            flow,
            end: 0,
            size: wr.bytes,
            posted: self.sim.now,
            app: self.app,
            cookie: wr.cookie,
            hdr,
            notify_sent: wr.notify_sent,
        };
        self.sim.post_wqe(qp, m);
    }

    fn wake(&mut self, at: Time, token: u32) {
        self.sim.queue.push(at.max(self.sim.now), Event::App(self.app, token));
    }

    fn retransmissions(&self, qp: QpId) -> u32 {
        self.sim.qps[qp.idx()].rewinds
    }

    fn reconnect(&mut self, qp: QpId) {
        crate::sim::mech::retry::reconnect(&mut self.sim.qps[qp.idx()]);
    }

    fn open_qp(&mut self, f: &FlowSpec, rx: AppId) -> QpId {
        self.sim.open_kept_qp(f, rx)
    }

    fn close_qp(&mut self, qp: QpId) {
        self.sim.close_app_qp(qp);
    }
}

impl Simulation {
    /// Opens a QP like `f` for an application: it stays open until the application closes
    /// it (`close_app_qp`), and what it delivers is heard of by application `rx` on the
    /// receiving host ([`AppId::NONE`]: by none). Every QP an application keeps is opened
    /// here.
    pub(in crate::sim) fn open_kept_qp(&mut self, f: &FlowSpec, rx: AppId) -> QpId {
        let qp = self.open_qp(f);
        let q = &mut self.qps[qp.idx()];
        q.close_when_idle = false;
        q.rx.app = rx;
        qp
    }

    /// Runs `f` on the state of application `app` (what `pick` selects in the table),
    /// taken out of the table for the call so that `f` can act through the application's
    /// verbs, and puts it back: the one way a handler holding state runs.
    pub(super) fn with_app<T: Default, R>(
        &mut self,
        app: AppId,
        pick: impl Fn(&mut Apps) -> &mut T,
        f: impl FnOnce(&mut T, &mut HostVerbs<'_>) -> R,
    ) -> R {
        let mut state = std::mem::take(pick(&mut self.apps));
        let out = f(&mut state, &mut HostVerbs { sim: self, app });
        *pick(&mut self.apps) = state;
        out
    }

    /// A QP of a connection that closed: it closes once everything posted is acknowledged.
    pub(in crate::sim) fn close_app_qp(&mut self, qp: QpId) {
        self.qps[qp.idx()].close_when_idle = true;
        self.close_if_idle(qp);
    }

    /// A WR of application `app` completed at its sender.
    pub(in crate::sim) fn app_send_done(&mut self, app: AppId, c: SendCompletion) {
        match self.apps.kinds[app.idx()] {
            AppKind::MpSender(i) => self.mp_send_done(app, i, c),
            AppKind::VSender(i) => self.virtuoso_send_done(app, i, c),
            AppKind::Closed(i) => self.closed_send_done(i, c),
            // (A generator hears of its chunks together: `app_chunks_done`.)
            AppKind::Attack(_) | AppKind::MpReceiver(_) | AppKind::VReceiver(_) | AppKind::DrumCtl(_) => {}
        }
    }

    /// A WR with header slot `hdr` was placed at the receiver's application `app`.
    pub(in crate::sim) fn app_recv_done(&mut self, app: AppId, qp: QpId, hdr: HeaderSlot, bytes: u64) {
        let header: AppHeader = self.apps.headers.read(hdr);
        let c = RecvCompletion { qp, bytes, header, time: self.now };
        match self.apps.kinds[app.idx()] {
            AppKind::MpReceiver(i) => {
                let h = self.apps.conns[i as usize].half as usize;
                self.apps.receivers[h].on_receive(c)
            }
            AppKind::VReceiver(_) | AppKind::VSender(_) => self.virtuoso_recv_done(app, c),
            AppKind::DrumCtl(who) => self.drum_inband_recv(who, c),
            AppKind::MpSender(_) | AppKind::Closed(_) | AppKind::Attack(_) => {}
        }
    }

    /// A timer of application `app` fired.
    pub(in crate::sim) fn on_app_timer(&mut self, app: AppId, token: u32) {
        match self.apps.kinds[app.idx()] {
            AppKind::MpSender(i) => self.mp_timer(app, i, token),
            AppKind::VSender(i) => self.virtuoso_timer(app, i, token),
            AppKind::Closed(i) => self.closed_timer(i, token),
            AppKind::Attack(i) => self.stagger_turn(i),
            AppKind::MpReceiver(_) | AppKind::VReceiver(_) | AppKind::DrumCtl(_) => {}
        }
    }

    /// After a flow or message completed (or was given up): notes the time as the last
    /// completion, and if that was the last and a connection is still
    /// open (not `mp_disconnect`ed), ask `run` to stop rather than idle through its timers.
    pub(in crate::sim) fn note_work_done(&mut self) {
        self.last_completion = self.now;
        // (A partition sees only its own completions: the parallel driver decides.)
        let all_done = self.flows_done == self.work_total() && self.part.is_none();
        if all_done && self.apps.conns.iter().any(|c| !c.disconnected) {
            self.all_done_but_idle_apps = true;
        }
    }
}
