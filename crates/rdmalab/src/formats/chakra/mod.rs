//! Reader of Chakra execution traces (MLCommons; docs/chakra.md): one file per rank,
//! `<prefix>.<rank>.et`, a stream of protobuf messages each preceded by its length as a
//! varint — the global metadata first, then one message per node. The messages are
//! declared in [`schema`] from the published field numbers and decoded by prost
//! (`Message::decode_length_delimited`).
//!
//! What a node becomes ([`NodeKind`]): compute (`COMP_NODE`, its recorded duration), a
//! collective (`COMM_COLL_NODE`: `comm_type`, `comm_size`, `pg_name`), a point-to-point send
//! or receive (`COMM_SEND_NODE`, `COMM_RECV_NODE`: `comm_src` or `comm_dst`, `comm_size`,
//! `comm_tag`), a memory load or store (`MEM_LOAD_NODE`, `MEM_STORE_NODE`: read, refused by
//! a run), a metadata or invalid node (`METADATA_NODE`, `INVALID_NODE`: skipped, as ASTRA-sim
//! skips them; so is a collective's CPU side, `is_cpu_op` without `comm_type`). Data and control dependencies are both kept (a node starts once both kinds are
//! done, as ASTRA-sim's feeder releases it). Any other node kind (storage, batch, checkpoint,
//! an unknown number) is refused with the file, the rank and the node id, as are a
//! truncated message, a dependency on a node the file does not hold, a repeated id and a
//! cycle of dependencies.
//!
//! [`write::write_collectives`] writes a list of collectives as such traces,
//! [`write_simai::write_simai`] a SimAI workload's iteration.

pub mod dims;
pub mod job;
pub mod schema;
pub mod system;
#[cfg(test)]
mod tests;
pub mod write;
pub mod write_simai;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prost::Message;

use crate::error::{Error, Result};
use crate::units::Time;
use schema::{Attribute, CollectiveCommType, GlobalMetadata, Node, NodeType, Value};

/// What a node does, as the run treats it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Compute for the node's duration.
    Compute,
    /// A collective of `bytes` per rank over the process group `pg` (`None`: every rank).
    Collective {
        /// `comm_type`.
        op: CollectiveCommType,
        /// `pg_name`, if given.
        pg: Option<String>,
    },
    /// A send of `bytes` to rank `dst`.
    Send {
        /// `comm_dst`.
        dst: u32,
        /// `comm_tag` (0 when absent).
        tag: i64,
    },
    /// A receive of `bytes` from rank `src`.
    Recv {
        /// `comm_src`.
        src: u32,
        /// `comm_tag` (0 when absent).
        tag: i64,
    },
    /// A load from local memory (read; no run models it).
    MemLoad,
    /// A store to local memory (read; no run models it).
    MemStore,
    /// A `METADATA_NODE` (Chakra's converter writes the process groups' set-up as one) or an
    /// `INVALID_NODE`: done as soon as its dependencies are, as ASTRA-sim skips it.
    Skipped,
}

impl NodeKind {
    /// Its name in records: `compute`, `collective`, `send`, `recv`, `mem_load`, `mem_store`,
    /// `skipped`.
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Compute => "compute",
            NodeKind::Collective { .. } => "collective",
            NodeKind::Send { .. } => "send",
            NodeKind::Recv { .. } => "recv",
            NodeKind::MemLoad => "mem_load",
            NodeKind::MemStore => "mem_store",
            NodeKind::Skipped => "skipped",
        }
    }
}

/// One node of a rank's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ChakraNode {
    /// Its id (unique in the file).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// What it does.
    pub kind: NodeKind,
    /// Bytes it moves (`comm_size`; a memory node's `tensor_size`; 0 for compute).
    pub bytes: u64,
    /// Its recorded duration (`duration_micros`).
    pub duration: Time,
    /// `is_cpu_op`, if given.
    pub is_cpu_op: Option<bool>,
    /// A compute node's `num_ops` and `tensor_size`, if given (the roofline model's inputs).
    pub roofline: (Option<u64>, Option<u64>),
    /// Data dependencies (node ids of this file).
    pub data_deps: Vec<u64>,
    /// Control dependencies (node ids of this file).
    pub ctrl_deps: Vec<u64>,
}

