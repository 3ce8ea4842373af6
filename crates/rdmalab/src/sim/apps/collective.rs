//! Dependency-driven jobs (`app::deps`) and the collectives built on them
//! (`app::collective`): their setup (a QP per sender, receiver and lane, a `RankApp` row per
//! host), the routing of their completions and timers, and their records.

use std::collections::HashMap;

use super::AppState;
use crate::app::collective::{part_record, records, Collective, CollectiveRecord, RecordedPart, TransferTimes};
use crate::app::deps::{TransferGraph, Trigger};
use crate::app::rank::{JobIndex, RankApp, NOTICE, START};
use crate::app::trace_nodes::{JobRecords, TraceNodes};
use crate::app::{AppId, AppKind, RecvCompletion, SendCompletion};
use crate::error::{Error, Result};
use crate::ids::{NodeId, QpId};
use crate::rnic::transport::Transport;
use crate::sim::{Event, Simulation};
use crate::stats::FlowRecord;
use crate::units::Time;
use crate::workload::FlowSpec;

/// A job as set up: its graph, each host's row of the application table, and the collective
/// it carries out (if it is one).
#[derive(Debug)]
pub(in crate::sim) struct Job {
    pub(in crate::sim) graph: TransferGraph,
    pub(in crate::sim) apps: Vec<AppId>,
    pub(in crate::sim) collective: Option<(Collective, usize)>,
    /// Parts recorded as collectives of their own (a SimAI iteration's communications).
    pub(in crate::sim) parts: Vec<RecordedPart>,
    /// A trace-driven job's nodes (`res.chakra`, `sim/apps/trace_table.rs`).
    pub(in crate::sim) nodes: Option<TraceNodes>,
    /// Data id of its first transfer: its flow row is the run's flows plus this.
    pub(in crate::sim) id_base: u64,
    /// Remote dependencies (`TransferGraph::with_remote`), by the event that fires them
    /// (transfer, `true` for received): who is told, and when. Empty for collectives.
    pub(in crate::sim) notices: HashMap<(u32, bool), Vec<Notice>>,
}

/// A remote dependency's notice: send `send` of job host `app` (on `host`) learns of the
/// event `delay` after it (the propagation delay of the first path between the hosts).
#[derive(Clone, Copy, Debug)]
pub(in crate::sim) struct Notice {
    app: AppId,
    host: NodeId,
    send: u32,
    delay: Time,
}

impl Simulation {
    /// Sets up collective `c`: its schedule as a job starting at `c.start`. Errors name the
    /// field.
    pub fn add_collective(&mut self, c: &Collective) -> Result<()> {
        let s = c.schedule()?;
        self.add_job(s.graph, c.start, Some((c.clone(), s.per_iteration)), c.transport)
    }

    /// Sets up a dependency-driven job (transfers on QPs opened now, one per sender, receiver
    /// and lane) whose transfers without dependencies start at `start`.
    pub fn add_transfers(&mut self, graph: TransferGraph, start: Time) -> Result<()> {
        self.add_job(graph, start, None, Transport::Rc)
    }

    /// `add_transfers`, with the records of `rec`: its parts each recorded in
    /// `res.collectives` as a collective of its own, its trace's nodes in `res.chakra`.
    pub fn add_recorded_transfers(&mut self, graph: TransferGraph, start: Time, rec: JobRecords) -> Result<()> {
        self.add_job(graph, start, None, Transport::Rc)?;
        let job = self.apps.jobs.last_mut().expect("the job just added");
        (job.parts, job.nodes) = (rec.parts, rec.nodes);
        Ok(())
    }

