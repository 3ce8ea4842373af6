//! A host's part of a dependency-driven job ([`crate::app::deps`]): the transfers it sends,
//! those it receives, and which of its sends each of its completions releases.
//!
//! It reacts only to its own host's completions: a send completion of one of its transfers
//! (`Sent`), a receive completion of a transfer to it (`Received`, recognised by the job's
//! transfer index that the sender wrote into the message's header), and its own compute
//! timers. Everything it needs was worked out at setup, so a handler allocates nothing.

use std::collections::VecDeque;

use super::deps::{TransferGraph, Trigger};
use super::{AppHeader, RecvCompletion, SendCompletion, SendDone, Verbs, Wr};
use crate::ids::{NodeId, QpId};
use crate::units::Time;

/// The header opcode of a job's messages (`AppHeader::op`).
pub const OP_TRANSFER: u8 = 0x4a;
/// The timer token that starts the job at its host.
pub const START: u32 = u32::MAX;
/// Set in a timer token that is a remote dependency's notice for send `token & !NOTICE`
/// (`TransferGraph::with_remote`).
pub const NOTICE: u32 = 1 << 31;

/// One transfer this host sends.
#[derive(Clone, Debug)]
pub struct LocalSend {
    /// Its index in the job.
    pub transfer: u32,
    /// The QP that carries it.
    pub qp: QpId,
    /// Its bytes.
    pub bytes: u64,
    /// Compute time before its post once released.
    pub delay: Time,
    /// Dependencies not yet completed.
    pub waiting: u32,
    /// When it was posted (`Time::MAX`: not yet).
    pub posted: Time,
    /// When its send completed (`Time::MAX`: not yet).
    pub acked: Time,
}

/// One transfer this host receives.
#[derive(Clone, Debug)]
pub struct LocalRecv {
    /// Its index in the job.
    pub transfer: u32,
    /// When its last byte was placed (`Time::MAX`: not yet).
    pub at: Time,
}

/// A host's part of a job.
#[derive(Clone, Debug, Default)]
pub struct RankApp {
    /// The host.
    pub host: NodeId,
    /// Its sends, in job order.
    pub sends: Vec<LocalSend>,
    /// Its receives, in job order (so by transfer index: a receive is found by search).
    pub recvs: Vec<LocalRecv>,
    /// Sends released by send `i`'s completion: `released[after_send[i]..after_send[i+1]]`.
    after_send: Vec<u32>,
    /// Sends released by receive `i`: `released[after_recv[i]..after_recv[i+1]]`.
    after_recv: Vec<u32>,
    /// Sends released by send `i`'s post: `released[after_post[i]..after_post[i+1]]`; empty
    /// when no send waits on a post (a job without `Posted` pays one test per post).
    after_post: Vec<u32>,
    released: Vec<u32>,
    /// Sends not yet complete; at zero the host closes its QPs.
    left: u32,
    /// The QPs it sends on, closed once every send completed.
    qps: Vec<QpId>,
    /// Per QP of `qps`: released sends that found its send queue full, oldest first, posted
    /// as its completions free slots (`[rnic] max_send_wr`). The program's own memory, not the
    /// RNIC's: at most the rank's sends. Empty lists allocate nothing.
    held: Vec<VecDeque<u32>>,
    /// Added to a transfer's index in its header's `data_id`: its flow row beyond the run's
    /// flows, so that the records and rate samples name it alike.
    id_base: u64,
}

/// Where each transfer of a job sits among its sender's sends and its receiver's receives,
/// worked out once per job: setting every host up then takes time in proportion to the job,
/// not to its hosts times its transfers.
#[derive(Clone, Debug, Default)]
pub struct JobIndex {
    /// Each host's sends and receives (transfer indices in job order).
    by_host: std::collections::HashMap<NodeId, (Vec<u32>, Vec<u32>)>,
    /// Transfer i's place among its sender's sends.
    local_send: Vec<u32>,
    /// Transfer i's place among its receiver's receives.
    local_recv: Vec<u32>,
}