impl ChakraNode {
    /// Every dependency, data first.
    pub fn deps(&self) -> impl Iterator<Item = u64> + '_ {
        self.data_deps.iter().chain(&self.ctrl_deps).copied()
    }
}

/// One rank's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ChakraTrace {
    /// The file it was read from.
    pub path: PathBuf,
    /// The rank (from the file's name).
    pub rank: u32,
    /// The global metadata's `version`.
    pub version: String,
    /// The global metadata's attributes, as `name = value` text.
    pub metadata: Vec<(String, String)>,
    /// Its nodes, in file order.
    pub nodes: Vec<ChakraNode>,
}

impl ChakraTrace {
    /// Node positions by id.
    pub fn index(&self) -> HashMap<u64, usize> {
        self.nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect()
    }
}

/// The file of rank `rank` of the traces at `prefix`: `<prefix>.<rank>.et`.
pub fn rank_path(prefix: &Path, rank: u32) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(format!(".{rank}.et"));
    PathBuf::from(s)
}

/// How many ranks the traces at `prefix` have: the files `<prefix>.0.et`, `<prefix>.1.et`, ...
/// up to the first that does not exist. An error when there is none.
pub fn count_ranks(prefix: &Path) -> Result<u32> {
    let n = (0..).find(|&r| !rank_path(prefix, r).exists()).unwrap_or(0);
    if n == 0 {
        let p = rank_path(prefix, 0);
        return Err(Error::input(&p, 0, "path", "no such trace file (the prefix's rank 0)"));
    }
    Ok(n)
}

/// Reads the `ranks` traces at `prefix`; a missing rank file is an error naming it.
pub fn read_traces(prefix: &Path, ranks: u32) -> Result<Vec<ChakraTrace>> {
    (0..ranks).map(|r| read_trace(&rank_path(prefix, r), r)).collect()
}

/// Reads rank `rank`'s trace from `path`.
pub fn read_trace(path: &Path, rank: u32) -> Result<ChakraTrace> {
    let bytes = std::fs::read(path).map_err(|e| {
        Error::input(path, 0, format!("rank {rank}"), format!("cannot read the rank's trace file: {e}"))
    })?;
    parse_trace(&bytes, path, rank)
}

/// Parses one rank's trace (see the module's documentation); errors name `path`, the rank
/// and the node.
pub fn parse_trace(bytes: &[u8], path: &Path, rank: u32) -> Result<ChakraTrace> {
    let mut buf = bytes;
    let err = |field: String, msg: String| Error::input(path, 0, field, msg);
    if bytes.is_empty() {
        let msg = "the file is empty (0 bytes): a trace holds its global metadata at least".to_string();
        return Err(err(format!("rank {rank}, global metadata"), msg));
    }
    let meta = GlobalMetadata::decode_length_delimited(&mut buf).map_err(|e| {
        // Chakra's schema before 0.0.4 (2023) wrote no global metadata: the file starts with a
        // node, and its fields have other numbers.
        let old = Node::decode_length_delimited(bytes).ok().filter(|n| !n.name.is_empty()).map_or(String::new(), |n| {
            format!(
                ": the first message is a node ({}), so the file was written before Chakra's schema 0.0.4, \
                 whose field numbers differ; convert the workload again with a current Chakra",
                n.name
            )
        });
        err(format!("rank {rank}, global metadata"), format!("not a Chakra trace's first message: {e}{old}"))
    })?;
    let mut nodes = Vec::new();
    while !buf.is_empty() {
        let at = bytes.len() - buf.len();
        let raw = Node::decode_length_delimited(&mut buf).map_err(|e| {
            let after =
                nodes.last().map_or("the global metadata".to_string(), |n: &ChakraNode| format!("node {}", n.id));
            err(
                format!("rank {rank}, node after {after}"),
                format!("truncated or corrupt message at byte {at} of {}: {e}", bytes.len()),
            )
        })?;
        nodes.push(node(raw, path, rank)?);
    }
    let metadata = meta.attr.iter().map(|a| (a.name.clone(), show(&a.value))).collect();
    let t = ChakraTrace { path: path.to_path_buf(), rank, version: meta.version, metadata, nodes };
    check_graph(&t)?;
    Ok(t)
}