    /// The job's QPs run `transport` (a collective's own; RC for the others).
    fn add_job(
        &mut self,
        graph: TransferGraph,
        start: Time,
        collective: Option<(Collective, usize)>,
        transport: Transport,
    ) -> Result<()> {
        let hosts = graph.hosts();
        for &h in &hosts {
            if h.idx() >= self.topo.len() || !self.topo.is_host(h) {
                return Err(Error::scenario("ranks", format!("node {h} is not a host of the topology")));
            }
        }
        if start < self.now {
            return Err(Error::scenario("start", format!("{start} is before the current time {}", self.now)));
        }
        let job = self.apps.jobs.len() as u32;
        let first = self.apps.next_id().0;
        let app_of = |h: NodeId| AppId(first + hosts.binary_search(&h).expect("a host of the job") as u32);
        let mut qps: HashMap<(NodeId, NodeId, u16), QpId> = HashMap::new();
        let mut qp_of = Vec::with_capacity(graph.transfers().len());
        for t in graph.transfers() {
            let key = (t.src, t.dst, t.lane);
            let qp = match qps.get(&key) {
                Some(&q) => q,
                None => {
                    let spec = FlowSpec { transport, ..FlowSpec::new(t.src, t.dst, 0, self.now) };
                    let q = self.open_kept_qp(&spec, app_of(t.dst));
                    qps.insert(key, q);
                    q
                }
            };
            qp_of.push(qp);
        }
        let notices = self.job_notices(&graph, &hosts, first);
        let mut apps = Vec::with_capacity(hosts.len());
        // After every multipath message (set up first), and every job before this one.
        let id_base = (self.apps.message_count() + self.apps.transfers) as u64;
        let ix = JobIndex::new(&graph);
        for &h in &hosts {
            let rank = RankApp::new(&graph, &ix, h, id_base, |i| qp_of[i]);
            let app = self.apps.add(AppKind::Rank(job), AppState::Rank(rank));
            self.queue.push(start, Event::App(app, START));
            apps.push(app);
        }
        self.apps.transfers += graph.transfers().len();
        // A transfer without dependencies is posted its compute delay after the start.
        let latest = graph.transfers().iter().filter(|t| t.deps.is_empty()).map(|t| t.delay).max();
        self.apps.jobs.push(Job { graph, apps, collective, parts: Vec::new(), nodes: None, id_base, notices });
        self.apps.last_post = self.apps.last_post.max(start + latest.unwrap_or(Time::ZERO));
        self.watch.arm_stall_check(start);
        Ok(())
    }

    /// The notices of `graph`'s remote dependencies; its hosts' rows are numbered from
    /// `first` in the order of `hosts`.
    fn job_notices(&self, graph: &TransferGraph, hosts: &[NodeId], first: u32) -> HashMap<(u32, bool), Vec<Notice>> {
        let mut notices: HashMap<(u32, bool), Vec<Notice>> = HashMap::new();
        let mut sent_by = vec![0u32; hosts.len()]; // local send indices, as `RankApp::new` numbers them
        for t in graph.transfers() {
            let h = hosts.binary_search(&t.src).expect("a host of the job");
            let send = sent_by[h];
            sent_by[h] += 1;
            for &d in &t.deps {
                let at = graph.event_host(d);
                if at == t.src {
                    continue;
                }
                let path = self.routes.first_path(&self.topo, at, t.src);
                let delay = path.iter().map(|&p| self.topo.port_delay(p)).fold(Time::ZERO, |a, b| a + b);
                let n = Notice { app: AppId(first + h as u32), host: t.src, send, delay };
                notices.entry((d.on, d.when == Trigger::Received)).or_default().push(n);
            }
        }
        notices
    }

    /// Tells the hosts whose sends wait on `transfer`'s event (`received` or sent) of job
    /// `job` elsewhere: each learns of it a path's propagation delay later.
    fn send_notices(&mut self, job: u32, transfer: u32, received: bool) {
        let Some(list) = self.apps.jobs[job as usize].notices.get(&(transfer, received)) else { return };
        for n in list.clone() {
            self.push_to_node(n.host, self.now + n.delay, Event::App(n.app, NOTICE | n.send));
        }
    }

