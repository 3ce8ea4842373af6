//! Reader of htsim connection-matrix files (`*.cm`; htsim's `sim/datacenter/connection_matrix.cpp`,
//! `ConnectionMatrix::load`; docs/formats.md).
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
//! scheduling priority; read and ignored), the flag `addon` (ignored), and the trigger
//! fields `trigger`, `send_done_trigger` and `recv_done_trigger`; then `trigger id T
//! oneshot|multishot|barrier [count N]` lines (htsim's `sim/trigger.h`). A matrix with
//! triggers runs as a dependency-driven job ([`parse_cm_traffic`], `app::deps`; the mapping
//! and its one departure from htsim, a remote trigger's notice a path's propagation delay
//! late, are in docs/formats.md, "htsim triggers"); [`parse_cm`], which returns flows only,
//! refuses it. `failure` lines are refused as [`Error::Unsupported`]. htsim parses `start`
//! with `stof` (24-bit float); we keep the exact integer. Unlike htsim, a line it would skip
//! in the header but does not know is an error here.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::tokens::{line_fields, parse_u64, read_text, show};
use super::units_parse::Decimal;
use crate::app::deps::{Dep, Transfer, TransferGraph, Trigger};
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
    /// Start time (`Time::MAX` for a connection that starts on a `trigger`).
    pub start: Time,
    /// Bytes, at least 1.
    pub size: u64,
    /// `trigger T`: the connection starts when trigger T fires (it has no `start`).
    pub trigger: Option<u32>,
    /// `send_done_trigger T`: the sender finishing (its last byte acknowledged) fires T.
    pub send_done: Option<u32>,
    /// `recv_done_trigger T`: the receiver having received every byte fires T.
    pub recv_done: Option<u32>,
}

/// What a trigger does when it fires (htsim's `sim/trigger.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmTriggerKind {
    /// `oneshot`: starts every target at its first firing (htsim aborts on a second).
    Oneshot,
    /// `multishot`: its k-th firing starts its k-th target, in file order.
    Multishot,
    /// `barrier count N`: starts every target once it has fired N times.
    Barrier(u32),
}

/// One `trigger id T <kind> [count N]` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmTrigger {
    /// 1-based line in the file.
    pub line: usize,
    /// Its id, nonzero.
    pub id: u32,
    /// What it does.
    pub kind: CmTriggerKind,
}

/// A whole connection matrix as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmMatrix {
    /// `Nodes N`.
    pub nodes: u32,
    /// The connections in file order.
    pub connections: Vec<CmConnection>,
    /// The `trigger` lines in file order.
    pub triggers: Vec<CmTrigger>,
}

impl CmMatrix {
    /// Whether any connection starts on, or fires, a trigger.
    pub fn has_triggers(&self) -> bool {
        !self.triggers.is_empty()
            || self.connections.iter().any(|c| c.trigger.or(c.send_done).or(c.recv_done).is_some())
    }
}

/// Parses a connection matrix into flows sorted by start (stable, so file order breaks
/// ties), with htsim node `i` mapped to `hosts[i]`. Flows get pg 3 and dport 100 (the
/// HPCC reference's defaults) and an automatic sport.
pub fn parse_cm(text: &str, path: &Path, hosts: &[NodeId]) -> Result<Vec<FlowSpec>> {
    let m = parse_cm_matrix(text, path)?;
    if m.has_triggers() {
        return Err(Error::Unsupported(format!(
            "{}: a matrix with triggers runs as a dependency-driven job: read it with `parse_cm_traffic` \
             (a scenario's `htsim_cm` traffic does)",
            path.display()
        )));
    }
    plain_flows(&m.connections, path, hosts)
}

/// Flows of `conns`, sorted by start (stable).
fn plain_flows(conns: &[CmConnection], path: &Path, hosts: &[NodeId]) -> Result<Vec<FlowSpec>> {
    let mut flows = Vec::with_capacity(conns.len());
    for c in conns {
        flows.push(FlowSpec::new(
            host_of(c, c.src, "src", path, hosts)?,
            host_of(c, c.dst, "dst", path, hosts)?,
            c.size,
            c.start,
        ));
    }
    flows.sort_by_key(|f| f.start);
    Ok(flows)
}

