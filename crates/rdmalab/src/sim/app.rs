//! The one hook between the RNIC and host applications (`app`), and the multipath verbs
//! (`Simulation::mp_connect`, `mp_post_send`, `mp_disconnect`) that set such applications
//! up.
//!
//! The RNIC calls in at three places, none per packet: a WR of an application completes at
//! the sender (`complete_messages`, or `send_data` for the last packet of a WR that asked
//! for it), a WR carrying an application header is placed at the receiver (the in-order
//! last packet, `receive_data`), and an application's timer fires (`Event::App`). Each
//! call is routed by application id to that application's handler, which acts on its own
//! host through [`Verbs`] only.

use super::{Event, Simulation};
use crate::app::{AppHeader, AppId, AppKind, HeaderSlot, Headers, RecvCompletion, SendCompletion, Verbs, Wr};
use crate::error::{Error, Result};
use crate::ids::{NodeId, QpId};
use crate::multipath::virtuoso::{VirtuosoReceiver, VirtuosoSender};
use crate::multipath::{
    distinct_path_ports, path_nodes, MpChunkRecord, MpConfig, MpConnId, MpMessageRecord, MpMsgId, MpReceiver, MpSender,
    MpVerb, MpWr, Split, SportPolicy,
};
use crate::rnic::Message;
use crate::stats::FlowRecord;
use crate::units::Time;

/// Every application instance of the run and what they share with the RNIC (their
/// headers in flight). Setup-time bookkeeping (`conns`, `messages`) is read only to
/// report results.
#[derive(Debug, Default)]
pub(super) struct Apps {
    pub(super) kinds: Vec<AppKind>,
    pub(super) headers: Headers,
    pub(super) senders: Vec<MpSender>,
    pub(super) receivers: Vec<MpReceiver>,
    pub(super) vsenders: Vec<VirtuosoSender>,
    pub(super) vreceivers: Vec<VirtuosoReceiver>,
    pub(super) conns: Vec<Conn>,
    /// Global message id -> (connection, index in its sender, ideal FCT).
    pub(super) messages: Vec<(u32, u32, Time)>,
    /// The latest time a message is posted at: until then more work may start, so the
    /// stall watchdog must not call the run stuck (`sim::watch`).
    pub(super) last_post: Time,
}

/// A multipath connection as set up. Its two halves sit at index `half` of the arenas of
/// its split (`senders`/`receivers`, or `vsenders`/`vreceivers`).
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) src: NodeId,
    pub(super) dst: NodeId,
    /// Application id of the sending half.
    pub(super) sender: AppId,
    /// QPs from `src` to `dst`, by slot (path).
    pub(super) qps: Vec<QpId>,
    /// QPs from `dst` back to `src` by path (Virtuoso's READ data); empty otherwise.
    pub(super) reverse: Vec<QpId>,
    pub(super) disconnected: bool,
    pub(super) virtuoso: bool,
    pub(super) half: u32,
    /// How long `dst` takes to learn that the connection closed (the first path's
    /// propagation delay): in the origin order its own QPs (`reverse`) close that much
    /// later, since one host never changes another's state at once (`sim::parallel`).
    pub(super) notice: Time,
}

impl Apps {
    /// Messages posted on multipath connections (each counts as a flow of the run).
    pub(super) fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// Adds an application of kind `kind` to the table; returns its id.
    pub(super) fn add(&mut self, kind: AppKind) -> AppId {
        self.kinds.push(kind);
        AppId::new(self.kinds.len() - 1)
    }

    /// The id the next application added will get.
    pub(super) fn next_id(&self) -> AppId {
        AppId::new(self.kinds.len())
    }

    /// True when `app` is an attack generator, which hears of its acknowledged chunks
    /// together, after its QP's slot may have been released (`sim::host`).
    #[inline]
    pub(super) fn hears_chunks(&self, app: AppId) -> bool {
        !app.is_none() && matches!(self.kinds[app.idx()], AppKind::Attack(_))
    }

    /// True when `app` learns of its failed WRs (`sim::retry`), so that a QP carrying them is
    /// left to it rather than abandoned as a flow's (`sim::failures`). An attack generator's
    /// chunks are given up as flows are.
    pub(super) fn learns_of_failures(&self, app: AppId) -> bool {
        !app.is_none() && !matches!(self.kinds[app.idx()], AppKind::Attack(_))
    }
}

/// The verbs of one application on its host.
pub(super) struct HostVerbs<'a> {
    pub(super) sim: &'a mut Simulation,
    pub(super) app: AppId,
}

