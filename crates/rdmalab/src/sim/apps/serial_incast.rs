//! The Blitz poster's serial incast on the hosts (`workload::serial_incast`): the aggregator grants
//! the senders of each round one at a time, a grant being a `GRANT_BYTES` message on the
//! fabric; a sender posts its round's message once its grant and its message are both
//! there; the aggregator grants the next sender when that message has arrived whole.
//!
//! Both ends are rows of the application table (`AppKind::Attack`, run by `AppRun`
//! variants) and learn of each other only through what crosses the network: the grant
//! reaches the sender as a receive completion on the sender's host, the message reaches
//! the aggregator as one on the aggregator's. The aggregator's timer is a round's start.

use std::collections::VecDeque;

use super::{AppRun, AppState};
use crate::app::{AppHeader, AppId, AppKind, RecvCompletion, Verbs};
use crate::ids::{FlowId, QpId};
use crate::rnic::Message;
use crate::sim::{Event, Simulation};
use crate::workload::serial_incast::{grant_target, GrantAggregator, GrantSender, GRANT_BYTES};
use crate::workload::FlowSpec;

/// The application opcode of a grant (a sender's message carries `DATA`).
const GRANT: u8 = 1;
const DATA: u8 = 2;

/// The aggregator as it runs.
#[derive(Debug)]
pub(in crate::sim) struct AggregatorRun {
    pub(super) spec: GrantAggregator,
    /// Its QP to each member (opened at setup).
    grant_qps: Vec<QpId>,
    /// Grants sent so far (the next one's index, `grant_target`).
    granted: u64,
    /// Grants whose round has started.
    due: u64,
    /// A granted message has not yet arrived.
    waiting: bool,
}

/// A sender as it runs.
#[derive(Debug)]
pub(in crate::sim) struct SenderRun {
    pub(super) spec: GrantSender,
    /// Its QP to the aggregator (opened at setup).
    qp: QpId,
    /// Grants not yet used.
    grants: u32,
    /// Its flows that started and wait for a grant, oldest first.
    ready: VecDeque<FlowId>,
    /// Its flows posted and not yet acknowledged, oldest first.
    sent: VecDeque<FlowId>,
    /// Messages posted so far (the next one's cookie).
    posted: u32,
}

impl AggregatorRun {
    pub(super) fn new(spec: GrantAggregator) -> AggregatorRun {
        let n = spec.senders.len();
        AggregatorRun { spec, grant_qps: vec![QpId::NONE; n], granted: 0, due: 0, waiting: false }
    }
}

impl SenderRun {
    pub(super) fn new(spec: GrantSender) -> SenderRun {
        SenderRun { spec, qp: QpId::NONE, grants: 0, ready: VecDeque::new(), sent: VecDeque::new(), posted: 0 }
    }
}

impl Simulation {
    /// Round `round` of aggregator `app` starts: its grants are due; wake for the next round.
    pub(super) fn serial_round(&mut self, app: AppId, round: u32) {
        let AppRun::Aggregator(run) = self.apps.state_mut(app).attack_mut() else { return };
        let members = run.spec.senders.len() as u64;
        run.due = (round as u64 + 1) * members;
        if round + 1 < run.spec.rounds {
            let at = run.spec.round_start(round + 1);
            self.queue.push(at, Event::App(app, round + 1));
        }
        self.serial_grant(app);
    }

    /// Sets up serial application `app` (a row of the table): its QPs, opened here so that
    /// every partition of a parallel run names them alike and knows which application
    /// hears what they deliver, and the aggregator's first round.
    pub(super) fn serial_set_up(&mut self, app: AppId) {
        match self.apps.state(app).attack() {
            AppRun::Aggregator(run) => {
                let s = &run.spec;
                let first = s.round_start(0);
                let grants: Vec<FlowSpec> = s
                    .senders
                    .iter()
                    .map(|&(member, _)| FlowSpec {
                        pg: s.pg,
                        dport: crate::workload::generators::INCAST_DPORT,
                        tenant: s.tenant,
                        ..FlowSpec::new(s.host, member, GRANT_BYTES, first)
                    })
                    .collect();
                let members: Vec<AppId> = s.senders.iter().map(|&(_, a)| a).collect();
                let qps = grants.iter().zip(members).map(|(f, to)| self.open_kept_qp(f, to)).collect();
                let AppRun::Aggregator(run) = self.apps.state_mut(app).attack_mut() else { unreachable!() };
                run.grant_qps = qps;
                self.queue.push(first, Event::App(app, 0));
            }
            AppRun::Sender(run) => {
                let to = run.spec.aggregator_app;
                let Some(&f) = self.flows.iter().find(|f| f.app == app) else { return };
                let qp = self.open_kept_qp(&f, to);
                let AppRun::Sender(run) = self.apps.state_mut(app).attack_mut() else { unreachable!() };
                run.qp = qp;
            }
            _ => {}
        }
    }