fn host_of(c: &CmConnection, i: u32, field: &str, path: &Path, hosts: &[NodeId]) -> Result<NodeId> {
    hosts.get(i as usize).copied().ok_or_else(|| {
        Error::input(path, c.line, field, format!("node {i} has no host: only {} hosts were given", hosts.len()))
    })
}

/// Reads and parses the connection matrix at `path`; see [`parse_cm`].
pub fn read_cm(path: impl AsRef<Path>, hosts: &[NodeId]) -> Result<Vec<FlowSpec>> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_cm(&text, path, hosts)
}

/// A connection matrix as rdmalab runs it: the connections that name no trigger as plain
/// flows, sorted by start; the others as one dependency-driven job ([`TransferGraph`]),
/// started at time 0 (a connection with a `start` is a transfer without dependencies whose
/// compute delay is its start).
#[derive(Clone, Debug)]
pub struct CmTraffic {
    /// The plain flows.
    pub flows: Vec<FlowSpec>,
    /// The triggered connections and those that fire triggers, in file order.
    pub job: Option<TransferGraph>,
    /// The file line of each of the job's transfers.
    pub job_lines: Vec<usize>,
}

/// Parses a connection matrix, triggers included (see [`CmTraffic`] and the mapping in
/// docs/formats.md): `trigger T` starts a connection when trigger T fires; `send_done_trigger
/// T` fires T when the connection's last byte is acknowledged at its sender (htsim's
/// `RoceSrc`, `set_end_trigger`), `recv_done_trigger T` when its last byte is placed at its
/// receiver; a oneshot fires once, a barrier once all its `count` sources have fired.
/// Errors name the line and field: an undeclared trigger, a oneshot fired twice, a barrier
/// whose count is not its number of sources, a trigger with targets that nothing fires, a
/// cycle (with its lines); a multishot with more than one source or target is unsupported.
pub fn parse_cm_traffic(text: &str, path: &Path, hosts: &[NodeId]) -> Result<CmTraffic> {
    let m = parse_cm_matrix(text, path)?;
    if !m.has_triggers() {
        return Ok(CmTraffic { flows: plain_flows(&m.connections, path, hosts)?, job: None, job_lines: Vec::new() });
    }
    job_of(&m, path, hosts)
}

/// Reads and parses the connection matrix at `path`; see [`parse_cm_traffic`].
pub fn read_cm_traffic(path: impl AsRef<Path>, hosts: &[NodeId]) -> Result<CmTraffic> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_cm_traffic(&text, path, hosts)
}

fn lines_of(conns: &[CmConnection], which: impl Iterator<Item = usize>) -> String {
    which.map(|i| conns[i].line.to_string()).collect::<Vec<_>>().join(", ")
}