impl Verbs for HostVerbs<'_> {
    fn now(&self) -> Time {
        self.sim.now
    }

    fn post(&mut self, qp: QpId, wr: Wr) {
        let hdr = wr.header.map_or(HeaderSlot::NONE, |h| self.sim.apps.headers.write(h));
        // A WR with a header carries part of message `data_id`, which is flow row
        // `flows + data_id` of the results (rate samples label QPs by it).
        let flow = wr.header.map_or(u32::MAX, |h| (self.sim.flows.len() as u64 + h.data_id) as u32);
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
        self.sim.reconnect_qp(qp);
    }
}

impl Simulation {
    /// Opens a multipath connection from host `src` to host `dst`: `cfg.qps` QPs with their
    /// source ports, a sender half on `src` and a receiver half on `dst`. Errors name the
    /// offending field of `cfg` (or `src`/`dst`).
    pub fn mp_connect(&mut self, src: NodeId, dst: NodeId, cfg: &MpConfig) -> Result<MpConnId> {
        cfg.validate()?;
        for (name, node) in [("src", src), ("dst", dst)] {
            if node.idx() >= self.topo.len() {
                return Err(Error::scenario(
                    name,
                    format!("unknown host {node} (the topology has {} nodes)", self.topo.len()),
                ));
            }
            if !self.topo.is_host(node) {
                return Err(Error::scenario(name, format!("node {node} is a switch, not a host")));
            }
        }
        if src == dst {
            return Err(Error::scenario("dst", format!("connection from host {src} to itself")));
        }
        if let Split::Virtuoso(v) = &cfg.split {
            return self.virtuoso_connect(src, dst, cfg, v);
        }
        let sports = self.mp_sports(src, dst, cfg)?;
        let conn = self.apps.conns.len() as u32;
        let (sender_app, receiver_app) = (self.apps.next_id(), AppId(self.apps.next_id().0 + 1));
        let qps: Vec<QpId> = sports
            .iter()
            .map(|&sport| {
                let qp = self.open_qp(&crate::workload::FlowSpec {
                    pg: cfg.pg,
                    dport: cfg.dport,
                    sport,
                    ..crate::workload::FlowSpec::new(src, dst, 0, self.now)
                });
                let q = &mut self.qps[qp.idx()];
                q.close_when_idle = false;
                q.rx.app = receiver_app;
                qp
            })
            .collect();
        self.apps.add(AppKind::MpSender(conn));
        self.apps.add(AppKind::MpReceiver(conn));
        let half = self.apps.senders.len() as u32;
        self.apps.senders.push(MpSender::new(cfg, qps.clone()));
        self.apps.receivers.push(MpReceiver::new(cfg.chunk_header));
        self.apps.conns.push(Conn {
            src,
            dst,
            sender: sender_app,
            qps,
            reverse: Vec::new(),
            disconnected: false,
            virtuoso: false,
            half,
            notice: Time::ZERO, // no QP of `dst` to close
        });
        Ok(MpConnId(conn))
    }

    /// The source port of each QP under the connection's policy (`None`: the NIC's counter).
    pub(super) fn mp_sports(&self, src: NodeId, dst: NodeId, cfg: &MpConfig) -> Result<Vec<Option<u16>>> {
        Ok(match &cfg.sport_policy {
            SportPolicy::Sequential => vec![None; cfg.qps as usize],
            SportPolicy::Explicit(ports) => ports.iter().map(|&p| Some(p)).collect(),
            SportPolicy::DistinctPaths => {
                let (sip, dip) = (self.topo.nodes[src.idx()].ips[0], self.topo.nodes[dst.idx()].ips[0]);
                distinct_path_ports(&self.topo, &self.routes, src, dst, sip, dip, cfg.dport, cfg.qps)
                    .map_err(|m| Error::scenario("qps", m))?
                    .into_iter()
                    .map(Some)
                    .collect()
            }
        })
    }

    /// Posts a message on `conn`, to start at `at`. Returns its id (its data id on the wire).
    pub fn mp_post_send(&mut self, conn: MpConnId, wr: MpWr, at: Time) -> Result<MpMsgId> {
        let Some(c) = self.apps.conns.get(conn.0 as usize) else {
            return Err(Error::scenario("conn", format!("no multipath connection {}", conn.0)));
        };
        if c.disconnected {
            return Err(Error::scenario("conn", format!("connection {} is disconnected", conn.0)));
        }
        if at < self.now {
            return Err(Error::scenario("start", format!("{at} is before the current time {}", self.now)));
        }
        let id = self.apps.messages.len() as u32;
        let half = c.half as usize;
        let (local, token) = if c.virtuoso {
            if wr.size == 0 {
                return Err(Error::scenario("size", "must be at least 1 byte"));
            }
            self.apps.vsenders[half].add_message(id, wr.verb, wr.size, at)
        } else {
            if wr.verb != MpVerb::Write {
                return Err(Error::scenario("verb", format!("{:?}: split = \"partition\" only writes", wr.verb)));
            }
            self.apps.senders[half].check_size(wr.size)?;
            self.apps.senders[half].add_message(id, wr.size, at)
        };
        let path = self.routes.first_path(&self.topo, c.src, c.dst);
        let ideal = crate::stats::ideal::ideal_fct(
            &self.topo,
            &path,
            wr.size,
            self.cfg.mtu as u64,
            self.cfg.header_bytes as u64,
        );
        self.apps.messages.push((conn.0, local, ideal));
        self.apps.last_post = self.apps.last_post.max(at);
        self.watch.arm_stall_check(at);
        let app = c.sender;
        self.queue.push(at, Event::App(app, token));
        Ok(MpMsgId(id))
    }