    /// A WR of job host `app` completed at its sender: a transfer completed is one row of the
    /// flow records, as a flow would be.
    pub(super) fn rank_send_done(&mut self, app: AppId, c: SendCompletion) {
        // (Read before the handler runs: the last completion closes the QP.)
        let q = &self.qps[c.qp.idx()];
        let (src, dst, sip, dip, sport, dport, tenant) = (q.src, q.dst, q.sip, q.dip, q.sport, q.dport, q.tenant);
        let Some(k) = self.with_app(app, AppState::rank_mut, |r, v| r.on_send_done(c, v)) else { return };
        let AppKind::Rank(job) = self.apps.kind(app) else { return };
        let s = &self.apps.state(app).rank().sends[k];
        let (size, start) = (s.bytes, s.posted);
        if !self.apps.jobs[job as usize].notices.is_empty() {
            self.send_notices(job, s.transfer, false);
        }
        let s = &self.apps.state(app).rank().sends[k];
        let flow = (self.flows.len() as u64 + self.apps.jobs[job as usize].id_base + s.transfer as u64) as u32;
        let path = self.routes.first_path(&self.topo, src, dst);
        let (mtu, header) = (self.cfg.mtu as u64, self.cfg.header_bytes as u64);
        let ideal = crate::stats::ideal::ideal_fct(&self.topo, &path, size, mtu, header);
        self.push_record(FlowRecord {
            flow,
            src,
            dst,
            sip,
            dip,
            sport,
            dport,
            size,
            start,
            fct: self.now - start,
            ideal,
            // Per-QP counts are kept for plain flows only.
            retx_packets: 0,
            nacks: 0,
            timeouts: 0,
            rx: Default::default(),
            tenant,
        });
        self.flows_done += 1;
        self.note_work_done();
    }

    /// A transfer to job host `app` was placed.
    pub(super) fn rank_recv_done(&mut self, app: AppId, c: RecvCompletion) {
        self.with_app(app, AppState::rank_mut, |r, v| r.on_recv(c, v));
        let AppKind::Rank(job) = self.apps.kind(app) else { return };
        let j = &self.apps.jobs[job as usize];
        if !j.notices.is_empty() {
            let transfer = c.header.data_id.wrapping_sub(j.id_base);
            if transfer < j.graph.transfers().len() as u64 {
                self.send_notices(job, transfer as u32, true);
            }
        }
    }

    /// A timer of job host `app` fired (its start, or a compute delay's end).
    pub(super) fn rank_timer(&mut self, app: AppId, token: u32) {
        let host = self.with_app(app, AppState::rank_mut, |r, v| {
            r.on_timer(token, v);
            r.host
        });
        self.kick_host(host);
    }

    /// The host job host `app` runs on.
    pub(in crate::sim) fn rank_host(&self, app: AppId) -> NodeId {
        self.apps.state(app).rank().host
    }

    /// Every collective's records, in setup order then iteration order.
    pub(in crate::sim) fn collective_records(&self) -> Vec<CollectiveRecord> {
        let mut out = Vec::new();
        for job in &self.apps.jobs {
            if job.collective.is_none() && job.parts.is_empty() {
                continue;
            }
            let t = self.transfer_times(job);
            if let Some((c, per_iteration)) = &job.collective {
                out.extend(records(c, &job.graph, *per_iteration, &t));
            }
            out.extend(job.parts.iter().map(|p| part_record(p, &job.graph, &t)));
        }
        out
    }

    /// When each transfer of `job` was posted, acknowledged and placed.
    pub(in crate::sim) fn transfer_times(&self, job: &Job) -> TransferTimes {
        let n = job.graph.transfers().len();
        let mut t =
            TransferTimes { posted: vec![Time::MAX; n], acked: vec![Time::MAX; n], received: vec![Time::MAX; n] };
        for &app in &job.apps {
            let r = self.apps.state(app).rank();
            for s in &r.sends {
                (t.posted[s.transfer as usize], t.acked[s.transfer as usize]) = (s.posted, s.acked);
            }
            for v in &r.recvs {
                t.received[v.transfer as usize] = v.at;
            }
        }
        t
    }
}
