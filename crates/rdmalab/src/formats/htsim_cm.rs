//! Reader of htsim connection-matrix files (`*.cm`; shared/reference/htsim/RUNS.md).
//!
//! ```text
//! Nodes 16
//! Connections 1150
//! 6->0 id 1 start 29195685 size 1792182
//! ```
//!
//! Layout as htsim's `ConnectionMatrix::load` (Broadcom/csg-htsim,
//! `sim/datacenter/connection_matrix.cpp`) reads it: line based, empty lines and lines whose
//! first token starts with `#` skipped; a header of `Nodes`, `Connections`, `Triggers` and
//! `Failures` lines; then one line per connection, `src->dst` followed by `key value`
//! pairs in any order: `start` (ps), `size` (bytes), `id` (nonzero), `prio` (htsim's
//! scheduling priority; read and ignored) and the flag `addon` (ignored). Triggered starts
//! (`trigger`, `send_done_trigger`, `recv_done_trigger`, `trigger`/`failure` lines) are
//! refused as [`Error::Unsupported`]. htsim parses `start` with `stof` (24-bit float); we
//! keep the exact integer. Unlike htsim, a line it would skip in the header but does not
//! know is an error here.

use std::collections::HashSet;
use std::path::Path;

use super::tokens::{is_space, parse_u64, show};
use super::units_parse::Decimal;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;
use crate::workload::FlowSpec;

/// One connection line, with htsim's node indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmConnection {
    /// 1-based line in the file.
    pub line: usize,
    /// htsim source node index.
    pub src: u32,
    /// htsim destination node index.
    pub dst: u32,
    /// The `id` field, if given.
    pub id: Option<u32>,
    /// Start time.
    pub start: Time,
    /// Bytes, at least 1.
    pub size: u64,
}

/// A whole connection matrix as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmMatrix {
    /// `Nodes N`.
    pub nodes: u32,
    /// The connections in file order.
    pub connections: Vec<CmConnection>,
}

/// Parses a connection matrix into flows sorted by start (stable, so file order breaks
/// ties), with htsim node `i` mapped to `hosts[i]`. Flows get pg 3 and dport 100 (the
/// HPCC reference's defaults) and an automatic sport.
pub fn parse_cm(text: &str, path: &Path, hosts: &[NodeId]) -> Result<Vec<FlowSpec>> {
    let m = parse_cm_matrix(text, path)?;
    let mut flows = Vec::with_capacity(m.connections.len());
    for c in &m.connections {
        let map = |i: u32, field: &str| {
            hosts.get(i as usize).copied().ok_or_else(|| {
                Error::input(
                    path,
                    c.line,
                    field,
                    format!("node {i} has no host: only {} hosts were given", hosts.len()),
                )
            })
        };
        flows.push(FlowSpec::new(map(c.src, "src")?, map(c.dst, "dst")?, c.size, c.start));
    }
    flows.sort_by_key(|f| f.start);
    Ok(flows)
}

/// Reads and parses the connection matrix at `path`; see [`parse_cm`].
pub fn read_cm(path: impl AsRef<Path>, hosts: &[NodeId]) -> Result<Vec<FlowSpec>> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    parse_cm(&text, path, hosts)
}

/// Header values seen so far.
#[derive(Debug, Default)]
struct Header {
    nodes: Option<u32>,
    connections: Option<(u64, usize)>,
}

