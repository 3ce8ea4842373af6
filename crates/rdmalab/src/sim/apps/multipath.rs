//! Multipath connections of the data-partition paper's split (`multipath::MpSender`,
//! `MpReceiver`) and the verbs that set up every multipath connection, Virtuoso's too
//! (`Simulation::mp_connect`, `mp_post_send`, `mp_disconnect`), with the records of their
//! messages and chunks.

use super::{AppState, Conn};
use crate::app::{AppId, AppKind, SendCompletion};
use crate::error::{Error, Result};
use crate::ids::{NodeId, QpId};
use crate::multipath::{
    distinct_path_ports, path_nodes, FreshQps, MpChunkRecord, MpConfig, MpConnId, MpMessageRecord, MpMsgId, MpReceiver,
    MpSender, MpVerb, MpWr, QpPolicy, Split, SportPolicy,
};
use crate::sim::{Event, Simulation};
use crate::stats::FlowRecord;
use crate::units::Time;
use crate::workload::FlowSpec;

impl Simulation {
    /// A WR of multipath sender `conn` (application `app`) completed.
    pub(super) fn mp_send_done(&mut self, app: AppId, conn: u32, c: SendCompletion) {
        let out = self.with_app(app, AppState::mp_sender_mut, |s, v| s.on_completion(c, v));
        if let Some(local) = out.message_done {
            self.record_mp_message(conn, local);
        }
        if out.close {
            self.close_conn(conn);
        }
    }

    /// A timer of multipath sender `app` fired.
    pub(super) fn mp_timer(&mut self, app: AppId, token: u32) {
        let first = self.with_app(app, AppState::mp_sender_mut, |s, v| {
            s.on_timer(token, v);
            s.qps.first().copied()
        });
        if let Some(qp) = first {
            let nic = self.qps[qp.idx()].nic;
            self.nic_kick(nic);
        }
    }

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
                let f = FlowSpec::new(src, dst, 0, self.now);
                self.open_kept_qp(&FlowSpec { pg: cfg.pg, dport: cfg.dport, sport, ..f }, receiver_app)
            })
            .collect();
        let mut sender = MpSender::new(cfg, qps.clone());
        if cfg.qp_policy == QpPolicy::Recreate {
            let spec = FlowSpec { pg: cfg.pg, dport: cfg.dport, ..FlowSpec::new(src, dst, 0, self.now) };
            let sports = qps.iter().map(|q| self.qps[q.idx()].sport).collect();
            sender = sender.with_fresh_qps(FreshQps { spec, sports, rx: receiver_app });
        }
        self.apps.add(AppKind::MpSender(conn), AppState::MpSender(sender));
        self.apps.add(AppKind::MpReceiver(conn), AppState::MpReceiver(MpReceiver::new(cfg.chunk_header)));
        self.apps.conns.push(Conn {
            src,
            dst,
            sender: sender_app,
            receiver: receiver_app,
            qps,
            reverse: Vec::new(),
            disconnected: false,
            virtuoso: false,
            notice: Time::ZERO, // no QP of `dst` to close
        });
        Ok(MpConnId(conn))
    }

    /// The source port of each QP under the connection's policy (`None`: the NIC's counter).
    pub(in crate::sim) fn mp_sports(&self, src: NodeId, dst: NodeId, cfg: &MpConfig) -> Result<Vec<Option<u16>>> {
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
        let (src, dst, app) = (c.src, c.dst, c.sender);
        let (local, token) = if c.virtuoso {
            if wr.size == 0 {
                return Err(Error::scenario("size", "must be at least 1 byte"));
            }
            self.apps.state_mut(app).v_sender_mut().add_message(id, wr.verb, wr.size, at)
        } else {
            if wr.verb != MpVerb::Write {
                return Err(Error::scenario("verb", format!("{:?}: split = \"partition\" only writes", wr.verb)));
            }
            let sender = self.apps.state_mut(app).mp_sender_mut();
            sender.check_size(wr.size)?;
            sender.add_message(id, wr.size, at)
        };
        let path = self.routes.first_path(&self.topo, src, dst);
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
        self.queue.push(at, Event::App(app, token));
        Ok(MpMsgId(id))
    }

    /// No more messages on `conn`: its QPs close once everything posted is acknowledged.
    pub fn mp_disconnect(&mut self, conn: MpConnId) -> Result<()> {
        let Some(c) = self.apps.conns.get_mut(conn.0 as usize) else {
            return Err(Error::scenario("conn", format!("no multipath connection {}", conn.0)));
        };
        c.disconnected = true;
        let (app, virtuoso) = (c.sender, c.virtuoso);
        let sender = self.apps.state_mut(app);
        let idle = if virtuoso { sender.v_sender_mut().disconnect() } else { sender.mp_sender_mut().disconnect() };
        if idle {
            self.close_conn(conn.0);
        }
        Ok(())
    }

    pub(in crate::sim) fn close_conn(&mut self, conn: u32) {
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

    /// A message completed at its sender: one row of the flow records, as a flow would.
    pub(in crate::sim) fn record_mp_message(&mut self, conn: u32, local: u32) {
        let c = &self.apps.conns[conn as usize];
        let sender = self.apps.state(c.sender);
        let (id, size, start) = if c.virtuoso {
            let m = &sender.v_sender().messages[local as usize];
            (m.id, m.size, m.start)
        } else {
            let m = &sender.mp_sender().messages[local as usize];
            (m.id, m.size, m.start)
        };
        let qp = &self.qps[c.qps[0].idx()];
        let ideal = self.apps.messages[id as usize].2;
        self.push_record(FlowRecord {
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
            // Per-QP counts are kept for plain flows only.
            retx_packets: 0,
            nacks: 0,
            timeouts: 0,
            rx: Default::default(),
            tenant: qp.tenant,
        });
        self.flows_done += 1;
        self.note_work_done();
    }

    /// What every multipath message record holds whichever split sent the message (`done`:
    /// its completion at the sender); the split fills in its own counts.
    pub(in crate::sim) fn mp_record_base(
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
    pub(in crate::sim) fn mp_message_records(&self) -> Vec<MpMessageRecord> {
        let a = &self.apps;
        a.messages
            .iter()
            .map(|&(conn, local, ideal)| {
                let c = &a.conns[conn as usize];
                if c.virtuoso {
                    return self.virtuoso_message_record(conn, local, ideal);
                }
                let m = &a.state(c.sender).mp_sender().messages[local as usize];
                let r = a.state(c.receiver).mp_receiver().messages.get(&(m.id as u64)).copied().unwrap_or_default();
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
    pub(in crate::sim) fn mp_chunk_records(&self) -> Vec<MpChunkRecord> {
        let mut out = Vec::new();
        for c in self.apps.conns.iter().filter(|c| !c.virtuoso) {
            let sender = self.apps.state(c.sender).mp_sender();
            let placed: std::collections::HashMap<(u64, u64), Time> = (self.apps.state(c.receiver).mp_receiver())
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
    pub(in crate::sim) fn mp_anomalies(&self) -> u64 {
        let anomalies = |a: &super::table::App| match &a.state {
            AppState::MpReceiver(r) => r.anomalies,
            AppState::VReceiver(r) => r.anomalies,
            _ => 0,
        };
        self.apps.rows.iter().map(anomalies).sum()
    }
}