/// A node as the run treats it.
fn node(raw: Node, path: &Path, rank: u32) -> Result<ChakraNode> {
    let field = |what: &str| format!("rank {rank}, node {} ({}){what}", raw.id, raw.name);
    let err = |what: &str, msg: String| Error::input(path, 0, field(what), msg);
    let attr = |name: &str| raw.attr.iter().find(|a| a.name == name);
    let int = |name: &str| -> Result<Option<i128>> {
        match attr(name) {
            None => Ok(None),
            Some(Attribute { value: Some(v), .. }) => v
                .as_i128()
                .map(Some)
                .ok_or_else(|| err(&format!(".{name}"), format!("expected an integer, got {}", v.type_name()))),
            Some(_) => Ok(None),
        }
    };
    let need = |name: &str| -> Result<i128> {
        int(name)?.ok_or_else(|| err(&format!(".{name}"), format!("a {} node needs `{name}`", kind_name(raw.r#type))))
    };
    let rank_of = |name: &str| -> Result<u32> {
        let v = need(name)?;
        u32::try_from(v).map_err(|_| err(&format!(".{name}"), format!("{v} is not a rank")))
    };
    let size = |name: &str| -> Result<u64> {
        let v = need(name)?;
        u64::try_from(v).map_err(|_| err(&format!(".{name}"), format!("{v} is not a size in bytes")))
    };
    let is_cpu_op = match attr("is_cpu_op").and_then(|a| a.value.as_ref()) {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(v) => {
            Some(v.as_i128().ok_or_else(|| err(".is_cpu_op", format!("expected a bool, got {}", v.type_name())))? != 0)
        }
    };
    let (kind, bytes) = match NodeType::try_from(raw.r#type) {
        Ok(NodeType::CompNode) => (NodeKind::Compute, 0),
        // Chakra's PyTorch converter of 2023 and 2024 (schema 1.0.1: Chakra's own
        // tests/data/feeder_tests_trace) wrote the CPU side of a collective
        // (`c10d::broadcast_`, `is_cpu_op` true) as a collective node without `comm_type`; the
        // GPU kernel's node after it carries the collective.
        Ok(NodeType::CommCollNode) if is_cpu_op == Some(true) && attr("comm_type").is_none() => (NodeKind::Skipped, 0),
        Ok(NodeType::CommCollNode) => {
            let v = need("comm_type")?;
            let op = i32::try_from(v)
                .ok()
                .and_then(|v| CollectiveCommType::try_from(v).ok())
                .ok_or_else(|| err(".comm_type", format!("{v} is no CollectiveCommType")))?;
            let pg = match attr("pg_name").and_then(|a| a.value.as_ref()) {
                None => None,
                Some(Value::String(s)) if s.is_empty() => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(v) => return Err(err(".pg_name", format!("expected a string, got {}", v.type_name()))),
            };
            (NodeKind::Collective { op, pg }, size("comm_size")?)
        }
        Ok(NodeType::CommSendNode) => {
            let tag = int("comm_tag")?.unwrap_or(0) as i64;
            (NodeKind::Send { dst: rank_of("comm_dst")?, tag }, size("comm_size")?)
        }
        Ok(NodeType::CommRecvNode) => {
            let tag = int("comm_tag")?.unwrap_or(0) as i64;
            (NodeKind::Recv { src: rank_of("comm_src")?, tag }, size("comm_size")?)
        }
        Ok(t @ (NodeType::MemLoadNode | NodeType::MemStoreNode)) => {
            let b = int("tensor_size")?.unwrap_or(0).max(0) as u64;
            (if t == NodeType::MemLoadNode { NodeKind::MemLoad } else { NodeKind::MemStore }, b)
        }
        Ok(NodeType::MetadataNode | NodeType::InvalidNode) => (NodeKind::Skipped, 0),
        _ => {
            return Err(err(
                ".type",
                format!(
                    "a {} node is not modelled (compute, collective, send, receive, memory, metadata and invalid nodes are)",
                    kind_name(raw.r#type)
                ),
            ))
        }
    };
    let count = |name: &str| -> Result<Option<u64>> {
        int(name)?
            .map(|v| u64::try_from(v).map_err(|_| err(&format!(".{name}"), format!("{v} is below 0"))))
            .transpose()
    };
    let roofline = if kind == NodeKind::Compute { (count("num_ops")?, count("tensor_size")?) } else { (None, None) };
    Ok(ChakraNode {
        id: raw.id,
        roofline,
        kind,
        bytes,
        duration: Time::from_us(raw.duration_micros),
        is_cpu_op,
        data_deps: raw.data_deps,
        ctrl_deps: raw.ctrl_deps,
        name: raw.name,
    })
}

/// The schema's name of node type `t` (or its number).
fn kind_name(t: i32) -> String {
    NodeType::try_from(t).map_or_else(|_| format!("type {t}"), |k| k.schema_name().to_string())
}

/// An attribute's value as text.
fn show(v: &Option<Value>) -> String {
    match v {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Double(d)) => d.to_string(),
        Some(Value::Float(f)) => f.to_string(),
        Some(v) => v.as_i128().map_or_else(|| v.type_name().to_string(), |i| i.to_string()),
    }
}

/// A dependency on a node the file does not hold is refused, as ASTRA-sim's trace reader
/// (Chakra's feeder) refuses it when it loads the file: its graph check finds the missing
/// node among those ready to run and stops ("not found in index"). Named: the first such
/// dependency (its node, which list, the missing id), then how many there are in the file.
fn absent_deps(t: &ChakraTrace, ix: &HashMap<u64, usize>, field: impl Fn(&ChakraNode) -> String) -> Result<()> {
    let (mut first, mut deps, mut nodes, mut absent) = (None, 0usize, 0usize, std::collections::BTreeSet::new());
    for n in &t.nodes {
        let listed = n.data_deps.iter().map(|&d| ("data_deps", d)).chain(n.ctrl_deps.iter().map(|&d| ("ctrl_deps", d)));
        let before = deps;
        for (list, d) in listed.filter(|(_, d)| !ix.contains_key(d)) {
            first.get_or_insert((n, list, d));
            deps += 1;
            absent.insert(d);
        }
        nodes += usize::from(deps > before);
    }
    let Some((n, list, d)) = first else { return Ok(()) };
    let all = if deps > 1 {
        format!(" ({deps} dependencies of {nodes} nodes name {} nodes the file does not hold)", absent.len())
    } else {
        String::new()
    };
    let msg = format!(
        "no node {d} in this file{all}; ASTRA-sim refuses such a file too: convert the workload again with a \
         Chakra whose converter keeps every node that another depends on"
    );
    Err(Error::input(&t.path, 0, format!("{}.{list}", field(n)), msg))
}

/// Unique ids, dependencies on nodes of the file, no cycle (named, ids in order).
fn check_graph(t: &ChakraTrace) -> Result<()> {
    let mut ix = HashMap::with_capacity(t.nodes.len());
    let field = |n: &ChakraNode| format!("rank {}, node {} ({})", t.rank, n.id, n.name);
    for (i, n) in t.nodes.iter().enumerate() {
        if ix.insert(n.id, i).is_some() {
            return Err(Error::input(&t.path, 0, field(n), "a second node with this id"));
        }
    }
    absent_deps(t, &ix, field)?;
    // Iterative depth-first search; a node met again while open closes a cycle.
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; t.nodes.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..t.nodes.len() {
        if state[root] != NEW {
            continue;
        }
        state[root] = OPEN;
        stack.push((root, 0));
        while let Some(&mut (i, ref mut next)) = stack.last_mut() {
            let n = &t.nodes[i];
            let Some(d) = n.deps().nth(*next) else {
                state[i] = DONE;
                stack.pop();
                continue;
            };
            *next += 1;
            let j = ix[&d];
            match state[j] {
                NEW => {
                    state[j] = OPEN;
                    stack.push((j, 0));
                }
                OPEN => {
                    let from = stack.iter().position(|&(k, _)| k == j).unwrap_or(0);
                    let mut ids: Vec<String> = stack[from..].iter().map(|&(k, _)| t.nodes[k].id.to_string()).collect();
                    ids.push(t.nodes[j].id.to_string());
                    return Err(Error::input(
                        &t.path,
                        0,
                        format!("{}.deps", field(&t.nodes[j])),
                        format!("a cycle of dependencies: node {} (each waits on the next)", ids.join(" -> ")),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}