impl JobIndex {
    /// The index of `graph`.
    pub fn new(graph: &TransferGraph) -> JobIndex {
        let ts = graph.transfers();
        let mut ix = JobIndex { local_send: vec![0; ts.len()], local_recv: vec![0; ts.len()], ..JobIndex::default() };
        for (i, t) in ts.iter().enumerate() {
            let sends = &mut ix.by_host.entry(t.src).or_default().0;
            ix.local_send[i] = sends.len() as u32;
            sends.push(i as u32);
            let recvs = &mut ix.by_host.entry(t.dst).or_default().1;
            ix.local_recv[i] = recvs.len() as u32;
            recvs.push(i as u32);
        }
        ix
    }
}

impl RankApp {
    /// `host`'s part of `graph` (indexed by `ix`); `qp_of(i)` is the QP that carries transfer
    /// `i` (sent by `host`); transfer `i`'s messages carry `id_base + i` as their data id.
    pub fn new(
        graph: &TransferGraph,
        ix: &JobIndex,
        host: NodeId,
        id_base: u64,
        mut qp_of: impl FnMut(usize) -> QpId,
    ) -> RankApp {
        let ts = graph.transfers();
        let (local_send, local_recv) = (&ix.local_send, &ix.local_recv);
        let mut app = RankApp { host, id_base, ..RankApp::default() };
        let (sends, recvs) = ix.by_host.get(&host).map_or((&[][..], &[][..]), |(s, r)| (&s[..], &r[..]));
        for &i in sends {
            let t = &ts[i as usize];
            let qp = qp_of(i as usize);
            app.qps.push(qp);
            app.sends.push(LocalSend {
                transfer: i,
                qp,
                bytes: t.bytes,
                delay: t.delay,
                waiting: t.deps.len() as u32,
                posted: Time::MAX,
                acked: Time::MAX,
            });
        }
        app.qps.sort_unstable();
        app.qps.dedup();
        app.held = vec![VecDeque::new(); app.qps.len()];
        app.recvs = recvs.iter().map(|&i| LocalRecv { transfer: i, at: Time::MAX }).collect();
        // Who each completion releases, as two compressed lists (one pass to count, one to fill).
        let mut by_send = vec![Vec::new(); app.sends.len()];
        let mut by_recv = vec![Vec::new(); app.recvs.len()];
        let mut by_post = vec![Vec::new(); app.sends.len()];
        for (k, s) in app.sends.iter().enumerate() {
            for d in &ts[s.transfer as usize].deps {
                if graph.event_host(*d) != host {
                    continue; // a remote dependency: its notice arrives as a timer
                }
                match d.when {
                    Trigger::Sent => by_send[local_send[d.on as usize] as usize].push(k as u32),
                    Trigger::Received => by_recv[local_recv[d.on as usize] as usize].push(k as u32),
                    Trigger::Posted => by_post[local_send[d.on as usize] as usize].push(k as u32),
                }
            }
        }
        app.after_send = offsets(&by_send);
        app.after_recv = offsets(&by_recv);
        let any_post = by_post.iter().any(|l| !l.is_empty());
        app.after_post = if any_post { offsets(&by_post) } else { Vec::new() };
        let after_send_end = *app.after_send.last().unwrap_or(&0);
        app.after_recv.iter_mut().for_each(|o| *o += after_send_end);
        let after_recv_end = *app.after_recv.last().unwrap_or(&after_send_end);
        app.after_post.iter_mut().for_each(|o| *o += after_recv_end);
        app.released = by_send.into_iter().chain(by_recv).chain(by_post).flatten().collect();
        app.left = app.sends.len() as u32;
        app
    }

    /// The job starts: every send without dependencies is released.
    pub fn start(&mut self, v: &mut impl Verbs) {
        for k in 0..self.sends.len() {
            if self.sends[k].waiting == 0 {
                self.release(k, v);
            }
        }
        if self.left == 0 {
            self.close(v);
        }
    }

    /// A compute delay ended: send `token` (a local send index) is posted; or the job
    /// starts; or a remote dependency's notice for send `token & !NOTICE` arrived.
    pub fn on_timer(&mut self, token: u32, v: &mut impl Verbs) {
        if token == START {
            self.start(v);
        } else if token & NOTICE != 0 {
            self.dep_done((token & !NOTICE) as usize, v);
        } else {
            self.post(token as usize, v);
        }
    }

