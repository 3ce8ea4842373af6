//! Writer of Chakra execution traces: a list of collectives (`[[collective]]`) as one trace
//! file per rank, for other tools and for [`super::read_traces`] to run again.
//!
//! Each collective is a process group of its own (`pg_name` = its name); per rank, iteration
//! k of a collective is a `COMM_COLL_NODE` (`comm_type`, `comm_size`, `pg_name`, `is_cpu_op`
//! false) whose control dependency is the rank's iteration k − 1 of it, as a repeated
//! collective's rank starts iteration k + 1 once its part of k is done; a `start` after 0 is a
//! `COMP_NODE` of that duration before the first. What a trace does not hold (the algorithm,
//! channels and chunk) is the running side's choice (`Plan`), so the collectives must agree
//! on them per kind.

use std::path::{Path, PathBuf};

use prost::Message;

use super::rank_path;
use super::schema::{Attribute, CollectiveCommType, GlobalMetadata, Node, NodeType, Value};
use crate::app::collective::{Algorithm, Collective, Kind};
use crate::error::{Error, Result};
use crate::ids::NodeId;

/// The `comm_type` of a kind.
pub(super) fn comm_type(kind: Kind) -> CollectiveCommType {
    match kind {
        Kind::Allreduce => CollectiveCommType::AllReduce,
        Kind::Allgather => CollectiveCommType::AllGather,
        Kind::ReduceScatter => CollectiveCommType::ReduceScatter,
        Kind::Alltoall => CollectiveCommType::AllToAll,
        Kind::Broadcast => CollectiveCommType::Broadcast,
    }
}

/// Writes `collectives` as the traces `<prefix>.<rank>.et`, rank i being `hosts[i]` (every
/// host of every collective must be listed); returns the files written. The algorithms
/// each kind used, for the reader's plan, are the collectives' own (one per kind).
pub fn write_collectives(prefix: &Path, hosts: &[NodeId], collectives: &[Collective]) -> Result<Vec<PathBuf>> {
    let mut per_kind: Vec<(Kind, Algorithm)> = Vec::new();
    for (i, c) in collectives.iter().enumerate() {
        match per_kind.iter().find(|(k, _)| *k == c.kind) {
            Some(&(_, a)) if a != c.algorithm => {
                return Err(Error::scenario(
                    format!("collective[{i}].algorithm"),
                    format!(
                        "{} where an earlier {} uses {}: a trace names no algorithm",
                        c.algorithm.name(),
                        c.kind.name(),
                        a.name()
                    ),
                ))
            }
            Some(_) => {}
            None => per_kind.push((c.kind, c.algorithm)),
        }
        if c.start.0 % 1_000_000 != 0 {
            return Err(Error::scenario(
                format!("collective[{i}].start"),
                "a trace's durations are whole microseconds",
            ));
        }
        if let Some(h) = c.ranks.iter().find(|h| !hosts.contains(h)) {
            return Err(Error::scenario(
                format!("collective[{i}].ranks"),
                format!("host {h} is no rank of the traces"),
            ));
        }
    }
    let mut files = Vec::new();
    for (rank, host) in hosts.iter().enumerate() {
        let mut buf = header();
        let mut id = 0u64;
        for c in collectives.iter().filter(|c| c.ranks.contains(host)) {
            let mut before = None;
            if c.start.0 > 0 {
                let n = Node {
                    id,
                    name: format!("{}.start", c.name),
                    r#type: NodeType::CompNode as i32,
                    duration_micros: c.start.0 / 1_000_000,
                    ..Default::default()
                };
                n.encode_length_delimited(&mut buf).expect("a Vec grows");
                before = Some(id);
                id += 1;
            }
            for k in 0..c.repeat {
                let n = Node {
                    id,
                    name: format!("{}#{k}", c.name),
                    r#type: NodeType::CommCollNode as i32,
                    ctrl_deps: before.into_iter().collect(),
                    attr: collective_attrs(c.kind, c.size, &c.name),
                    ..Default::default()
                };
                n.encode_length_delimited(&mut buf).expect("a Vec grows");
                before = Some(id);
                id += 1;
            }
        }
        files.push(write_rank(prefix, rank as u32, buf)?);
    }
    Ok(files)
}

/// An attribute of a node.
pub(super) fn attr(name: &str, value: Value) -> Attribute {
    Attribute { name: name.into(), value: Some(value) }
}

/// A collective node's attributes: `comm_type`, `comm_size`, `pg_name`, `is_cpu_op` false.
pub(super) fn collective_attrs(kind: Kind, size: u64, pg: &str) -> Vec<Attribute> {
    vec![
        attr("comm_type", Value::Int64(comm_type(kind) as i64)),
        attr("comm_size", Value::Uint64(size)),
        attr("pg_name", Value::String(pg.to_string())),
        attr("is_cpu_op", Value::Bool(false)),
    ]
}

/// A trace file's start: the global metadata (Chakra's schema version, written by rdmalab).
pub(super) fn header() -> Vec<u8> {
    let mut buf = Vec::new();
    let meta = GlobalMetadata { version: "0.0.4".into(), attr: vec![attr("schema", Value::String("rdmalab".into()))] };
    meta.encode_length_delimited(&mut buf).expect("a Vec grows");
    buf
}

/// Writes rank `rank`'s file of `prefix`; returns its path.
pub(super) fn write_rank(prefix: &Path, rank: u32, buf: Vec<u8>) -> Result<PathBuf> {
    let path = rank_path(prefix, rank);
    std::fs::write(&path, buf).map_err(|source| Error::Io { path: path.clone(), source })?;
    Ok(path)
}
