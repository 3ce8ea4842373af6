//! Host applications: schedules that post messages on QPs their host opens and closes
//! over time (the CC-attack paper's staggered transfers and shuffled-overlay members,
//! `workload::attacks`).
//!
//! A generator is a row of the one application table (`AppKind::Attack`, its id its index
//! in the scenario's list). It belongs to one sending host and touches only that host's
//! QPs. It wakes on its own timer (`Event::App`) and hears of its chunks' completions from
//! its own host's ACK processing (`app_chunks_done`), so nothing here reaches into another
//! node. A chunk is a WR of the generator whose cookie (and `Message::flow`) is its chunk
//! number; the transfer as a whole is the one flow the scenario listed, and is reported
//! once, when its last chunk completes. A chunk whose QP has no room (`[rnic]
//! max_send_wr`, `Verbs::sq_room`) waits in its slot and goes when a completion frees room,
//! as a program holds what `ibv_post_send` refused.

use super::overlay::PairRun;
use super::serial_incast::{AggregatorRun, SenderRun};
use super::AppState;
use crate::app::{AppId, AppKind, Verbs};
use crate::ids::{FlowId, HeaderSlot, NodeId, QpId};
use crate::rnic::Message;
use crate::sim::{Event, Simulation};
use crate::stats::FlowRecord;
use crate::units::Time;
use crate::workload::attacks::{HostApp, StaggerPolicy, Staggered};
use crate::workload::FlowSpec;

const NO_QP: QpId = QpId::NONE;
/// A generator's only timer token: the next chunk's turn.
const TURN: u32 = 0;

/// Chunk `k` of generator `app`, a WR of `size` bytes posted at `now`: its cookie, and the
/// flow its message reports, is the chunk number.
fn chunk_wr(app: AppId, k: u64, size: u64, now: Time) -> Message {
    let cookie = k as u32;
    Message { flow: FlowId(cookie), end: 0, size, posted: now, app, cookie, hdr: HeaderSlot::NONE, notify_sent: false }
}

/// A chunk an application posted (recorded with `SimConfig::trace_apps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppPost {
    /// The application (index in the scenario's list).
    pub app: u32,
    /// Chunk number (staggered), flow index (overlay, serial sender) or grant index in the
    /// run (serial aggregator).
    pub chunk: u64,
    /// Slot (staggered), destination host (overlay), the member a grant goes to (serial
    /// aggregator) or 0 (serial sender).
    pub slot: u32,
    /// When the chunk was posted on a QP (a recreate chunk waiting for its slot: later
    /// than its turn).
    pub time: Time,
    /// The QP it went on.
    pub qp: QpId,
    /// Bytes.
    pub size: u64,
    /// When its acknowledgement reached the generator (`None`: never; an overlay's
    /// messages are plain flows, reported as records instead).
    pub done: Option<Time>,
}

/// A running application.
#[derive(Debug)]
pub(in crate::sim) enum AppRun {
    Staggered(StaggeredRun),
    PairQps(PairRun),
    /// The Blitz poster's serial incast: its aggregator (`serial_incast`).
    Aggregator(AggregatorRun),
    /// The Blitz poster's serial incast: one of its senders.
    Sender(SenderRun),
}

#[derive(Debug)]
pub(in crate::sim) struct StaggeredRun {
    spec: Staggered,
    chunk: u64,
    interval: Time,
    /// The transfer's flow index (set when it is admitted).
    flow: FlowId,
    chunks: u64,
    /// Chunks whose turn has come.
    turned: u64,
    done: u64,
    slots: Vec<Slot>,
    /// The QP of the chunk that completed last (names the transfer in its record).
    last_qp: QpId,
}

/// One slot of a staggered transfer.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Its QP (`reuse`: for the whole transfer; `recreate`: the current chunk's).
    qp: QpId,
    /// Chunks whose turn came while the slot was busy (`recreate`: its QP carries a chunk;
    /// `reuse`: its QP's send queue is full), oldest first from `next_waiting` (they are
    /// every `qps`-th chunk): a count, bounded by the transfer's chunks.
    waiting: u64,
    next_waiting: u64,
}

impl Simulation {
    /// The attack generators of a scenario, with staggered defaults resolved on the path:
    /// the first rows of the application table.
    pub(in crate::sim) fn set_up_attack_apps(&mut self, specs: &[HostApp]) {
        debug_assert!(self.apps.len() == 0, "generators take the first application ids");
        for (i, run) in self.build_apps(specs).into_iter().enumerate() {
            let serial = matches!(run, AppRun::Aggregator(_) | AppRun::Sender(_));
            let app = self.apps.add(AppKind::Attack(i as u32), AppState::Attack(run));
            if serial {
                self.serial_set_up(app);
            }
        }
    }

    /// The state of attack generator `app` (its row and its index in the scenario's list).
    pub(super) fn attack_run(&mut self, app: u32) -> &mut AppRun {
        self.apps.state_mut(AppId(app)).attack_mut()
    }