/// Parses a connection matrix as written, in file order, checking the header counts,
/// node ranges, ids (nonzero, unique), sizes (at least 1) and that each connection has a start.
pub fn parse_cm_matrix(text: &str, path: &Path) -> Result<CmMatrix> {
    let mut h = Header::default();
    let mut conns = Vec::new();
    let mut ids = HashSet::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let toks: Vec<&str> =
            raw.split(|c: char| c.is_ascii() && is_space(c as u8)).filter(|t| !t.is_empty()).collect();
        let Some(&first) = toks.first() else { continue };
        if first.starts_with('#') {
            continue;
        }
        if first.contains("->") {
            let nodes =
                h.nodes.ok_or_else(|| Error::input(path, line, "Nodes", "a connection before the `Nodes N` line"))?;
            let c = parse_connection(&toks, line, path, nodes)?;
            if let Some(id) = c.id {
                if !ids.insert(id) {
                    return Err(Error::input(path, line, "id", format!("connection id {id} is used twice")));
                }
            }
            conns.push(c);
        } else if conns.is_empty() {
            header_line(&toks, line, path, &mut h)?;
        } else {
            return Err(unknown_line(first, line, path));
        }
    }
    finish(h, conns, path, text)
}

fn finish(h: Header, conns: Vec<CmConnection>, path: &Path, text: &str) -> Result<CmMatrix> {
    let last = text.split('\n').count();
    let nodes = h.nodes.ok_or_else(|| Error::input(path, last, "Nodes", "no `Nodes N` line"))?;
    let (want, line) =
        h.connections.ok_or_else(|| Error::input(path, last, "Connections", "no `Connections C` line"))?;
    if want != conns.len() as u64 {
        let msg = format!("the header says {want} connections but the file has {}", conns.len());
        return Err(Error::input(path, line, "Connections", msg));
    }
    Ok(CmMatrix { nodes, connections: conns })
}

fn unknown_line(first: &str, line: usize, path: &Path) -> Error {
    if first == "trigger" || first == "failure" {
        return Error::Unsupported(format!("{}:{line}: `{first}` lines (htsim triggers and failures)", path.display()));
    }
    Error::input(path, line, show(first), "unknown line: expected `src->dst ...`")
}

fn header_line(toks: &[&str], line: usize, path: &Path, h: &mut Header) -> Result<()> {
    let key = toks.first().copied().unwrap_or("");
    let value = |field: &str| -> Result<u64> {
        if toks.len() != 2 {
            return Err(Error::input(path, line, field, format!("expected `{field} <count>`")));
        }
        parse_u64(toks.get(1).copied().unwrap_or("")).map_err(|m| Error::input(path, line, field, m))
    };
    match key {
        "Nodes" => {
            let n = value(key)?;
            h.nodes =
                Some(u32::try_from(n).map_err(|_| Error::input(path, line, key, format!("{n} nodes is too many")))?);
        }
        "Connections" => h.connections = Some((value(key)?, line)),
        "Triggers" | "Failures" => {
            if value(key)? != 0 {
                return Err(Error::Unsupported(format!(
                    "{}:{line}: htsim {} are not supported",
                    path.display(),
                    key.to_lowercase()
                )));
            }
        }
        _ => return Err(unknown_line(key, line, path)),
    }
    Ok(())
}

fn parse_connection(toks: &[&str], line: usize, path: &Path, nodes: u32) -> Result<CmConnection> {
    let err = |field: &str, msg: String| Error::input(path, line, field, msg);
    let first = toks.first().copied().unwrap_or("");
    let (s, d) = first.split_once("->").unwrap_or((first, ""));
    let node = |t: &str, field: &str| -> Result<u32> {
        let v = parse_u64(t).map_err(|m| err(field, m))?;
        match u32::try_from(v) {
            Ok(v) if v < nodes => Ok(v),
            _ => Err(err(field, format!("node {v} is out of range 0..{nodes}"))),
        }
    };
    let (src, dst) = (node(s, "src")?, node(d, "dst")?);
    if src == dst {
        return Err(err("dst", format!("connection from node {src} to itself")));
    }
    let mut c = CmConnection { line, src, dst, id: None, start: Time::MAX, size: 0 };
    let mut start = None;
    let mut size = None;
    let mut rest = toks.iter().skip(1);
    while let Some(&key) = rest.next() {
        if key == "addon" {
            continue;
        }
        let Some(&val) = rest.next() else {
            return Err(err(key, format!("`{}` has no value", show(key))));
        };
        match key {
            "start" => start = Some(parse_start(val).map_err(|m| err(key, m))?),
            "size" => size = Some(parse_u64(val).map_err(|m| err(key, m))?),
            "id" => c.id = Some(parse_id(val).map_err(|m| err(key, m))?),
            "prio" => {
                val.parse::<i64>().map_err(|_| err(key, format!("`{}` is not an integer", show(val))))?;
            }
            "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                return Err(Error::Unsupported(format!(
                    "{}:{line}: field `{key}`: triggered connections",
                    path.display()
                )));
            }
            _ => return Err(err(&show(key), "unknown connection field (known: start, size, id, prio, addon)".into())),
        }
    }
    c.start = start.ok_or_else(|| err("start", "connection has no `start`".into()))?;
    c.size = size.ok_or_else(|| err("size", "connection has no `size`".into()))?;
    if c.size == 0 {
        return Err(err("size", "size 0 (htsim's unlimited flow) is not supported; sizes are at least 1 byte".into()));
    }
    Ok(c)
}