fn job_of(m: &CmMatrix, path: &Path, hosts: &[NodeId]) -> Result<CmTraffic> {
    let conns = &m.connections;
    let declared: HashMap<u32, &CmTrigger> = m.triggers.iter().map(|t| (t.id, t)).collect();
    // Each trigger's sources (connection, event) and targets, in file order.
    let mut sources: HashMap<u32, Vec<(usize, Trigger)>> = HashMap::new();
    let mut targets: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, c) in conns.iter().enumerate() {
        let fields = [
            ("trigger", c.trigger, None),
            ("send_done_trigger", c.send_done, Some(Trigger::Sent)),
            ("recv_done_trigger", c.recv_done, Some(Trigger::Received)),
        ];
        for (field, id, when) in fields {
            let Some(id) = id else { continue };
            if !declared.contains_key(&id) {
                let msg = format!("trigger {id} is not declared (no `trigger id {id} ...` line)");
                return Err(Error::input(path, c.line, field, msg));
            }
            match when {
                None => targets.entry(id).or_default().push(i),
                Some(w) => sources.entry(id).or_default().push((i, w)),
            }
        }
    }
    for t in &m.triggers {
        let (src, tg) = (sources.get(&t.id).map_or(&[][..], |v| v), targets.get(&t.id).map_or(&[][..], |v| v));
        let src_lines = || lines_of(conns, src.iter().map(|s| s.0));
        match t.kind {
            CmTriggerKind::Oneshot if src.len() > 1 => {
                let msg = format!(
                    "oneshot trigger {} is fired by {} connections (lines {}): htsim aborts when a oneshot fires \
                     twice; a `barrier count {}` waits for all of them",
                    t.id,
                    src.len(),
                    src_lines(),
                    src.len()
                );
                return Err(Error::input(path, t.line, "id", msg));
            }
            CmTriggerKind::Barrier(n) if src.len() != n as usize => {
                let msg = format!(
                    "barrier {} waits for {n} firings but {} connection(s) fire it (lines {}){}",
                    t.id,
                    src.len(),
                    src_lines(),
                    if src.len() < n as usize { ": it would never fire" } else { ": htsim aborts on the extra ones" }
                );
                return Err(Error::input(path, t.line, "count", msg));
            }
            CmTriggerKind::Multishot if !tg.is_empty() && (tg.len() > 1 || src.len() > 1) => {
                return Err(Error::Unsupported(format!(
                    "{}:{}: field `multishot`: trigger {}'s k-th firing starts its k-th target, in the order the \
                     run fires it; rdmalab's dependencies are fixed before the run, so a multishot may have one \
                     source and one target only",
                    path.display(),
                    t.line,
                    t.id
                )));
            }
            _ => {}
        }
        if !tg.is_empty() && src.is_empty() {
            let msg = format!(
                "nothing fires trigger {}: the connection(s) at lines {} would never start",
                t.id,
                lines_of(conns, tg.iter().copied())
            );
            return Err(Error::input(path, t.line, "id", msg));
        }
    }
    // The job: every connection that names a trigger, in file order.
    let mut index = vec![u32::MAX; conns.len()];
    let mut members = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        if c.trigger.or(c.send_done).or(c.recv_done).is_some() {
            index[i] = members.len() as u32;
            members.push(i);
        }
    }
    let deps_of = |i: usize| -> Vec<Dep> {
        let Some(t) = conns[i].trigger else { return Vec::new() };
        sources[&t].iter().map(|&(on, when)| Dep { on: index[on], when }).collect()
    };
    check_cycles(conns, &members, &deps_of, path)?;
    let mut lanes: HashMap<(u32, u32), u16> = HashMap::new();
    let mut transfers = Vec::with_capacity(members.len());
    for &i in &members {
        let c = &conns[i];
        let lane = lanes.entry((c.src, c.dst)).or_insert(0);
        let this = *lane;
        *lane = lane.checked_add(1).ok_or_else(|| {
            Error::input(path, c.line, "dst", "more than 65,536 triggered connections between one pair of nodes")
        })?;
        transfers.push(Transfer {
            src: host_of(c, c.src, "src", path, hosts)?,
            dst: host_of(c, c.dst, "dst", path, hosts)?,
            bytes: c.size,
            lane: this,
            delay: if c.trigger.is_some() { Time::ZERO } else { c.start },
            deps: deps_of(i),
        });
    }
    let job = TransferGraph::with_remote(transfers)?;
    let plain: Vec<CmConnection> =
        conns.iter().filter(|c| c.trigger.or(c.send_done).or(c.recv_done).is_none()).copied().collect();
    Ok(CmTraffic {
        flows: plain_flows(&plain, path, hosts)?,
        job: Some(job),
        job_lines: members.iter().map(|&i| conns[i].line).collect(),
    })
}