    /// Sends the next due grant unless a granted message is still on its way or the grant's
    /// send queue is full (`[rnic] max_send_wr`: a grant completing sends it).
    pub(super) fn serial_grant(&mut self, app: AppId) {
        let AppRun::Aggregator(run) = self.apps.state_mut(app).attack_mut() else { return };
        if run.waiting || run.granted >= run.due {
            return;
        }
        let (round, i) = grant_target(run.granted, run.spec.senders.len());
        let qp = run.grant_qps[i];
        if self.app_verbs(app, |v| v.sq_room(qp)) == 0 {
            return;
        }
        let AppRun::Aggregator(run) = self.apps.state_mut(app).attack_mut() else { unreachable!() };
        let g = run.granted;
        run.granted += 1;
        run.waiting = true;
        let last_round = round + 1 == run.spec.rounds;
        let header = AppHeader { data_id: round as u64, op: GRANT, ..AppHeader::default() };
        self.qps[qp.idx()].finished = false;
        self.serial_post(app, qp, GRANT_BYTES, round, header, FlowId::NONE);
        self.serial_trace_post(app, g, i as u32, qp, GRANT_BYTES);
        if last_round {
            self.app_verbs(app, |v| v.close_qp(qp));
        }
    }

    /// Posts one WR of application `app` with its header on `qp` and lets the NIC send it.
    fn serial_post(&mut self, app: AppId, qp: QpId, bytes: u64, cookie: u32, h: AppHeader, flow: FlowId) {
        let hdr = self.apps.headers.write(h);
        let m = Message { flow, end: 0, size: bytes, posted: self.now, app, cookie, hdr, notify_sent: false };
        self.post_wqe(qp, m);
        let nic = self.qps[qp.idx()].nic;
        self.nic_kick(nic);
    }

    /// A serial application's WR arrived whole on its host: a grant at a sender, a
    /// message at the aggregator.
    pub(super) fn serial_recv(&mut self, app: AppId, c: RecvCompletion) {
        match (self.apps.state_mut(app), c.header.op) {
            (AppState::Attack(AppRun::Sender(run)), GRANT) => {
                run.grants += 1;
                self.serial_send(app);
            }
            (AppState::Attack(AppRun::Aggregator(run)), DATA) => {
                run.waiting = false;
                self.serial_grant(app);
            }
            _ => {}
        }
    }

    /// Flow `flow` of sender `app` starts: it waits for a grant.
    pub(super) fn serial_admit(&mut self, app: AppId, flow: FlowId) {
        let AppRun::Sender(run) = self.apps.state_mut(app).attack_mut() else { return };
        run.ready.push_back(flow);
        self.serial_send(app);
    }

    /// Posts sender `app`'s oldest waiting message if a grant is there for it and its send
    /// queue has room (`[rnic] max_send_wr`: else a completion posts it).
    fn serial_send(&mut self, app: AppId) {
        let AppRun::Sender(run) = self.apps.state_mut(app).attack_mut() else { return };
        if run.grants == 0 || run.ready.is_empty() {
            return;
        }
        let qp = run.qp;
        if self.app_verbs(app, |v| v.sq_room(qp)) == 0 {
            return;
        }
        let AppRun::Sender(run) = self.apps.state_mut(app).attack_mut() else { unreachable!() };
        let flow = run.ready.pop_front().expect("checked");
        run.grants -= 1;
        run.sent.push_back(flow);
        let (cookie, last) = (run.posted, run.posted + 1 == run.spec.messages);
        run.posted += 1;
        let qp = run.qp;
        let f = self.flows[flow.idx()];
        let header = AppHeader { data_id: cookie as u64, total: f.size, op: DATA, ..AppHeader::default() };
        self.qps[qp.idx()].finished = false;
        self.serial_post(app, qp, f.size, cookie, header, flow);
        self.serial_trace_post(app, flow.0 as u64, 0, qp, f.size);
        if last {
            self.app_verbs(app, |v| v.close_qp(qp));
        }
    }

    /// `n` messages of sender `app` are acknowledged on `qp`: each is one flow's record,
    /// its completion time counted from the flow's start (the wait for a grant included).
    pub(super) fn serial_sent(&mut self, app: AppId, n: u64, qp: QpId) {
        self.serial_trace_done(app, n, qp);
        for _ in 0..n {
            let AppRun::Sender(run) = self.apps.state_mut(app).attack_mut() else { return };
            let flow = run.sent.pop_front().expect("an acknowledged message was sent");
            self.record_transfer(flow, qp);
        }
        self.serial_send(app); // a message held for room
    }

    /// `n` grants of aggregator `app` are acknowledged on `qp`: the next due one goes if it
    /// was held for room.
    pub(super) fn serial_granted(&mut self, app: AppId, n: u64, qp: QpId) {
        self.serial_trace_done(app, n, qp);
        self.serial_grant(app);
    }

    /// Notes a serial WR in the trace (`SimConfig::trace_apps`): a grant (`chunk` its index
    /// in the run, `slot` its member) or a sender's message (`chunk` its flow).
    fn serial_trace_post(&mut self, app: AppId, chunk: u64, slot: u32, qp: QpId, size: u64) {
        if let (true, AppKind::Attack(i)) = (self.cfg.trace_apps, self.apps.kind(app)) {
            self.trace_post(i, chunk, slot, qp, size);
        }
    }

    /// Notes in the trace that the oldest `n` traced WRs of `app` on `qp` are acknowledged
    /// (one QP completes in post order).
    fn serial_trace_done(&mut self, app: AppId, n: u64, qp: QpId) {
        let (true, AppKind::Attack(i)) = (self.cfg.trace_apps, self.apps.kind(app)) else { return };
        let now = self.now;
        let open = self.app_posts.iter_mut().filter(|p| p.app == i && p.qp == qp && p.done.is_none());
        open.take(n as usize).for_each(|p| p.done = Some(now));
    }
}
