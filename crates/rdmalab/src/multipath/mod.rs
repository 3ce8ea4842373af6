//! Multipath by data partition (the data-partition paper: Wang et al., *RDMA Load Balancing via Data
//! Partition*): one message cut into chunks sent over several QPs of one connection, each
//! QP with its own UDP source port so that ECMP may put it on its own path.
//!
//! A connection is two applications (see `app`): the **sender half** ([`MpSender`]) owns
//! the allocation of chunks to QPs and refills a QP when one of its chunks completes
//! (Alg. 1); the **receiver half** ([`MpReceiver`]) reassembles messages by the (data id,
//! offset) header each chunk carries in its payload (Alg. 2). They share nothing: the
//! receiver learns of a chunk from its receive completion and the header in its bytes.
//!
//! Everything here runs on completions and timers, never per packet.
//! `docs/multipath.md` is the guide: mechanisms, assumptions, experiments.

mod ports;
mod receiver;
mod sender;
pub mod virtuoso;

pub use ports::{count_equal_cost_paths, distinct_path_ports, path_nodes};
pub use receiver::{MpReceiver, Placement};
pub use sender::{ChunkLog, FreshQps, MpSender, SendOutcome, SenderMessage};
pub use virtuoso::{ChunkProbeConfig, ChunkSignal, MpVerb, PathBy, VirtuosoConfig, Weights};

use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;

/// How a message is cut up.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Split {
    /// Fixed-size chunks, each a WR on one QP of the connection (the data-partition paper).
    #[default]
    Partition,
    /// One sub-WR per path in proportion to its capacity, with MP verbs (Virtuoso).
    Virtuoso(VirtuosoConfig),
}

/// Which QP a chunk goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Allocation {
    /// One chunk per QP at the start, the next chunk (in offset order) to whichever QP
    /// completes one (Alg. 1, Fig. 3).
    #[default]
    Dynamic,
    /// The message split evenly over the QPs up front, each QP sending its own contiguous
    /// share chunk by chunk (Fig. 2's baseline).
    Static,
}

/// When a QP's chunk counts as done for the purpose of posting the next one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RefillOn {
    /// The RC work completion: the chunk's last byte acknowledged.
    #[default]
    Ack,
    /// The chunk's last packet handed to the wire (no round trip per chunk).
    Sent,
}

/// Which QP carries a slot's next chunk (`qp_policy = "reuse" | "recreate"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QpPolicy {
    /// The slot's own QP, open for the whole connection: its congestion state carries over
    /// from chunk to chunk.
    #[default]
    Reuse,
    /// A QP opened for the chunk with the slot's source port (so on the slot's path) and
    /// closed once the chunk is acknowledged: every chunk starts with a fresh congestion
    /// state at line rate, as every flow of a simulator whose flows are QPs does.
    Recreate,
}

/// How each QP of a connection gets its UDP source port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SportPolicy {
    /// The NIC's per-destination counter (10000, 10001, ...), as for any new QP.
    #[default]
    Sequential,
    /// Ports chosen with the switches' known ECMP hash so that the QPs' paths are pairwise
    /// different; an error when there are fewer equal-cost paths than QPs.
    DistinctPaths,
    /// These ports, one per QP, all different.
    Explicit(Vec<u16>),
}

/// A multipath connection's parameters (the `kind = "multipath"` traffic fields).
#[derive(Clone, Debug, PartialEq)]
pub struct MpConfig {
    /// How messages are cut.
    pub split: Split,
    /// QPs of the connection, at least 1.
    pub qps: u32,
    /// Data bytes per chunk, at least 1 and at most the message size.
    pub chunk_size: u64,
    /// In-payload header bytes per chunk (data id, total size, offset; 24 by assumption).
    pub chunk_header: u64,
    /// Chunks in flight per QP, at least 1 (Alg. 1: one).
    pub outstanding: u32,
    /// Dynamic or static allocation.
    pub allocation: Allocation,
    /// What frees a QP for its next chunk.
    pub refill_on: RefillOn,
    /// Time from a completion to the post of the next chunk (the host's reaction time).
    pub post_delay: Time,
    /// Which QP carries a slot's next chunk (partition split only).
    pub qp_policy: QpPolicy,
    /// Source ports of the QPs.
    pub sport_policy: SportPolicy,
    /// Priority class of the data (default 3, as flows).
    pub pg: u8,
    /// Destination UDP port (default 100, as flows).
    pub dport: u16,
    /// A message smaller than `chunk_size` is one chunk of its size rather than an error
    /// (set for messages a `workload` draws, whose mice are not cut; default false).
    pub small_as_one_chunk: bool,
}

