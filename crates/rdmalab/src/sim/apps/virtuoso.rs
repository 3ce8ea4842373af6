//! Virtuoso connections (the Virtuoso paper) on the application hook (`sim::apps`): opening the
//! per-path QPs (and their reverse QPs for READ data), routing completions and timers to
//! the two halves, and the per-message and per-path records.

use super::{AppState, Conn};
use crate::app::{AppId, AppKind, RecvCompletion, SendCompletion};
use crate::error::{Error, Result};
use crate::ids::{NodeId, QpId};
use crate::multipath::virtuoso::{chunk_probe_fabric_error, VOutcome, VirtuosoReceiver, VirtuosoSender};
use crate::multipath::{
    MpConfig, MpConnId, MpMessageRecord, MpMsgId, MpPathRecord, MpVerb, MpWrRecord, PathBy, VirtuosoConfig,
};
use crate::sim::Simulation;
use crate::units::Time;

impl Simulation {
    /// Opens a Virtuoso connection: one QP per path from `src` (from address `i` with
    /// `path_by = src_ip`), one reverse QP per path for READ data, a sender half on `src`
    /// and a receiver half on `dst`.
    pub(in crate::sim) fn virtuoso_connect(
        &mut self,
        src: NodeId,
        dst: NodeId,
        cfg: &MpConfig,
        v: &VirtuosoConfig,
    ) -> Result<MpConnId> {
        v.validate(cfg.qps, self.cfg.mtu)?;
        if let Some(m) =
            v.chunk_probe.as_ref().and_then(|c| chunk_probe_fabric_error(c, self.cfg.lossless, self.cfg.retry_limit))
        {
            return Err(Error::scenario("chunk_probe", m));
        }
        let src_ips = self.topo.nodes[src.idx()].ips.clone();
        if v.path_by == PathBy::SrcIp && cfg.qps as usize > src_ips.len() {
            let msg = format!(
                "path_by = \"src_ip\" needs {} addresses but host {src} has {} (raise topology.ips_per_host)",
                cfg.qps,
                src_ips.len()
            );
            return Err(Error::scenario("qps", msg));
        }
        let sports = match v.path_by {
            PathBy::Sport => self.mp_sports(src, dst, cfg)?,
            PathBy::SrcIp => vec![None; cfg.qps as usize],
        };
        let conn = self.apps.conns.len() as u32;
        let (sender_app, receiver_app) = (self.apps.next_id(), AppId(self.apps.next_id().0 + 1));
        let mut forward = Vec::with_capacity(sports.len());
        let mut reverse = Vec::with_capacity(sports.len());
        for (i, &sport) in sports.iter().enumerate() {
            let sip = (v.path_by == PathBy::SrcIp).then(|| src_ips[i]);
            let fwd = self.open_app_qp(src, sip, dst, cfg, sport, receiver_app);
            let back = self.open_app_qp(dst, None, src, cfg, None, sender_app);
            // READ data goes back to the address the request came from: same path.
            self.qps[back.idx()].dip = self.qps[fwd.idx()].sip;
            forward.push(fwd);
            reverse.push(back);
        }
        let path = self.routes.first_path(&self.topo, src, dst);
        let rtt = crate::stats::ideal::base_rtt(&self.topo, &path, self.cfg.mtu as u64);
        let link_delay = |p: &crate::ids::PortId| self.topo.links[self.topo.ports[p.idx()].link.idx()].delay;
        let notice = path.iter().map(link_delay).fold(Time::ZERO, |a, d| a + d);
        let sender = VirtuosoSender::new(v, forward.clone(), cfg.chunk_header, rtt);
        self.apps.add(AppKind::VSender(conn), AppState::VSender(sender));
        let receiver = VirtuosoReceiver::new(forward.clone(), reverse.clone());
        self.apps.add(AppKind::VReceiver(conn), AppState::VReceiver(receiver));
        self.apps.conns.push(Conn {
            src,
            dst,
            sender: sender_app,
            receiver: receiver_app,
            qps: forward,
            reverse,
            disconnected: false,
            virtuoso: true,
            notice,
        });
        Ok(MpConnId(conn))
    }

