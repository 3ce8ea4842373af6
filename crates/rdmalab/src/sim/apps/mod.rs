//! The simulator side of the one application layer (`app`): the table of every
//! application of the run (`Apps`, a row per `AppId` with its kind and state: `table`),
//! the verbs an application calls on its host (`HostVerbs`), and the hook between the RNIC
//! and the applications.
//!
//! The RNIC calls in at three places, none per packet: a WR of an application completes at
//! the sender (`complete_messages`, or `send_data` for the last packet of a WR that asked
//! for it), a WR carrying an application header is placed at the receiver (the in-order
//! last packet, `receive_data`), and an application's timer fires (`Event::App`: every
//! kind's, DRUM's schedulers and control loop included). Each call is routed by
//! application id to that application's handler, which acts on its own host through
//! [`Verbs`] only: the verbs it issues wait in the run's `VerbQueue` and the simulator
//! carries them out, in order, once the handler returns (`carry_out_verbs`).
//!
//! One file per kind of application: `attacks` (the CC-attack paper's staggered transfers) and
//! `overlay` (its shuffled-overlay members), `multipath` (the data-partition paper's split) and `virtuoso` (the Virtuoso paper),
//! `serial_incast` (the Blitz poster's grants), `closed_loop` (the DRUM paper's applications and host
//! model) with `drum` (its per-host
//! schedulers), `drum_control` and `drum_inband` (their network-wide control).

mod attacks;
mod closed_loop;
mod collective;
mod drum;
mod drum_control;
mod drum_inband;
mod multipath;
mod overlay;
mod send_queue;
mod serial_incast;
mod table;
mod trace_table;
mod virtuoso;

pub use attacks::AppPost;
pub(super) use attacks::AppRun;
pub(super) use closed_loop::HostModel;
pub(in crate::sim) use table::{AppState, Apps, Conn};

use crate::app::{AppHeader, AppId, AppKind, HeaderSlot, PostError, RecvCompletion, SendCompletion, Verb, Verbs, Wr};
use crate::ids::{FlowId, QpId};
use crate::rnic::Message;
use crate::sim::{Event, Simulation};
use crate::units::Time;
use crate::workload::FlowSpec;

/// The verbs of one application on its host, as its handler sees them: it reads the time
/// and its QPs' go-back-N rounds, opens QPs at once (as `ibv_create_qp` returns the QP),
/// and issues every other verb into the run's [`VerbQueue`], which the simulator carries
/// out in order once the handler returns (`carry_out_verbs`).
pub(in crate::sim) struct HostVerbs<'a> {
    sim: &'a mut Simulation,
}

impl Verbs for HostVerbs<'_> {
    fn now(&self) -> Time {
        self.sim.now
    }

    fn post(&mut self, qp: QpId, wr: Wr) -> Result<(), PostError> {
        if self.sq_room(qp) == 0 {
            return Err(PostError::SendQueueFull);
        }
        self.sim.apps.verbs.push(Verb::Post(qp, wr));
        Ok(())
    }

    fn sq_room(&self, qp: QpId) -> u32 {
        let in_engine = send_queue::in_engine(&self.sim.nics, &self.sim.qps, qp).0;
        self.sim.qps[qp.idx()].sq_room(in_engine).saturating_sub(self.sim.apps.verbs.posts_on(qp))
    }

    fn wake(&mut self, at: Time, token: u32) {
        self.sim.apps.verbs.push(Verb::Wake(at, token));
    }

    fn retransmissions(&self, qp: QpId) -> u32 {
        self.sim.qps[qp.idx()].rewinds
    }

    fn reconnect(&mut self, qp: QpId) {
        self.sim.apps.verbs.push(Verb::Reconnect(qp));
    }

    fn open_qp(&mut self, f: &FlowSpec, rx: AppId) -> QpId {
        self.sim.open_kept_qp(f, rx)
    }

    fn close_qp(&mut self, qp: QpId) {
        self.sim.apps.verbs.push(Verb::CloseQp(qp));
    }
}

impl Simulation {
    /// Opens a QP like `f` for an application: it stays open until the application closes
    /// it (`close_app_qp`), and what it delivers is heard of by application `rx` on the
    /// receiving host ([`AppId::NONE`]: by none). Every QP an application keeps is opened
    /// here, its send queue `max_send_wr` deep (`[rnic]`; the host model sets its own).
    pub(in crate::sim) fn open_kept_qp(&mut self, f: &FlowSpec, rx: AppId) -> QpId {
        let qp = self.open_qp(f);
        let q = &mut self.qps[qp.idx()];
        q.close_when_idle = false;
        q.rx.app = rx;
        q.sq_depth = self.cfg.max_send_wr;
        qp
    }