impl Default for MpConfig {
    fn default() -> Self {
        MpConfig {
            split: Split::Partition,
            qps: 4,
            chunk_size: 32 * 1024,
            chunk_header: 24,
            outstanding: 1,
            allocation: Allocation::Dynamic,
            refill_on: RefillOn::Ack,
            post_delay: Time::ZERO,
            qp_policy: QpPolicy::Reuse,
            sport_policy: SportPolicy::Sequential,
            pg: 3,
            dport: 100,
            small_as_one_chunk: false,
        }
    }
}

impl MpConfig {
    /// Checks what can be checked without the topology; errors name the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(Error::scenario(field, msg));
        if self.qps == 0 {
            return bad("qps", "must be at least 1".into());
        }
        if self.chunk_size == 0 {
            return bad("chunk_size", "must be at least 1 byte".into());
        }
        if self.outstanding == 0 {
            return bad("outstanding", "must be at least 1 chunk per QP".into());
        }
        if self.pg == 0 || self.pg as usize >= crate::fabric::NUM_PRIOS {
            return bad("pg", format!("{} is not a data class (1..{})", self.pg, crate::fabric::NUM_PRIOS - 1));
        }
        if self.qp_policy == QpPolicy::Recreate && matches!(self.split, Split::Virtuoso(_)) {
            return bad("qp_policy", "\"recreate\" applies to split = \"partition\" only".into());
        }
        if let SportPolicy::Explicit(ports) = &self.sport_policy {
            if ports.len() != self.qps as usize {
                return bad("sports", format!("{} port(s) for {} QPs: give one per QP", ports.len(), self.qps));
            }
            let mut sorted = ports.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return bad("sports", format!("port {} appears twice: each QP needs its own", w[0]));
            }
        }
        Ok(())
    }

    /// Checks a message of `size` bytes against the chunk size.
    pub fn check_message(&self, size: u64) -> Result<()> {
        check_message_size(self.chunk_size, size, self.small_as_one_chunk)
    }

    /// Chunks of a message of `size` bytes.
    pub fn chunks_of(&self, size: u64) -> u64 {
        size.div_ceil(self.chunk_size)
    }
}

/// A message must have at least one byte and, unless `small_as_one_chunk`, at least one
/// chunk's worth.
pub fn check_message_size(chunk_size: u64, size: u64, small_as_one_chunk: bool) -> Result<()> {
    if size == 0 {
        return Err(Error::scenario("size", "must be at least 1 byte"));
    }
    if chunk_size > size && !small_as_one_chunk {
        return Err(Error::scenario(
            "chunk_size",
            format!("{chunk_size} bytes is larger than the message ({size} bytes)"),
        ));
    }
    Ok(())
}

/// One message posted on a multipath connection (Table 1's `MP_ibv_post_send` WR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpWr {
    /// The verb (`split = "partition"` takes only WRITE).
    pub verb: MpVerb,
    /// Data bytes (headers not included).
    pub size: u64,
}

impl MpWr {
    /// Writes `size` bytes to the receiver.
    pub fn write(size: u64) -> MpWr {
        MpWr { verb: MpVerb::Write, size }
    }
}

/// A checked multipath entry, ready to set up in a simulation (`scenario` checks it;
/// `MpTraffic::set_up` in `sim` opens its connections).
#[derive(Clone, Debug)]
pub struct MpTraffic {
    /// The connections' parameters.
    pub config: MpConfig,
    /// (src, dst, size, start) of each message, as written.
    pub messages: Vec<(NodeId, NodeId, u64, Time)>,
    /// The verb of each message.
    pub verbs: Vec<MpVerb>,
}