/// Refuses a cycle of triggers, naming its lines: Kahn's order over the job's connections;
/// what is left waits, each on another that is left, so following the first such wait from
/// any of them closes a cycle.
fn check_cycles(
    conns: &[CmConnection],
    members: &[usize],
    deps_of: &dyn Fn(usize) -> Vec<Dep>,
    path: &Path,
) -> Result<()> {
    let n = members.len();
    let deps: Vec<Vec<Dep>> = members.iter().map(|&i| deps_of(i)).collect();
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, ds) in deps.iter().enumerate() {
        for d in ds {
            dependents[d.on as usize].push(k);
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&k| waiting[k] == 0).collect();
    let mut done = vec![false; n];
    while let Some(k) = ready.pop() {
        done[k] = true;
        for &j in &dependents[k] {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(j);
            }
        }
    }
    let Some(start) = (0..n).find(|&k| !done[k]) else { return Ok(()) };
    let mut walk = vec![start];
    let mut seen = vec![usize::MAX; n];
    seen[start] = 0;
    loop {
        let k = *walk.last().unwrap_or(&start);
        let next = deps[k].iter().map(|d| d.on as usize).find(|&j| !done[j]).unwrap_or(start);
        if seen[next] != usize::MAX {
            let cycle = &walk[seen[next]..];
            let conn = |k: usize| &conns[members[k]];
            let mut names: Vec<String> = cycle
                .iter()
                .map(|&k| format!("line {} (on trigger {})", conn(k).line, conn(k).trigger.unwrap_or(0)))
                .collect();
            names.push(format!("line {}", conn(next).line));
            let msg = format!(
                "a cycle of triggers: {} (each starts when the next has fired its trigger)",
                names.join(" waits on ")
            );
            return Err(Error::input(path, conn(cycle[0]).line, "trigger", msg));
        }
        seen[next] = walk.len();
        walk.push(next);
    }
}

/// Header values seen so far.
#[derive(Debug, Default)]
struct Header {
    nodes: Option<u32>,
    connections: Option<(u64, usize)>,
    triggers: Option<(u64, usize)>,
}

/// Parses a connection matrix as written, in file order, checking the header counts,
/// node ranges, ids (nonzero, unique), sizes (at least 1) and that each connection has a start.
pub fn parse_cm_matrix(text: &str, path: &Path) -> Result<CmMatrix> {
    let mut h = Header::default();
    let mut conns = Vec::new();
    let mut triggers: Vec<CmTrigger> = Vec::new();
    let mut ids = HashSet::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let toks = line_fields(raw);
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
        } else if first == "trigger" {
            let t = parse_trigger(&toks, line, path)?;
            if let Some(old) = triggers.iter().find(|o| o.id == t.id) {
                let msg = format!("trigger {} is declared twice (first at line {})", t.id, old.line);
                return Err(Error::input(path, line, "id", msg));
            }
            triggers.push(t);
        } else if conns.is_empty() && triggers.is_empty() {
            header_line(&toks, line, path, &mut h)?;
        } else {
            return Err(unknown_line(first, line, path));
        }
    }
    finish(h, conns, triggers, path, text)
}

fn finish(h: Header, conns: Vec<CmConnection>, triggers: Vec<CmTrigger>, path: &Path, text: &str) -> Result<CmMatrix> {
    let last = text.split('\n').count();
    let nodes = h.nodes.ok_or_else(|| Error::input(path, last, "Nodes", "no `Nodes N` line"))?;
    let (want, line) =
        h.connections.ok_or_else(|| Error::input(path, last, "Connections", "no `Connections C` line"))?;
    if want != conns.len() as u64 {
        let msg = format!("the header says {want} connections but the file has {}", conns.len());
        return Err(Error::input(path, line, "Connections", msg));
    }
    // As htsim: the `Triggers` count must match the `trigger` lines (absent counts as 0).
    let (want, line) = h.triggers.unwrap_or((0, last));
    if want != triggers.len() as u64 {
        let msg = format!("the header says {want} triggers but the file has {} `trigger` lines", triggers.len());
        return Err(Error::input(path, line, "Triggers", msg));
    }
    Ok(CmMatrix { nodes, connections: conns, triggers })
}

