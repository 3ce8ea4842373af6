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

use super::Simulation;
use crate::error::{Error, Result};
use crate::fabric::{Packet, PacketKind};
use crate::ids::{NodeId, PortId, QpId};
use crate::units::Time;

/// Bytes a record is counted for against `max_bytes` (a CSV line is about this long).
pub const RECORD_BYTES: u64 = 64;

/// The CSV header of the spool file, in record order.
pub const COLUMNS: &str = "time_ps,event,node,port_id,flow,qp,kind,seq,pg,wire,payload,qlen";

/// What to trace lives in `config`; kept here so the old path still works.
pub use crate::config::TraceConfig;

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

/// One record, before it is written.
#[derive(Clone, Copy, Debug)]
struct Row {
    time: Time,
    ev: TraceEvent,
    node: NodeId,
    port: PortId,
    flow: u32,
    pkt: Packet,
    qlen: u64,
}

/// Where a record stands in the origin order: the key of the event that made it, its node,
/// and its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RowKey {
    event: u64,
    node: u32,
    /// `OWNER`, or `NOT_OWNER` for a packet lost with a failed link while on a wire that
    /// crosses a cut and held by the receiving partition (sent in an earlier window): in one
    /// simulation its record comes before those of the packets the sender still held, sent
    /// later, and its `qlen` is the sender port's, which only the owner knows: the owner
    /// writes it in a `QLEN` line that the merge reads, not a record.
    rank: u8,
}

const QLEN: u8 = 0;
const NOT_OWNER: u8 = 1;
const OWNER: u8 = 2;

/// The records of the current picosecond, in the origin order (sorted when it ends).
#[derive(Debug, Default)]
struct Tick {
    time: Time,
    rows: Vec<(RowKey, Row)>,
}

/// A trace being written.
#[derive(Debug)]
pub struct Trace {
    cfg: TraceConfig,
    /// Origin order: the records of the picosecond being simulated.
    tick: Option<Tick>,
    /// A partition's spool: each line starts with its `RowKey` (`merge_spools`).
    keyed: bool,
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