    /// A QP of an application connection: stays open until the connection closes; what it
    /// delivers goes to application `rx_app` on the receiving host.
    fn open_app_qp(
        &mut self,
        from: NodeId,
        sip: Option<u32>,
        to: NodeId,
        cfg: &MpConfig,
        sport: Option<u16>,
        rx_app: AppId,
    ) -> QpId {
        let f = crate::workload::FlowSpec::new(from, to, 0, self.now);
        let spec = crate::workload::FlowSpec { pg: cfg.pg, dport: cfg.dport, sport, src_ip: sip, ..f };
        self.open_kept_qp(&spec, rx_app)
    }

    /// A WR of Virtuoso sender `conn` completed.
    pub(in crate::sim) fn virtuoso_send_done(&mut self, app: AppId, conn: u32, c: SendCompletion) {
        let out = self.with_app(app, AppState::v_sender_mut, |s, v| s.on_completion(c, v));
        self.virtuoso_outcome(conn, out);
    }

    /// A WR with a Virtuoso header was placed at application `app` (either half).
    pub(in crate::sim) fn virtuoso_recv_done(&mut self, app: AppId, c: RecvCompletion) {
        match self.apps.kind(app) {
            AppKind::VReceiver(_) => self.with_app(app, AppState::v_receiver_mut, |r, v| r.on_receive(c, v)),
            AppKind::VSender(conn) => {
                let out = self.with_app(app, AppState::v_sender_mut, |s, v| s.on_receive(c, v));
                self.virtuoso_outcome(conn, out);
            }
            _ => {}
        }
    }

    /// A timer of Virtuoso sender `conn` fired.
    pub(in crate::sim) fn virtuoso_timer(&mut self, app: AppId, conn: u32, token: u32) {
        self.with_app(app, AppState::v_sender_mut, |s, v| s.on_timer(token, v));
        let nic = self.qps[self.apps.conns[conn as usize].qps[0].idx()].nic;
        self.nic_kick(nic);
    }

    fn virtuoso_outcome(&mut self, conn: u32, out: VOutcome) {
        if let Some(local) = out.message_done {
            self.record_mp_message(conn, local);
        }
        if out.close {
            self.close_conn(conn);
        }
    }

    /// The record of message `local` of Virtuoso connection `conn`.
    pub(in crate::sim) fn virtuoso_message_record(&self, conn: u32, local: u32, ideal: Time) -> MpMessageRecord {
        let c = &self.apps.conns[conn as usize];
        let m = &self.apps.state(c.sender).v_sender().messages[local as usize];
        let r = self.apps.state(c.receiver).v_receiver().messages.get(&(m.id as u64)).copied().unwrap_or_default();
        let since = |t: Time| t - m.start;
        let (placed, recv_done) = match m.verb {
            MpVerb::Read => (m.placed, m.done.map(since)),
            _ => (r.placed, r.done.map(since)),
        };
        MpMessageRecord {
            chunks: m.pieces as u64,
            recv_done,
            bytes_placed: placed,
            wrs: m.wrs as u64,
            cqes: m.cqes as u64,
            recv_cqe: r.cqe.map(since),
            probe: m.probe,
            ..self.mp_record_base(conn, m.id, m.size, m.start, m.done, ideal)
        }
    }

    /// One record per path of every Virtuoso connection.
    pub(in crate::sim) fn mp_path_records(&self) -> Vec<MpPathRecord> {
        let mut out = Vec::new();
        for (conn, c) in self.apps.conns.iter().enumerate().filter(|(_, c)| c.virtuoso) {
            let s = self.apps.state(c.sender).v_sender();
            for (path, qp) in c.qps.iter().enumerate() {
                out.push(MpPathRecord {
                    conn: MpConnId(conn as u32),
                    path: path as u32,
                    sip: self.qps[qp.idx()].sip,
                    cap_gbps: s.caps[path],
                    bytes: s.path_bytes[path],
                    max_wr: s.path_max_wr[path],
                });
            }
        }
        out
    }

    /// Every WR of every Virtuoso sender, by connection then post order.
    pub(in crate::sim) fn mp_wr_records(&self) -> Vec<MpWrRecord> {
        let mut out = Vec::new();
        for (conn, c) in self.apps.conns.iter().enumerate().filter(|(_, c)| c.virtuoso) {
            let s = self.apps.state(c.sender).v_sender();
            out.extend(s.wrs.iter().map(|w| MpWrRecord {
                conn: MpConnId(conn as u32),
                message: s.messages.get(w.msg as usize).map(|m| MpMsgId(m.id)),
                path: w.path,
                kind: w.kind,
                size: w.size,
                post: w.post,
                done: w.done,
                failed: w.failed,
            }));
        }
        out
    }
}