    /// No more messages on `conn`: its QPs close once everything posted is acknowledged.
    pub fn mp_disconnect(&mut self, conn: MpConnId) -> Result<()> {
        let Some(c) = self.apps.conns.get_mut(conn.0 as usize) else {
            return Err(Error::scenario("conn", format!("no multipath connection {}", conn.0)));
        };
        c.disconnected = true;
        let half = c.half as usize;
        let idle =
            if c.virtuoso { self.apps.vsenders[half].disconnect() } else { self.apps.senders[half].disconnect() };
        if idle {
            self.close_conn(conn.0);
        }
        Ok(())
    }

    pub(super) fn close_conn(&mut self, conn: u32) {
        let c = &self.apps.conns[conn as usize];
        let (src, notice) = (c.src, c.notice);
        let all: Vec<QpId> = c.qps.iter().chain(&c.reverse).copied().collect();
        for qp in all {
            let owner = self.qps[qp.idx()].src;
            if self.origin_order && owner != src {
                self.push_to_node(owner, self.now + notice, Event::CloseQp(qp));
                continue;
            }
            self.close_app_qp(qp);
        }
    }

    /// A QP of a connection that closed: it closes once everything posted is acknowledged.
    pub(super) fn close_app_qp(&mut self, qp: QpId) {
        self.qps[qp.idx()].close_when_idle = true;
        self.close_if_idle(qp);
    }

    /// A WR of application `app` completed at its sender.
    pub(super) fn app_send_done(&mut self, app: AppId, c: SendCompletion) {
        match self.apps.kinds[app.idx()] {
            AppKind::VSender(i) => return self.virtuoso_send_done(app, i, c),
            AppKind::Closed(i) => return self.closed_send_done(i, c),
            _ => {}
        }
        let AppKind::MpSender(i) = self.apps.kinds[app.idx()] else { return };
        let h = self.apps.conns[i as usize].half as usize;
        let mut sender = std::mem::take(&mut self.apps.senders[h]);
        let out = sender.on_completion(c, &mut HostVerbs { sim: self, app });
        self.apps.senders[h] = sender;
        if let Some(local) = out.message_done {
            self.record_mp_message(i, local);
        }
        if out.close {
            self.close_conn(i);
        }
    }