    /// Writes `row` now (sequential order), or with the rest of its picosecond (origin order).
    fn write(&mut self, row: Row, key: RowKey) {
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
            opt(row.flow),
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

/// Interleaves the keyed spools of a parallel run's partitions (each in the origin order)
/// into the trace file `dest`, as one simulation would have written it: by time, the key
/// of the event, node, rank (`RowKey`); at most `max_bytes` (`RECORD_BYTES` a record). Returns
/// (records written, truncated). `truncated`: some partition already stopped at the cap.
pub fn merge_spools(parts: &[PathBuf], dest: &Path, max_bytes: u64, truncated: bool) -> Result<(u64, bool)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::io::BufRead;
    type Key = (u64, u64, u32, u8);
    let bad =
        |path: &Path, line: &str| Error::Invariant(format!("{}: not a trace spool line: {line:?}", path.display()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e| Error::Io { path, source: e }
    };
    // The key of a spool line (`event,rank,time,kind,node,...`) and where the record starts.
    let key_of = |path: &Path, line: &str| -> Result<(Key, usize)> {
        let mut f = line.splitn(6, ',');
        let mut num = || f.next().and_then(|v| v.parse::<u64>().ok());
        let (event, rank, time) = (num(), num(), num());
        let _kind = f.next();
        let node = f.next().and_then(|v| v.parse::<u32>().ok());
        let (Some(event), Some(rank), Some(time), Some(node)) = (event, rank, time, node) else {
            return Err(bad(path, line));
        };
        let start = line.match_indices(',').nth(1).map(|(i, _)| i + 1).ok_or_else(|| bad(path, line))?;
        Ok(((time, event, node, rank as u8), start))
    };
    let mut readers = Vec::with_capacity(parts.len());
    let mut heap = BinaryHeap::new();
    let mut lines = vec![String::new(); parts.len()];
    for (k, path) in parts.iter().enumerate() {
        let mut r = std::io::BufReader::with_capacity(1 << 16, File::open(path).map_err(io(path))?);
        let mut header = String::new();
        r.read_line(&mut header).map_err(io(path))?;
        if r.read_line(&mut lines[k]).map_err(io(path))? > 0 {
            heap.push(Reverse((key_of(path, lines[k].trim_end())?.0, k)));
        }
        readers.push(r);
    }
    let mut out = BufWriter::with_capacity(1 << 16, File::create(dest).map_err(io(dest))?);
    writeln!(out, "{COLUMNS}").map_err(io(dest))?;
    let (mut records, mut cut) = (0u64, truncated);
    // The owner's queue length at a port whose wire a failure emptied: (time, event, port).
    let mut qlen: Option<((u64, u64, u32), String)> = None;
    while let Some(Reverse((key, k))) = heap.pop() {
        let path = &parts[k];
        let (_, start) = key_of(path, lines[k].trim_end())?;
        let record = lines[k][start..].trim_end();
        let field = |i: usize| record.split(',').nth(i).ok_or_else(|| bad(path, record));
        let port = || field(3).and_then(|p| p.parse::<u32>().map_err(|_| bad(path, record)));
        if key.3 == QLEN {
            qlen = Some(((key.0, key.1, port()?), field(4)?.to_string()));
        } else if (records + 1) * RECORD_BYTES > max_bytes {
            cut = true;
            break;
        } else {
            let fix = qlen.as_ref().filter(|(at, _)| key.3 == NOT_OWNER && *at == (key.0, key.1, port().unwrap_or(0)));
            match fix {
                Some((_, q)) => {
                    let head = &record[..record.rfind(',').ok_or_else(|| bad(path, record))?];
                    writeln!(out, "{head},{q}").map_err(io(dest))?;
                }
                None => out.write_all(&lines[k].as_bytes()[start..]).map_err(io(dest))?,
            }
            records += 1;
        }
        lines[k].clear();
        if readers[k].read_line(&mut lines[k]).map_err(io(path))? > 0 {
            heap.push(Reverse((key_of(path, lines[k].trim_end())?.0, k)));
        }
    }
    out.flush().map_err(io(dest))?;
    Ok((records, cut))
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
        let mut t = Trace::open(cfg, path, self.flows.len(), self.topo.len(), self.ports.len())?;
        if self.origin_order {
            t.tick = Some(Tick::default());
            t.keyed = self.part.is_some();
        }
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
        let rank = if self.owns(node) { OWNER } else { NOT_OWNER };
        let key = RowKey { event: self.queue.popped_seq(), node: node.0, rank };
        if let Some(t) = self.trace.as_mut() {
            if t.wants(now, node, port, flow) {
                t.write(Row { time: now, ev, node, port, flow, pkt: *pkt, qlen }, key);
            }
        }
    }

    /// A partition's link failure empties the wire of `port`, one it owns that crosses a cut:
    /// its records of packets the receiving partition held need this port's queue length
    /// (see `RowKey`).
    #[cold]
    pub(super) fn trace_cut_wire_lost(&mut self, port: PortId) {
        let (node, qlen) = (self.ports[port.idx()].node, self.ports[port.idx()].total_queued());
        let peer = self.ports[self.ports[port.idx()].peer.idx()].node;
        let crosses = self.part.as_ref().is_some_and(|p| p.owns(node) && !p.owns(peer));
        let (now, event) = (self.now, self.queue.popped_seq());
        if let Some(t) = self.trace.as_mut().filter(|t| t.keyed && crosses) {
            let pkt = Packet::pfc(PacketKind::Pause, 0, 0); // (not written)
            let row = Row { time: now, ev: TraceEvent::Drop, node, port, flow: u32::MAX, pkt, qlen };
            t.write(row, RowKey { event, node: node.0, rank: QLEN });
        }
    }

    /// Remembers which flow QP `qp` was opened for (the trace's `flow` column, the rate
    /// sampler's rows).
    pub(super) fn note_qp_flow(&mut self, qp: QpId, flow: u32) {
        self.note_opened_for_sampling(qp, flow);
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
            let row = Row {
                time: Time(i),
                ev: TraceEvent::Pause,
                node: NodeId(0),
                port: PortId(0),
                flow: u32::MAX,
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

    /// Two partitions' keyed spools interleave by (time, event key, node, rank), the owner's
    /// queue length goes into the records the other partition wrote for its port, and the
    /// cap applies to the merged order.
    #[test]
    fn spools_merge_in_the_origin_order_under_the_cap() {
        let dir = std::env::temp_dir().join(format!("rdmalab-trace-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spool = |name: &str, lines: &[&str]| {
            let path = dir.join(name);
            std::fs::write(&path, format!("{COLUMNS}\n{}\n", lines.join("\n"))).unwrap();
            path
        };
        let a = spool(
            "a",
            &[
                "7,2,10,dequeue,3,5,,,pause,0,3,64,0,0",
                "4,0,20,qlen,1,2,9000",
                "4,2,20,drop,1,2,0,0,data,2,3,1048,1000,9000",
            ],
        );
        let b = spool("b", &["2,2,10,enqueue,8,9,,,pause,0,3,64,0,0", "4,1,20,drop,1,2,0,0,data,1,3,1048,1000,0"]);
        let dest = dir.join("t.csv");
        let all = merge_spools(&[a.clone(), b.clone()], &dest, 100 * RECORD_BYTES, false).unwrap();
        assert_eq!(all, (4, false));
        let text = std::fs::read_to_string(&dest).unwrap();
        let want = [
            "10,enqueue,8,9,,,pause,0,3,64,0,0",
            "10,dequeue,3,5,,,pause,0,3,64,0,0",
            "20,drop,1,2,0,0,data,1,3,1048,1000,9000",
            "20,drop,1,2,0,0,data,2,3,1048,1000,9000",
        ];
        assert_eq!(text.lines().skip(1).collect::<Vec<_>>(), want);
        assert_eq!(merge_spools(&[a, b], &dest, 3 * RECORD_BYTES, false).unwrap(), (3, true));
        assert_eq!(std::fs::read_to_string(&dest).unwrap().lines().count(), 4, "header and three records");
        std::fs::remove_dir_all(dir).ok();
    }
}