    fn build_apps(&self, specs: &[HostApp]) -> Vec<AppRun> {
        specs
            .iter()
            .map(|a| match a {
                HostApp::Staggered(s) => {
                    let (rtt, bdp) = self.path_rtt_bdp(s.src, s.dst);
                    let chunk = s.chunk.unwrap_or(bdp.max(1));
                    let interval = match s.paced {
                        Some(n) => self.paced_interval(s.dst, chunk, n),
                        None => s.interval.unwrap_or(rtt),
                    };
                    let slot = Slot { qp: NO_QP, waiting: 0, next_waiting: 0 };
                    AppRun::Staggered(StaggeredRun {
                        spec: *s,
                        chunk,
                        interval,
                        flow: FlowId::NONE,
                        chunks: Staggered::chunks(s.size, chunk),
                        turned: 0,
                        done: 0,
                        slots: vec![slot; s.qps as usize],
                        last_qp: NO_QP,
                    })
                }
                HostApp::PairQps { host, planned } => AppRun::PairQps(PairRun::new(*host, planned)),
                HostApp::GrantAggregator(s) => AppRun::Aggregator(AggregatorRun::new(s.clone())),
                HostApp::GrantSender(s) => AppRun::Sender(SenderRun::new(s.clone())),
            })
            .collect()
    }

    /// The host attack generator `i` sends from.
    pub(in crate::sim) fn attack_host(&self, i: u32) -> NodeId {
        match self.apps.state(AppId(i)).attack() {
            AppRun::Staggered(run) => run.spec.src,
            AppRun::PairQps(run) => run.host(),
            AppRun::Aggregator(run) => run.spec.host,
            AppRun::Sender(run) => run.spec.host,
        }
    }

    /// A paced transfer's interval: `n` times a `chunk`'s time on `dst`'s link, its
    /// packets' headers included, so that `n` such transfers fill the link and no more.
    fn paced_interval(&self, dst: NodeId, chunk: u64, n: u32) -> Time {
        let mtu = self.cfg.mtu as u64;
        let wire = chunk + chunk.div_ceil(mtu) * (self.cfg.data_wire(0) as u64);
        Time(self.topo.nic_rate(dst).tx_time(wire).0 * n as u64)
    }

    /// Flow `flow` (carried by application `f.app`) starts now.
    pub(in crate::sim) fn app_admit(&mut self, flow: FlowId, f: FlowSpec) {
        let AppKind::Attack(app) = self.apps.kind(f.app) else { unreachable!("a flow names a generator") };
        match self.attack_run(app) {
            AppRun::Staggered(run) => {
                run.flow = flow;
                self.stagger_turn(app, TURN);
            }
            AppRun::Aggregator(_) => unreachable!("an aggregator carries no flow"),
            AppRun::Sender(_) => self.serial_admit(f.app, flow),
            AppRun::PairQps(_) => self.overlay_admit(app, flow, f),
        }
    }

    /// The next chunk's turn (generator `app`'s timer): post it on its slot (or queue it
    /// there), and wake for the one after.
    pub(in crate::sim) fn stagger_turn(&mut self, app: u32, token: u32) {
        let run = match self.apps.rows[app as usize].state.attack_mut() {
            AppRun::Staggered(run) => run,
            AppRun::Aggregator(_) => return self.serial_round(AppId(app), token),
            _ => return,
        };
        let k = run.turned;
        run.turned += 1;
        if run.turned < run.chunks {
            let (at, _) = Staggered::post(self.flows[run.flow.idx()].start, run.interval, run.spec.qps, run.turned);
            self.queue.push(at, Event::App(AppId(app), TURN));
        }
        let slot = (k % run.spec.qps as u64) as usize;
        let (s, reuse) = (run.slots[slot], run.spec.policy == StaggerPolicy::Reuse);
        // A recreate slot is busy while its QP carries a chunk; a reused QP while earlier
        // chunks wait for it or its send queue is full (`[rnic] max_send_wr`).
        let free = s.qp == NO_QP || reuse && s.waiting == 0 && self.stagger_room(app, s.qp) > 0;
        if free {
            return self.stagger_post(app, slot, k);
        }
        let AppRun::Staggered(run) = self.attack_run(app) else { unreachable!() };
        let s = &mut run.slots[slot];
        if s.waiting == 0 {
            s.next_waiting = k;
        }
        s.waiting += 1;
    }

    /// Free send-queue slots of generator `app`'s QP `qp` (`Verbs::sq_room`).
    fn stagger_room(&mut self, app: u32, qp: QpId) -> u32 {
        self.app_verbs(AppId(app), |v| v.sq_room(qp))
    }

