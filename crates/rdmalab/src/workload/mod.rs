//! Traffic: what flows enter the network, and when.
//!
//! A flow is one message on its own QP, the ns-3 HPCC simulator's unit of work. Generators
//! produce `FlowSpec`s sorted by start time; the simulator admits them in that order.

pub mod attacks;
pub mod cdf;
pub mod generators;
pub mod serial_incast;

use crate::ids::{AppId, NodeId};
use crate::units::Time;

/// The largest flow, in payload bytes: 2^53 (9 PB, about eight days at 100 Gb/s). Sizes go
/// into float columns (slowdowns, Parquet, Python), which hold integers exactly only up to
/// 2^53; a larger "flow" is a typo (2^64 - 1 is `-1` read as unsigned), not an experiment.
pub const MAX_FLOW_BYTES: u64 = 1 << 53;

/// The complaint about a size above [`MAX_FLOW_BYTES`].
pub fn too_large(size: u64) -> String {
    format!("{size} bytes is larger than the largest flow, 2^53 = {MAX_FLOW_BYTES} bytes")
}

/// One flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Priority group (switch and NIC queue index) of the data packets, 0..8.
    pub pg: u8,
    /// Destination UDP port (the reference uses 100 for normal traffic, 200 for incast).
    pub dport: u16,
    /// Payload bytes, at least 1.
    pub size: u64,
    /// Start time (absolute).
    pub start: Time,
    /// Source UDP port; `None` = the reference's per-(src, dst) counter from 10000.
    pub sport: Option<u16>,
    /// Source IPv4 address, one of `src`'s (`Node::ips`); `None` = its first, default one.
    /// Flows that differ only in source address may take different ECMP paths.
    pub src_ip: Option<u32>,
    /// Tenant index (0 = the implicit `default` tenant; see `scenario::tenants`).
    pub tenant: u16,
    /// The host application that carries this flow ([`AppId::NONE`]: its own QP, opened
    /// at `start` and closed when it completes).
    pub app: AppId,
    /// The QP's transport: RC (default), UC or UD.
    pub transport: crate::fabric::transport::Transport,
    /// The verb its message is (`traffic[i].verb`): an RDMA WRITE (default) or a SEND,
    /// which consumes a receive WQE at the responder (`sim::mech::rnr`).
    pub verb: Verb,
}

/// The operation a flow's message is. A WRITE places its bytes at an address the requester
/// names and needs nothing posted at the responder; a SEND lands in the buffer of the
/// responder's next receive WQE, so it can find none posted (IBA vol. 1 §9.7.5.2.8, RNR NAK).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verb {
    /// RDMA WRITE (the default; what a plain flow always was).
    #[default]
    Write,
    /// SEND: consumes one receive WQE at the responder.
    Send,
}

impl Verb {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<Verb, String> {
        match s {
            "write" => Ok(Verb::Write),
            "send" => Ok(Verb::Send),
            other => Err(format!("unknown verb `{other}` (known: write, send)")),
        }
    }
}

impl FlowSpec {
    /// A flow with the reference's defaults (pg 3, dport 100, automatic sport).
    pub fn new(src: NodeId, dst: NodeId, size: u64, start: Time) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            pg: 3,
            dport: 100,
            size,
            start,
            sport: None,
            src_ip: None,
            tenant: 0,
            app: AppId::NONE,
            transport: crate::fabric::transport::Transport::Rc,
            verb: Verb::Write,
        }
    }
}