/// A start in whole picoseconds; a decimal or exponent form is accepted when it is whole.
fn parse_start(t: &str) -> std::result::Result<Time, String> {
    let d = Decimal::parse(t).map_err(|e| e.0)?;
    d.scaled(1, 0)
        .and_then(|v| u64::try_from(v).ok())
        .map(Time)
        .ok_or_else(|| format!("`{}` is not a whole number of picoseconds", show(t)))
}

fn parse_id(t: &str) -> std::result::Result<u32, String> {
    match parse_u64(t)? {
        0 => Err("flow id 0 is not allowed (htsim refuses it)".into()),
        v => u32::try_from(v).map_err(|_| format!("`{}` is too large", show(t))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: u32) -> Vec<NodeId> {
        (0..n).map(|i| NodeId(i + 100)).collect()
    }

    #[test]
    fn sorts_by_start_and_maps_hosts() {
        let t = "# c\nNodes 3\nConnections 3\n\n0->1 id 1 start 50 size 10\n2->0 start 5 size 7 prio 3 addon\n1->2 id 3 start 5 size 1\n";
        let f = parse_cm(t, Path::new("m.cm"), &hosts(3)).unwrap();
        assert_eq!(f.iter().map(|f| (f.src.0, f.start.0)).collect::<Vec<_>>(), vec![(102, 5), (101, 5), (100, 50)]);
        assert_eq!((f[2].pg, f[2].dport, f[2].sport), (3, 100, None));
    }

    #[test]
    fn errors_name_line_and_field() {
        let cases = [
            ("Nodes 3\nConnections 1\n0->5 start 1 size 1\n", "m.cm:3: field `dst`", "out of range"),
            ("Nodes 3\nConnections 1\n0->1 start 1 size x\n", "m.cm:3: field `size`", "not a non-negative"),
            ("Nodes 3\nConnections 2\n0->1 start 1 size 1\n", "m.cm:2: field `Connections`", "says 2"),
            ("Nodes 3\nConnections 1\n0->1 size 1\n", "m.cm:3: field `start`", "no `start`"),
            ("Nodes 3\nConnections 1\n0->1 start 1 size 1 colour red\n", "m.cm:3: field `colour`", "unknown"),
            ("Nodes 3\nConnections 1\n0->1 start 1.5 size 1\n", "m.cm:3: field `start`", "whole number"),
        ];
        for (text, loc, msg) in cases {
            let e = parse_cm(text, Path::new("m.cm"), &hosts(3)).unwrap_err().to_string();
            assert!(e.contains(loc) && e.contains(msg), "{text:?}: {e}");
        }
        let e = parse_cm("Nodes 9\nConnections 1\n7->1 start 1 size 1\n", Path::new("m.cm"), &hosts(3)).unwrap_err();
        assert!(e.to_string().contains("m.cm:3: field `src`"), "{e}");
        let e = parse_cm("Nodes 3\nConnections 1\n0->1 trigger 1 size 1\n", Path::new("m.cm"), &hosts(3)).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}
