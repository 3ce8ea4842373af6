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
//!
//! In the origin order (`--threads N`) the records of one picosecond are written in the
//! order of the events that made them (time, then the event's key: `sim::order`), then by
//! node, which does not depend on how the nodes are partitioned. Each partition of a parallel
//! run writes its own spool with the key in two leading columns; `merge_spools` interleaves
//! them into the one file, applying the cap to the merged order.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fabric::{Packet, PacketKind};
use crate::ids::{FlowId, NodeId, PortId};
use crate::units::Time;

/// Bytes a record is counted for against `max_bytes` (a CSV line is about this long).
pub const RECORD_BYTES: u64 = 64;

/// The CSV header of the spool file, in record order.
pub const COLUMNS: &str = "time_ps,event,node,port_id,flow,qp,kind,seq,pg,wire,payload,qlen";

use crate::config::TraceConfig;

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

pub(super) fn kind_name(k: PacketKind) -> &'static str {
    match k {
        PacketKind::Data => "data",
        PacketKind::Ack => "ack",
        PacketKind::Nack => "nack",
        PacketKind::Pause => "pause",
        PacketKind::Resume => "resume",
        PacketKind::FlowControl => "flow_control",
        PacketKind::LbControl => "lb_control",
        PacketKind::Credit => "credit",
    }
}

/// One record, before it is written.
#[derive(Clone, Copy, Debug)]
pub(super) struct Row {
    pub(super) time: Time,
    pub(super) ev: TraceEvent,
    pub(super) node: NodeId,
    pub(super) port: PortId,
    pub(super) flow: FlowId,
    pub(super) pkt: Packet,
    pub(super) qlen: u64,
}

/// Where a record stands in the origin order: the key of the event that made it, its node,
/// and its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RowKey {
    pub(super) event: u64,
    pub(super) node: u32,
    /// `OWNER`, or `NOT_OWNER` for a packet lost with a failed link while on a wire that
    /// crosses a cut and held by the receiving partition (sent in an earlier window): in one
    /// simulation its record comes before those of the packets the sender still held, sent
    /// later, and its `qlen` is the sender port's, which only the owner knows: the owner
    /// writes it in a `QLEN` line that the merge reads, not a record.
    pub(super) rank: u8,
}

pub(super) const QLEN: u8 = 0;
pub(super) const NOT_OWNER: u8 = 1;
pub(super) const OWNER: u8 = 2;

/// The records of the current picosecond, in the origin order (sorted when it ends).
#[derive(Debug, Default)]
pub(super) struct Tick {
    time: Time,
    rows: Vec<(RowKey, Row)>,
}

/// A trace being written.
#[derive(Debug)]
pub struct Trace {
    cfg: TraceConfig,
    /// Origin order: the records of the picosecond being simulated.
    pub(super) tick: Option<Tick>,
    /// A partition's spool: each line starts with its `RowKey` (`merge_spools`).
    pub(super) keyed: bool,
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

pub(super) fn mask(n: usize, ids: impl Iterator<Item = usize>) -> Vec<bool> {
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
            tick: None,
            keyed: false,
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

    pub(super) fn wants(&self, now: Time, node: NodeId, port: PortId, flow: FlowId) -> bool {
        if now < self.cfg.start || now >= self.cfg.end || self.truncated {
            return false;
        }
        let flow_ok = self.cfg.flows.is_empty() || self.flow_on.get(flow.idx()).copied().unwrap_or(false);
        let place_ok = (self.cfg.nodes.is_empty() && self.cfg.ports.is_empty())
            || self.node_on.get(node.idx()).copied().unwrap_or(false)
            || self.port_on.get(port.idx()).copied().unwrap_or(false);
        flow_ok && place_ok
    }

    /// Writes `row` now (sequential order), or with the rest of its picosecond (origin order).
    pub(super) fn write(&mut self, row: Row, key: RowKey) {
        let Some(tick) = self.tick.as_mut() else {
            return self.emit(&row, key);
        };
        if tick.time != row.time {
            self.flush_tick();
        }
        let tick = self.tick.as_mut().expect("origin order");
        tick.time = row.time;
        tick.rows.push((key, row));
    }

    /// Writes the held picosecond's records in the origin order.
    fn flush_tick(&mut self) {
        let Some(mut tick) = self.tick.take() else { return };
        tick.rows.sort_by_key(|r| r.0); // stable: a node's records stay in event order
        for (key, row) in tick.rows.drain(..) {
            self.emit(&row, key);
        }
        self.tick = Some(tick);
    }

    fn emit(&mut self, row: &Row, key: RowKey) {
        if key.rank == QLEN {
            let r = writeln!(
                self.out,
                "{},{QLEN},{},qlen,{},{},{}",
                key.event, row.time.0, row.node.0, row.port.0, row.qlen
            );
            if let Err(e) = r {
                self.error.get_or_insert_with(|| e.to_string());
            }
            return;
        }
        if (self.records + 1) * RECORD_BYTES > self.cfg.max_bytes {
            self.truncated = true;
            return;
        }
        self.records += 1;
        if self.keyed {
            if let Err(e) = write!(self.out, "{},{},", key.event, key.rank) {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
        let opt = |v: u32| if v == u32::MAX { String::new() } else { v.to_string() };
        let pkt = &row.pkt;
        let r = writeln!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            row.time.0,
            row.ev.name(),
            row.node.0,
            row.port.0,
            opt(row.flow.0),
            opt(pkt.qp.0),
            kind_name(pkt.kind),
            pkt.seq,
            pkt.pg,
            pkt.wire,
            pkt.payload,
            row.qlen
        );
        if let Err(e) = r {
            self.error.get_or_insert_with(|| e.to_string());
        }
    }

    /// Flushes the spool file; an I/O error met while writing is reported here.
    pub fn finish(&mut self) -> Result<()> {
        self.flush_tick();
        let flushed = self.out.flush();
        match (self.error.take(), flushed) {
            (Some(e), _) => Err(Error::Io { path: self.path.clone(), source: std::io::Error::other(e) }),
            (None, Err(e)) => Err(Error::Io { path: self.path.clone(), source: e }),
            _ => Ok(()),
        }
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
            assert_eq!(t.wants(Time(i), NodeId(0), PortId(0), FlowId::NONE), i < 3 || !t.truncated);
            let row = Row {
                time: Time(i),
                ev: TraceEvent::Pause,
                node: NodeId(0),
                port: PortId(0),
                flow: FlowId::NONE,
                pkt,
                qlen: 0,
            };
            t.write(row, RowKey { event: 0, node: 0, rank: OWNER });
        }
        t.finish().unwrap();
        assert_eq!((t.records, t.truncated), (3, true));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4, "header and three records");
        assert_eq!(text.lines().nth(1).unwrap(), "0,pause,0,0,,,pause,0,3,64,0,0");
        std::fs::remove_dir_all(dir).ok();
    }
}
