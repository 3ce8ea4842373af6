//! The per-packet event trace (`[trace]`): what the reference's `mix.tr` gives its users,
//! for chosen flows, nodes or ports and a time window, bounded in size.
//!
//! Events: a packet queued at a switch egress (`enqueue`), a packet leaving any port
//! (`dequeue`: the start of its transmission, hosts included), a loss (`drop`), an ECN mark
//! (`ecn`), a PFC frame received (`pause`, `resume`), and at the sender an ACK or NACK
//! received (`ack`, `nack`; `cnp` besides when it carries a congestion notification).
//!
//! Records are streamed as CSV lines through a buffered writer to a spool file that the
//! driver (Python) converts to Parquet by streaming, so neither side ever holds the trace in
//! memory. `Trace::estimate` bounds the size before the run, and the writer stops at
//! `max_bytes` (the trace is then marked truncated). A run without `[trace]` pays one flag
//! test at each hook (transmit, switch enqueue, ACK receipt; drops, marks and PFC frames
//! are rare).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Simulation;
use crate::error::{Error, Result};
use crate::fabric::{Packet, PacketKind};
use crate::ids::{NodeId, PortId, QpId};
use crate::units::Time;

/// Bytes a record is counted for against `max_bytes` (a CSV line is about this long).
pub const RECORD_BYTES: u64 = 64;

/// The CSV header of the spool file, in record order.
pub const COLUMNS: &str = "time_ps,event,node,port_id,flow,qp,kind,seq,pg,wire,payload,qlen";

/// What to trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceConfig {
    /// Only packets of these flows (indices in the scenario's sorted flow list); empty: all.
    pub flows: Vec<u32>,
    /// Only events at these nodes or ports (either matches); both empty: everywhere.
    pub nodes: Vec<NodeId>,
    /// Ports (both ends of the links named in `[trace] ports`).
    pub ports: Vec<PortId>,
    /// From this time on.
    pub start: Time,
    /// Until this time (exclusive).
    pub end: Time,
    /// Cap on the trace, bytes counted at `RECORD_BYTES` per record.
    pub max_bytes: u64,
}

/// Kinds of traced events, as written in the `event` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// Queued at a switch egress.
    Enqueue,
    /// Leaves a port (transmission starts).
    Dequeue,
    /// Lost (buffer, link error or failure, no route).
    Drop,
    /// ECN-marked at a switch egress.
    Ecn,
    /// A PAUSE frame received.
    Pause,
    /// A RESUME frame received.
    Resume,
    /// An ACK received by the sender.
    Ack,
    /// A NACK received by the sender.
    Nack,
    /// A congestion notification (CNP flag) received by the sender.
    Cnp,
}

impl TraceEvent {
    fn name(self) -> &'static str {
        match self {
            TraceEvent::Enqueue => "enqueue",
            TraceEvent::Dequeue => "dequeue",
            TraceEvent::Drop => "drop",
            TraceEvent::Ecn => "ecn",
            TraceEvent::Pause => "pause",
            TraceEvent::Resume => "resume",
            TraceEvent::Ack => "ack",
            TraceEvent::Nack => "nack",
            TraceEvent::Cnp => "cnp",
        }
    }
}

fn kind_name(k: PacketKind) -> &'static str {
    match k {
        PacketKind::Data => "data",
        PacketKind::Ack => "ack",
        PacketKind::Nack => "nack",
        PacketKind::Pause => "pause",
        PacketKind::Resume => "resume",
    }
}

/// A trace being written.
#[derive(Debug)]
pub struct Trace {
    cfg: TraceConfig,
    flow_on: Vec<bool>,
    node_on: Vec<bool>,
    port_on: Vec<bool>,
    out: BufWriter<File>,
    path: PathBuf,
    /// Records written.
    pub records: u64,
    /// The cap was reached: later events were not written.
    pub truncated: bool,
    error: Option<String>,
}