/// A multipath connection (index in the simulator's connection list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MpConnId(pub u32);

/// A message posted on a multipath connection, numbered across all connections in post
/// order; also its data id in the chunk headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MpMsgId(pub u32);

/// One message of a multipath connection, as measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpMessageRecord {
    /// The message.
    pub message: MpMsgId,
    /// Its connection.
    pub conn: MpConnId,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Data bytes.
    pub size: u64,
    /// QPs of the connection.
    pub qps: u32,
    /// Chunks it was cut into.
    pub chunks: u64,
    /// When it was posted (absolute).
    pub start: Time,
    /// Last chunk's completion (RC ACK at the sender) minus `start`; `None` if unfinished.
    pub fct: Option<Time>,
    /// Last byte placed at the receiver minus `start`; `None` if not all placed.
    pub recv_done: Option<Time>,
    /// The single-path ideal FCT of `size` bytes (the flows' `ideal`).
    pub ideal: Time,
    /// Data bytes the receiver placed (headers excluded; for a READ, placed at the source).
    pub bytes_placed: u64,
    /// WRs posted for it (chunks; Virtuoso: sub-WRs, READ requests and the notice SEND).
    pub wrs: u64,
    /// Completions the sender polled for it.
    pub cqes: u64,
    /// The receiver's one completion (a SEND's RECV; a partition message's last chunk)
    /// minus `start`; `None` for WRITE and READ under Virtuoso (passive receiver).
    pub recv_cqe: Option<Time>,
    /// Time it waited for the connection's path probe (Virtuoso's first message).
    pub probe: Time,
}

/// One WR a Virtuoso sender posted (probes, sub-WRs, READ requests, notice SENDs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpWrRecord {
    /// The connection.
    pub conn: MpConnId,
    /// Its message; `None` for a probe.
    pub message: Option<MpMsgId>,
    /// Path (QP slot).
    pub path: u32,
    /// What it is.
    pub kind: virtuoso::WrKind,
    /// Data bytes it moves (a READ request: the bytes asked for).
    pub size: u64,
    /// When it was posted (absolute).
    pub post: Time,
    /// When it completed (absolute): its ACK, or for a READ its data back.
    pub done: Option<Time>,
    /// It failed (retry exceeded, flushed), or a size-search WR was retransmitted under
    /// `chunk_probe_signal = "retransmission"`.
    pub failed: bool,
}

/// One path of a Virtuoso connection, as measured.
#[derive(Clone, Debug, PartialEq)]
pub struct MpPathRecord {
    /// The connection.
    pub conn: MpConnId,
    /// Path (QP slot, 0-based).
    pub path: u32,
    /// Source address of its QP.
    pub sip: u32,
    /// Its capacity estimate at the end of the run (Gb/s from the probe or the monitor;
    /// the weight itself with `weights = "equal"` or a list).
    pub cap_gbps: f64,
    /// Data bytes sent over it (probes excluded).
    pub bytes: u64,
    /// Largest data WR posted on it.
    pub max_wr: u64,
}

/// One chunk, as measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpChunkRecord {
    /// Its message.
    pub message: MpMsgId,
    /// Chunk number in the message (offset order).
    pub chunk: u32,
    /// Which QP of the connection carried it (0-based).
    pub qp: u32,
    /// That QP's UDP source port.
    pub sport: u16,
    /// That QP's source address.
    pub sip: u32,
    /// Offset of its data in the message.
    pub offset: u64,
    /// Data bytes (header excluded).
    pub size: u64,
    /// When the sender posted it (absolute).
    pub post: Time,
    /// When its RC completion came back (absolute); `None` if not yet.
    pub done: Option<Time>,
    /// When the receiver had it placed (absolute); `None` if not yet.
    pub recv: Option<Time>,
    /// Nodes of the ECMP path its QP's packets take, sender first.
    pub path: Vec<NodeId>,
}