    /// A send completed; returns the local send when it is one of the job's transfers
    /// completing (acknowledged), which counts as work done.
    pub fn on_send_done(&mut self, c: SendCompletion, v: &mut impl Verbs) -> Option<usize> {
        if c.done != SendDone::Acked {
            return None; // a failed or flushed WR releases nothing: the job stops there
        }
        let k = c.cookie as usize;
        self.sends[k].acked = c.time;
        self.post_held(c.qp, v);
        let (a, b) = (self.after_send[k] as usize, self.after_send[k + 1] as usize);
        for i in a..b {
            self.dep_done(self.released[i] as usize, v);
        }
        self.left -= 1;
        if self.left == 0 {
            self.close(v);
        }
        Some(k)
    }

    /// A transfer to this host was placed.
    pub fn on_recv(&mut self, c: RecvCompletion, v: &mut impl Verbs) {
        let t = c.header.data_id.wrapping_sub(self.id_base) as u32;
        let Ok(k) = self.recvs.binary_search_by_key(&t, |r| r.transfer) else { return };
        self.recvs[k].at = c.time;
        let (a, b) = (self.after_recv[k] as usize, self.after_recv[k + 1] as usize);
        for i in a..b {
            self.dep_done(self.released[i] as usize, v);
        }
    }

    fn dep_done(&mut self, k: usize, v: &mut impl Verbs) {
        let s = &mut self.sends[k];
        s.waiting -= 1;
        if s.waiting == 0 {
            self.release(k, v);
        }
    }

    fn release(&mut self, k: usize, v: &mut impl Verbs) {
        let delay = self.sends[k].delay;
        if delay > Time::ZERO {
            v.wake(v.now() + delay, k as u32);
        } else {
            self.post(k, v);
        }
    }

    /// Posts send `k`, or holds it behind those its QP already holds when the send queue
    /// is full (as a program does on `ibv_post_send`'s ENOMEM).
    fn post(&mut self, k: usize, v: &mut impl Verbs) {
        let qp = self.sends[k].qp;
        let q = self.qps.binary_search(&qp).expect("a send's QP is among the rank's");
        if !self.held[q].is_empty() || v.sq_room(qp) == 0 {
            self.held[q].push_back(k as u32);
            return;
        }
        self.post_now(k, v);
    }

    /// A completion on `qp` freed a slot of its send queue: the sends it holds go, in order,
    /// while there is room.
    fn post_held(&mut self, qp: QpId, v: &mut impl Verbs) {
        let Ok(q) = self.qps.binary_search(&qp) else { return };
        while !self.held[q].is_empty() && v.sq_room(qp) > 0 {
            let k = self.held[q].pop_front().expect("checked") as usize;
            self.post_now(k, v);
        }
    }

    fn post_now(&mut self, k: usize, v: &mut impl Verbs) {
        let s = &mut self.sends[k];
        s.posted = v.now();
        let data_id = self.id_base + s.transfer as u64;
        let header = AppHeader { data_id, total: s.bytes, offset: 0, length: s.bytes, op: OP_TRANSFER };
        let wr = Wr { bytes: s.bytes, cookie: k as u32, header: Some(header), notify_sent: false };
        v.post(s.qp, wr).expect("room was checked");
        if !self.after_post.is_empty() {
            // Posted only after this send's own post, so they follow it on a shared QP.
            let (a, b) = (self.after_post[k] as usize, self.after_post[k + 1] as usize);
            for i in a..b {
                self.dep_done(self.released[i] as usize, v);
            }
        }
    }

    fn close(&mut self, v: &mut impl Verbs) {
        for &qp in &self.qps {
            v.close_qp(qp);
        }
    }
}

/// Start offsets of each list in their concatenation, and the end.
fn offsets(lists: &[Vec<u32>]) -> Vec<u32> {
    let mut o = Vec::with_capacity(lists.len() + 1);
    let mut at = 0u32;
    o.push(0);
    for l in lists {
        at += l.len() as u32;
        o.push(at);
    }
    o
}