fn unknown_line(first: &str, line: usize, path: &Path) -> Error {
    if first == "failure" {
        return Error::Unsupported(format!("{}:{line}: `{first}` lines (htsim link failures)", path.display()));
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
        "Triggers" => h.triggers = Some((value(key)?, line)),
        "Failures" => {
            if value(key)? != 0 {
                return Err(Error::Unsupported(format!("{}:{line}: htsim failures are not supported", path.display())));
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
    let mut c = CmConnection {
        line,
        src,
        dst,
        id: None,
        start: Time::MAX,
        size: 0,
        trigger: None,
        send_done: None,
        recv_done: None,
    };
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
            "trigger" => c.trigger = Some(parse_trigger_id(val).map_err(|m| err(key, m))?),
            "send_done_trigger" => c.send_done = Some(parse_trigger_id(val).map_err(|m| err(key, m))?),
            "recv_done_trigger" => c.recv_done = Some(parse_trigger_id(val).map_err(|m| err(key, m))?),
            _ => {
                return Err(err(
                    &show(key),
                    "unknown connection field (known: start, size, id, prio, addon, trigger, send_done_trigger, \
                     recv_done_trigger)"
                        .into(),
                ))
            }
        }
    }
    c.start = match (start, c.trigger) {
        (Some(s), None) => s,
        (None, Some(_)) => Time::MAX,
        (Some(_), Some(_)) => {
            return Err(err("start", "a connection has either `start` or `trigger`, not both".into()))
        }
        (None, None) => return Err(err("start", "connection has no `start` (nor a `trigger`)".into())),
    };
    c.size = size.ok_or_else(|| err("size", "connection has no `size`".into()))?;
    if c.size == 0 {
        return Err(err("size", "size 0 (htsim's unlimited flow) is not supported; sizes are at least 1 byte".into()));
    }
    if c.size > crate::workload::MAX_FLOW_BYTES {
        return Err(err("size", crate::workload::too_large(c.size)));
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

/// A `trigger id T oneshot|multishot|barrier [count N]` line, as htsim's
/// `ConnectionMatrix::load` reads it (the kind is a bare word; `count` is a barrier's).
fn parse_trigger(toks: &[&str], line: usize, path: &Path) -> Result<CmTrigger> {
    let err = |field: &str, msg: String| Error::input(path, line, field, msg);
    let (mut id, mut kind, mut count) = (None, None, None);
    let mut rest = toks.iter().skip(1);
    while let Some(&key) = rest.next() {
        match key {
            "oneshot" | "multishot" | "barrier" => {
                if let Some(k) = kind {
                    return Err(err("type", format!("two kinds: `{k}` and `{key}`")));
                }
                kind = Some(key);
            }
            "id" | "count" => {
                let Some(&val) = rest.next() else { return Err(err(key, format!("`{key}` has no value"))) };
                if key == "id" {
                    id = Some(parse_trigger_id(val).map_err(|m| err(key, m))?);
                } else {
                    let n = parse_u64(val).map_err(|m| err(key, m))?;
                    count = Some(u32::try_from(n).map_err(|_| err(key, format!("`{}` is too large", show(val))))?);
                }
            }
            _ => {
                return Err(err(
                    &show(key),
                    "unknown trigger field (known: id, oneshot, multishot, barrier, count)".into(),
                ))
            }
        }
    }
    let id = id.ok_or_else(|| err("id", "trigger has no `id`".into()))?;
    let kind = match (kind, count) {
        (None, _) => return Err(err("type", "trigger has no kind (oneshot, multishot or barrier)".into())),
        (Some("barrier"), None | Some(0)) => {
            return Err(err("count", "a barrier needs `count N` with N at least 1 (htsim aborts otherwise)".into()))
        }
        (Some("barrier"), Some(n)) => CmTriggerKind::Barrier(n),
        (Some("oneshot"), _) => CmTriggerKind::Oneshot, // htsim reads and ignores a count here
        (Some(_), _) => CmTriggerKind::Multishot,
    };
    Ok(CmTrigger { line, id, kind })
}

fn parse_trigger_id(t: &str) -> std::result::Result<u32, String> {
    match parse_u64(t)? {
        0 => Err("trigger id 0 is not allowed (htsim refuses it)".into()),
        v => u32::try_from(v).map_err(|_| format!("`{}` is too large", show(t))),
    }
}

fn parse_id(t: &str) -> std::result::Result<u32, String> {
    match parse_u64(t)? {
        0 => Err("flow id 0 is not allowed (htsim refuses it)".into()),
        v => u32::try_from(v).map_err(|_| format!("`{}` is too large", show(t))),
    }
}

#[cfg(test)]
mod tests;
