//! What a trace-driven job records beside its transfers: each node of the trace (a Chakra
//! rank's compute, collective, send and receive nodes, `formats::chakra::job`) with its
//! start, end and the dependency it waited on last, worked out after the run from the
//! transfers' times: a collective from its rank's part (from its dependencies done, at a rank
//! that only receives), a send from its post to its acknowledgement, a receive until its
//! message is placed, compute its duration after its dependencies. As in the run, the nodes
//! after a send wait for its post only.

use std::ops::Range;

use super::collective::{RecordedPart, TransferTimes};
use super::deps::TransferGraph;
use crate::ids::NodeId;
use crate::units::Time;

/// What a node does, as its times are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeWork {
    /// Compute of this duration.
    Compute(Time),
    /// The rank's part of a collective whose transfers are these.
    Collective(Range<usize>),
    /// Posting this transfer (done when acknowledged).
    Send(u32),
    /// Waiting for this transfer to be placed.
    Recv(u32),
}

/// One node of a rank's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceNode {
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: NodeId,
    /// Its id in the trace.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// `compute`, `collective`, `send`, `recv` or `skipped`.
    pub kind: &'static str,
    /// Bytes it moves.
    pub bytes: u64,
    /// Its dependencies: rows before it.
    pub deps: Vec<u32>,
    /// What it does.
    pub work: NodeWork,
}

/// Every node of a job, each row after the rows it depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceNodes {
    /// The nodes.
    pub rows: Vec<TraceNode>,
    /// When a node without dependencies starts.
    pub start: Time,
}

/// What a job records: its parts as collectives, and its trace's nodes.
#[derive(Clone, Debug, Default)]
pub struct JobRecords {
    /// Parts recorded in `res.collectives`.
    pub parts: Vec<RecordedPart>,
    /// The trace's nodes, for a trace-driven job.
    pub nodes: Option<TraceNodes>,
}

/// Each node's start and end (`Time::MAX`: not done), and the row it waited on last
/// (`u32::MAX`: none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTimes {
    /// When it started.
    pub start: Vec<Time>,
    /// When it was done.
    pub end: Vec<Time>,
    /// Its dependency that was done last.
    pub waited: Vec<u32>,
}

impl TraceNodes {
    /// Each node's times from the transfers' (`t`) of `graph`.
    pub fn times(&self, graph: &TransferGraph, t: &TransferTimes) -> NodeTimes {
        let n = self.rows.len();
        let mut out = NodeTimes { start: vec![Time::MAX; n], end: vec![Time::MAX; n], waited: vec![u32::MAX; n] };
        let ts = graph.transfers();
        // When each node released the nodes after it: a send at its post, the others at
        // their end.
        let mut release = vec![Time::MAX; n];
        for (i, row) in self.rows.iter().enumerate() {
            let mut ready = self.start;
            for &d in &row.deps {
                let e = release[d as usize];
                if out.waited[i] == u32::MAX || e >= ready {
                    (ready, out.waited[i]) = (e, d);
                }
            }
            let (start, end) = match &row.work {
                NodeWork::Compute(d) => (ready, if ready == Time::MAX { ready } else { ready + *d }),
                NodeWork::Send(k) => (t.posted[*k as usize], t.acked[*k as usize]),
                NodeWork::Recv(k) => (ready, t.received[*k as usize].max(ready)),
                NodeWork::Collective(range) => {
                    let (mut start, mut end, mut posts) = (Time::MAX, Time::ZERO, false);
                    for k in range.clone() {
                        if ts[k].src == row.host {
                            start = start.min(t.posted[k]);
                            end = end.max(t.acked[k]);
                            posts = true;
                        }
                        if ts[k].dst == row.host {
                            end = end.max(t.received[k]);
                        }
                    }
                    // A rank that only receives (a broadcast's last) starts as a receive does.
                    (if posts { start } else { ready }, end)
                }
            };
            (out.start[i], out.end[i]) = (start, end);
            release[i] = if matches!(row.work, NodeWork::Send(_)) { start } else { end };
        }
        out
    }
}