    /// A WR with header slot `hdr` was placed at the receiver's application `app`.
    pub(super) fn app_recv_done(&mut self, app: AppId, qp: QpId, hdr: HeaderSlot, bytes: u64) {
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
    pub(super) fn on_app_timer(&mut self, app: AppId, token: u32) {
        match self.apps.kinds[app.idx()] {
            AppKind::VSender(i) => return self.virtuoso_timer(app, i, token),
            AppKind::Closed(i) => return self.closed_timer(i, token),
            AppKind::Attack(i) => return self.stagger_turn(i),
            _ => {}
        }
        let AppKind::MpSender(i) = self.apps.kinds[app.idx()] else { return };
        let h = self.apps.conns[i as usize].half as usize;
        let mut sender = std::mem::take(&mut self.apps.senders[h]);
        sender.on_timer(token, &mut HostVerbs { sim: self, app });
        let first = sender.qps.first().copied();
        self.apps.senders[h] = sender;
        if let Some(qp) = first {
            let nic = self.qps[qp.idx()].nic;
            self.nic_kick(nic);
        }
    }

    /// A message completed at its sender: one row of the flow records, as a flow would.
    pub(super) fn record_mp_message(&mut self, conn: u32, local: u32) {
        let c = &self.apps.conns[conn as usize];
        let h = c.half as usize;
        let (id, size, start) = if c.virtuoso {
            let m = &self.apps.vsenders[h].messages[local as usize];
            (m.id, m.size, m.start)
        } else {
            let m = &self.apps.senders[h].messages[local as usize];
            (m.id, m.size, m.start)
        };
        let qp = &self.qps[c.qps[0].idx()];
        let ideal = self.apps.messages[id as usize].2;
        self.records.push(FlowRecord {
            flow: (self.flows.len() + id as usize) as u32,
            src: c.src,
            dst: c.dst,
            sip: qp.sip,
            dip: qp.dip,
            sport: qp.sport,
            dport: qp.dport,
            size,
            start,
            fct: self.now - start,
            ideal,
            tenant: qp.tenant,
        });
        self.flows_done += 1;
        self.note_work_done();
    }

    /// After a flow or message completed (or was given up): notes the time as the last
    /// completion, and if that was the last and a connection is still
    /// open (not `mp_disconnect`ed), ask `run` to stop rather than idle through its timers.
    pub(super) fn note_work_done(&mut self) {
        self.last_completion = self.now;
        // (A partition sees only its own completions: the parallel driver decides.)
        let all_done = self.flows_done == self.work_total() && self.part.is_none();
        if all_done && self.apps.conns.iter().any(|c| !c.disconnected) {
            self.all_done_but_idle_apps = true;
        }
    }

    /// What every multipath message record holds whichever split sent the message (`done`:
    /// its completion at the sender); the split fills in its own counts.
    pub(super) fn mp_record_base(
        &self,
        conn: u32,
        id: u32,
        size: u64,
        start: Time,
        done: Option<Time>,
        ideal: Time,
    ) -> MpMessageRecord {
        let c = &self.apps.conns[conn as usize];
        MpMessageRecord {
            message: MpMsgId(id),
            conn: MpConnId(conn),
            src: c.src,
            dst: c.dst,
            size,
            qps: c.qps.len() as u32,
            chunks: 0,
            start,
            fct: done.map(|t| t - start),
            recv_done: None,
            ideal,
            bytes_placed: 0,
            wrs: 0,
            cqes: 0,
            recv_cqe: None,
            probe: Time::ZERO,
        }
    }

    /// Per-message records of every multipath message, in id order.
    pub(super) fn mp_message_records(&self) -> Vec<MpMessageRecord> {
        let a = &self.apps;
        a.messages
            .iter()
            .map(|&(conn, local, ideal)| {
                let c = &a.conns[conn as usize];
                if c.virtuoso {
                    return self.virtuoso_message_record(conn, local, ideal);
                }
                let h = c.half as usize;
                let m = &a.senders[h].messages[local as usize];
                let r = a.receivers[h].messages.get(&(m.id as u64)).copied().unwrap_or_default();
                let since = |t: Time| t - m.start;
                MpMessageRecord {
                    chunks: m.chunks as u64,
                    recv_done: r.done.map(since),
                    bytes_placed: r.placed,
                    wrs: m.chunks as u64,
                    cqes: m.acked as u64,
                    recv_cqe: r.done.map(since),
                    ..self.mp_record_base(conn, m.id, m.size, m.start, m.done, ideal)
                }
            })
            .collect()
    }

    /// Per-chunk records of every multipath message, by message then chunk number.
    pub(super) fn mp_chunk_records(&self) -> Vec<MpChunkRecord> {
        let mut out = Vec::new();
        for c in self.apps.conns.iter().filter(|c| !c.virtuoso) {
            let sender = &self.apps.senders[c.half as usize];
            let placed: std::collections::HashMap<(u64, u64), Time> = self.apps.receivers[c.half as usize]
                .placements
                .iter()
                .map(|p| ((p.data_id, p.offset), p.time))
                .collect();
            let paths: Vec<Vec<NodeId>> = c
                .qps
                .iter()
                .map(|q| {
                    let q = &self.qps[q.idx()];
                    path_nodes(&self.topo, &self.routes, (q.sip, q.dip, q.sport, q.dport), c.src, c.dst)
                })
                .collect();
            for ch in &sender.chunks {
                let m = &sender.messages[ch.msg as usize];
                let qp = &self.qps[c.qps[ch.slot as usize].idx()];
                out.push(MpChunkRecord {
                    message: MpMsgId(m.id),
                    chunk: ch.index,
                    qp: ch.slot,
                    sport: qp.sport,
                    sip: qp.sip,
                    offset: ch.offset,
                    size: ch.size,
                    post: ch.post,
                    done: ch.done,
                    recv: placed.get(&(m.id as u64, ch.offset)).copied(),
                    path: paths[ch.slot as usize].clone(),
                });
            }
        }
        out.sort_by_key(|r| (r.message, r.chunk));
        out
    }

    /// Chunks whose headers contradicted their message at a receiver (0 in a correct run).
    pub(super) fn mp_anomalies(&self) -> u64 {
        let v: u64 = self.apps.vreceivers.iter().map(|r| r.anomalies).sum();
        self.apps.receivers.iter().map(|r| r.anomalies).sum::<u64>() + v
    }
}