fn mask(n: usize, ids: impl Iterator<Item = usize>) -> Vec<bool> {
    let mut m = vec![false; n];
    for i in ids.filter(|&i| i < n) {
        m[i] = true;
    }
    m
}

impl Trace {
    /// Opens the spool file at `path` and writes the header.
    pub fn open(cfg: TraceConfig, path: &Path, n_flows: usize, n_nodes: usize, n_ports: usize) -> Result<Trace> {
        let io = |e| Error::Io { path: path.into(), source: e };
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path).map_err(io)?);
        writeln!(out, "{COLUMNS}").map_err(io)?;
        Ok(Trace {
            flow_on: mask(n_flows, cfg.flows.iter().map(|&f| f as usize)),
            node_on: mask(n_nodes, cfg.nodes.iter().map(|n| n.idx())),
            port_on: mask(n_ports, cfg.ports.iter().map(|p| p.idx())),
            cfg,
            out,
            path: path.into(),
            records: 0,
            truncated: false,
            error: None,
        })
    }

    fn wants(&self, now: Time, node: NodeId, port: PortId, flow: u32) -> bool {
        if now < self.cfg.start || now >= self.cfg.end || self.truncated {
            return false;
        }
        let flow_ok = self.cfg.flows.is_empty() || self.flow_on.get(flow as usize).copied().unwrap_or(false);
        let place_ok = (self.cfg.nodes.is_empty() && self.cfg.ports.is_empty())
            || self.node_on.get(node.idx()).copied().unwrap_or(false)
            || self.port_on.get(port.idx()).copied().unwrap_or(false);
        flow_ok && place_ok
    }

    #[allow(clippy::too_many_arguments)]
    fn write(&mut self, now: Time, ev: TraceEvent, node: NodeId, port: PortId, flow: u32, pkt: &Packet, qlen: u64) {
        if (self.records + 1) * RECORD_BYTES > self.cfg.max_bytes {
            self.truncated = true;
            return;
        }
        self.records += 1;
        let opt = |v: u32| if v == u32::MAX { String::new() } else { v.to_string() };
        let r = writeln!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            now.0,
            ev.name(),
            node.0,
            port.0,
            opt(flow),
            opt(pkt.qp.0),
            kind_name(pkt.kind),
            pkt.seq,
            pkt.pg,
            pkt.wire,
            pkt.payload,
            qlen
        );
        if let Err(e) = r {
            self.error.get_or_insert_with(|| e.to_string());
        }
    }

    /// Flushes the spool file; an I/O error met while writing is reported here.
    pub fn finish(&mut self) -> Result<()> {
        let flushed = self.out.flush();
        match (self.error.take(), flushed) {
            (Some(e), _) => Err(Error::Io { path: self.path.clone(), source: std::io::Error::other(e) }),
            (None, Err(e)) => Err(Error::Io { path: self.path.clone(), source: e }),
            _ => Ok(()),
        }
    }
}

impl Simulation {
    /// True when the scenario asks for a trace (the driver then calls `start_trace`).
    pub fn trace_requested(&self) -> bool {
        self.cfg.trace.is_some()
    }

    /// Starts writing the trace asked for by the scenario into the spool file `path`,
    /// after checking its estimated size against its cap.
    pub fn start_trace(&mut self, path: &Path) -> Result<u64> {
        let Some(cfg) = self.cfg.trace.clone() else {
            return Err(Error::scenario("trace", "the scenario has no [trace] table"));
        };
        let estimate = self.trace_estimate(&cfg);
        if estimate > cfg.max_bytes {
            return Err(Error::scenario(
                "trace.max_bytes",
                format!(
                    "the trace would take about {estimate} bytes ({} records), over the cap of {}: \
                     narrow `flows`, `nodes`, `ports` or the time window, or raise `max_bytes`",
                    estimate / RECORD_BYTES,
                    cfg.max_bytes
                ),
            ));
        }
        let t = Trace::open(cfg, path, self.flows.len(), self.topo.len(), self.ports.len())?;
        self.trace = Some(Box::new(t));
        Ok(estimate)
    }