    /// Runs `f` on the state of application `app` (of the kind `pick` expects), taken out
    /// of its row for the call so that `f` can issue the application's verbs, puts it back,
    /// and carries the verbs out: the one way a handler holding state runs.
    pub(super) fn with_app<T, R>(
        &mut self,
        app: AppId,
        pick: impl FnOnce(&mut AppState) -> &mut T,
        f: impl FnOnce(&mut T, &mut HostVerbs<'_>) -> R,
    ) -> R {
        let mut state = std::mem::take(self.apps.state_mut(app));
        let out = f(pick(&mut state), &mut HostVerbs { sim: self });
        *self.apps.state_mut(app) = state;
        self.carry_out_verbs(app);
        out
    }

    /// Runs `f` with the verbs of application `app` (a handler whose state the simulator
    /// keeps), then carries out what it issued.
    pub(super) fn app_verbs<R>(&mut self, app: AppId, f: impl FnOnce(&mut HostVerbs<'_>) -> R) -> R {
        let out = f(&mut HostVerbs { sim: self });
        self.carry_out_verbs(app);
        out
    }

    /// Carries out the verbs application `app`'s handler issued, in its order. (Carrying
    /// out a verb runs no handler, so none is issued meanwhile.)
    fn carry_out_verbs(&mut self, app: AppId) {
        let verbs = self.apps.verbs.take();
        for &v in &verbs {
            match v {
                Verb::Post(qp, wr) => self.app_post(app, qp, wr),
                Verb::Wake(at, token) => self.queue.push(at.max(self.now), Event::App(app, token)),
                Verb::Reconnect(qp) => {
                    crate::sim::mech::retry::reconnect(&mut self.qps[qp.idx()]);
                    self.mark_if_unsent(qp); // resumed at its first failed WR
                    self.nic_changed(self.qps[qp.idx()].nic); // (no kick follows)
                }
                Verb::CloseQp(qp) => self.close_app_qp(qp),
            }
        }
        debug_assert!(self.apps.verbs.is_empty(), "a verb ran a handler");
        self.apps.verbs.restore(verbs);
    }

    /// Posts `wr` of application `app` on `qp`: its header into the slab, its bytes
    /// through the NIC's WQE engine onto the QP.
    fn app_post(&mut self, app: AppId, qp: QpId, wr: Wr) {
        let hdr = wr.header.map_or(HeaderSlot::NONE, |h| self.apps.headers.write(h));
        // A WR with a header carries part of message `data_id`, which is flow row
        // `flows + data_id` of the results (rate samples label QPs by it).
        let flow = wr.header.map_or(FlowId::NONE, |h| FlowId((self.flows.len() as u64 + h.data_id) as u32));
        let m = Message {
            flow,
            end: 0,
            size: wr.bytes,
            posted: self.now,
            app,
            cookie: wr.cookie,
            hdr,
            notify_sent: wr.notify_sent,
        };
        self.post_wqe(qp, m);
    }

    /// A QP of a connection that closed: it closes once everything posted is acknowledged.
    pub(in crate::sim) fn close_app_qp(&mut self, qp: QpId) {
        self.qps[qp.idx()].close_when_idle = true;
        self.close_if_idle(qp);
    }

    /// A WR of application `app` completed at its sender.
    pub(in crate::sim) fn app_send_done(&mut self, app: AppId, c: SendCompletion) {
        match self.apps.kind(app) {
            AppKind::MpSender(i) => self.mp_send_done(app, i, c),
            AppKind::VSender(i) => self.virtuoso_send_done(app, i, c),
            AppKind::Closed(i) => self.closed_send_done(i, c),
            AppKind::Rank(_) => self.rank_send_done(app, c),
            AppKind::VReceiver(_) => self.with_app(app, AppState::v_receiver_mut, |r, v| r.on_send_done(c, v)),
            // (A generator hears of its chunks together: `app_chunks_done`.)
            AppKind::Attack(_)
            | AppKind::MpReceiver(_)
            | AppKind::DrumAgent(_)
            | AppKind::DrumNet
            | AppKind::DrumCtl(_) => {}
        }
    }

    /// A WR with header slot `hdr` was placed at the receiver's application `app`. (Out of
    /// line: once per WR, called from the per-packet receive path, which must not grow.)
    #[inline(never)]
    pub(in crate::sim) fn app_recv_done(&mut self, app: AppId, qp: QpId, hdr: HeaderSlot, bytes: u64) {
        let header: AppHeader = self.apps.headers.read(hdr);
        let c = RecvCompletion { qp, bytes, header, time: self.now };
        match self.apps.kind(app) {
            AppKind::MpReceiver(_) => self.apps.state_mut(app).mp_receiver_mut().on_receive(c),
            AppKind::VReceiver(_) | AppKind::VSender(_) => self.virtuoso_recv_done(app, c),
            AppKind::DrumCtl(who) => self.drum_inband_recv(who, c),
            AppKind::Attack(_) => self.serial_recv(app, c),
            AppKind::Rank(_) => self.rank_recv_done(app, c),
            AppKind::MpSender(_) | AppKind::Closed(_) | AppKind::DrumAgent(_) | AppKind::DrumNet => {}
        }
    }

    /// A timer of application `app` fired.
    pub(in crate::sim) fn on_app_timer(&mut self, app: AppId, token: u32) {
        match self.apps.kind(app) {
            AppKind::MpSender(_) => self.mp_timer(app, token),
            AppKind::VSender(i) => self.virtuoso_timer(app, i, token),
            AppKind::Closed(i) => self.closed_timer(i, token),
            AppKind::Attack(i) => self.stagger_turn(i, token),
            AppKind::DrumAgent(ag) => self.drum_timer(ag, token),
            AppKind::DrumNet => self.drum_net_timer(token),
            AppKind::Rank(_) => self.rank_timer(app, token),
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