    /// Posts chunk `k` on `slot`'s QP, opening one if the slot has none.
    fn stagger_post(&mut self, app: u32, slot: usize, k: u64) {
        let AppRun::Staggered(run) = self.apps.state(AppId(app)).attack() else { return };
        let (s, flow, qps) = (run.spec, run.flow, run.spec.qps as u64);
        let size = Staggered::chunk_size(s.size, run.chunk, k);
        let last_on_slot = k + qps >= run.chunks;
        let qp = match run.slots[slot].qp {
            NO_QP => {
                let f = self.flows[flow.idx()];
                let q = self.app_verbs(AppId(app), |v| v.open_qp(&FlowSpec { size, ..f }, AppId::NONE));
                let AppRun::Staggered(run) = self.attack_run(app) else { unreachable!() };
                run.slots[slot].qp = q;
                q
            }
            q => q,
        };
        let reuse = s.policy == StaggerPolicy::Reuse;
        let q = &mut self.qps[qp.idx()];
        crate::sim::mech::uet::align_post(q, self.cfg.mtu);
        q.post_message(chunk_wr(AppId(app), k, size, self.now));
        q.finished = false;
        self.nics[q.nic.idx()].mark(q);
        // A recreate QP carries one chunk; a reused one closes after its slot's last chunk.
        if !reuse || last_on_slot {
            self.app_verbs(AppId(app), |v| v.close_qp(qp));
        }
        self.trace_post(app, k, slot as u32, qp, size);
        let nic = self.qps[qp.idx()].nic;
        self.nic_kick(nic);
    }

    /// `n` chunks of application `app` from chunk `k` on, carried by `qp`, are
    /// acknowledged (its QP already closed if it was a recreate chunk).
    pub(in crate::sim) fn app_chunks_done(&mut self, app: AppId, k: u64, n: u64, qp: QpId) {
        let AppKind::Attack(i) = self.apps.kind(app) else { return };
        let run = match self.attack_run(i) {
            AppRun::Staggered(run) => run,
            AppRun::Sender(_) => return self.serial_sent(app, n, qp),
            AppRun::Aggregator(_) => return self.serial_granted(app, n, qp), // a grant held for room
            AppRun::PairQps(_) => return self.overlay_room(i, qp),           // flows held for room
        };
        let app = i;
        run.done += n;
        run.last_qp = qp;
        let slot = (k % run.spec.qps as u64) as usize;
        let reuse = run.spec.policy == StaggerPolicy::Reuse;
        if !reuse {
            run.slots[slot].qp = NO_QP;
        }
        // The slot's waiting chunks, oldest first: one into a freed recreate slot, as many
        // as the reused QP's send queue now has room for.
        let qps = run.spec.qps as u64;
        self.trace_done(app, k, n, qps);
        loop {
            let AppRun::Staggered(run) = self.attack_run(app) else { unreachable!() };
            if run.slots[slot].waiting == 0 || reuse && self.stagger_room(app, qp) == 0 {
                break;
            }
            let AppRun::Staggered(run) = self.attack_run(app) else { unreachable!() };
            let s = &mut run.slots[slot];
            let next = s.next_waiting;
            s.waiting -= 1;
            s.next_waiting += qps;
            self.stagger_post(app, slot, next);
            if !reuse {
                break;
            }
        }
        let AppRun::Staggered(run) = self.apps.state(AppId(app)).attack() else { unreachable!() };
        if run.done == run.chunks {
            self.record_transfer(run.flow, run.last_qp);
        }
    }

    /// The staggered transfer `flow` is complete: one record for all its chunks.
    pub(super) fn record_transfer(&mut self, flow: FlowId, last_qp: QpId) {
        let f = self.flows[flow.idx()];
        let qp = &self.qps[last_qp.idx()];
        self.push_record(FlowRecord {
            flow: flow.0,
            src: f.src,
            dst: f.dst,
            sip: qp.sip,
            dip: qp.dip,
            sport: qp.sport,
            dport: qp.dport,
            size: f.size,
            start: f.start,
            fct: self.now - f.start,
            ideal: self.ideal[flow.idx()],
            // Per-QP counts are kept for plain flows only.
            retx_packets: 0,
            nacks: 0,
            timeouts: 0,
            rx: Default::default(),
            tenant: f.tenant,
        });
        self.flows_done += 1;
        self.note_work_done();
    }

    pub(super) fn trace_post(&mut self, app: u32, chunk: u64, slot: u32, qp: QpId, size: u64) {
        if self.cfg.trace_apps {
            self.app_posts.push(AppPost { app, chunk, slot, time: self.now, qp, size, done: None });
        }
    }

    /// Notes in the trace when chunks `k`, `k + qps`, ... (`n` of them) of `app` completed.
    fn trace_done(&mut self, app: u32, k: u64, n: u64, qps: u64) {
        if self.cfg.trace_apps {
            for c in (0..n).map(|i| k + i * qps) {
                let p = self.app_posts.iter_mut().rev().find(|p| p.app == app && p.chunk == c);
                p.expect("a traced chunk completes once").done = Some(self.now);
            }
        }
    }
}