    /// An upper bound of the trace's size: for every selected flow, its data packets and
    /// ACKs times their events along the first path (a dequeue at every hop, an enqueue at
    /// every switch), counting only the path's selected ports; the time window is ignored.
    fn trace_estimate(&self, cfg: &TraceConfig) -> u64 {
        let any_place = cfg.nodes.is_empty() && cfg.ports.is_empty();
        let mut records = 0u64;
        for (i, f) in self.flows.iter().enumerate() {
            if !cfg.flows.is_empty() && !cfg.flows.contains(&(i as u32)) {
                continue;
            }
            let packets = f.size.div_ceil(self.cfg.mtu as u64);
            let acks = packets.div_ceil(self.cfg.ack_interval as u64);
            // ACKs cross as many hops back as data forward; the forward ports stand for both.
            let path = self.routes.first_path(&self.topo, f.src, f.dst);
            let hit =
                |p: &&PortId| any_place || cfg.ports.contains(p) || cfg.nodes.contains(&self.topo.ports[p.idx()].node);
            records += (packets + acks) * 2 * path.iter().filter(hit).count() as u64;
        }
        records * RECORD_BYTES
    }

    /// Closes the trace: `(records written, truncated at the cap)`.
    pub fn finish_trace(&mut self) -> Result<(u64, bool)> {
        match self.trace.as_mut() {
            Some(t) => {
                t.finish()?;
                Ok((t.records, t.truncated))
            }
            None => Ok((0, false)),
        }
    }

    /// The flow a QP carries (`u32::MAX` when none: PFC frames, unknown QPs).
    fn flow_of(&self, qp: QpId) -> u32 {
        self.qp_flow.get(qp.idx()).copied().unwrap_or(u32::MAX)
    }

    /// Records `ev` for `pkt` at `port` (on `port`'s node) if the trace selects it.
    #[cold]
    pub(super) fn trace_event(&mut self, ev: TraceEvent, port: PortId, pkt: &Packet) {
        let (node, qlen) = {
            let st = &self.ports[port.idx()];
            (st.node, st.total_queued())
        };
        let flow = self.flow_of(pkt.qp);
        let now = self.now;
        if let Some(t) = self.trace.as_mut() {
            if t.wants(now, node, port, flow) {
                t.write(now, ev, node, port, flow, pkt, qlen);
            }
        }
    }

    /// Remembers which flow QP `qp` was opened for.
    pub(super) fn note_qp_flow(&mut self, qp: QpId, flow: u32) {
        if self.qp_flow.len() <= qp.idx() {
            self.qp_flow.resize(qp.idx() + 1, u32::MAX);
        }
        self.qp_flow[qp.idx()] = flow;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_stops_at_the_cap_and_says_so() {
        let dir = std::env::temp_dir().join(format!("rdmalab-trace-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        let cfg = TraceConfig { end: Time::MAX, max_bytes: 3 * RECORD_BYTES, ..TraceConfig::default() };
        let mut t = Trace::open(cfg, &path, 1, 1, 1).unwrap();
        let pkt = Packet::pfc(PacketKind::Pause, 3, 64);
        for i in 0..5 {
            assert_eq!(t.wants(Time(i), NodeId(0), PortId(0), u32::MAX), i < 3 || !t.truncated);
            t.write(Time(i), TraceEvent::Pause, NodeId(0), PortId(0), u32::MAX, &pkt, 0);
        }
        t.finish().unwrap();
        assert_eq!((t.records, t.truncated), (3, true));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4, "header and three records");
        assert_eq!(text.lines().nth(1).unwrap(), "0,pause,0,0,,,pause,0,3,64,0,0");
        std::fs::remove_dir_all(dir).ok();
    }
}
