//! A scenario's workload written as Chakra traces (docs/chakra.md, "Writing traces"): its
//! `[[collective]]` list (`formats::chakra::write`) or its SimAI workload
//! (`formats::chakra::write_simai`), with the `[[traffic]] kind = "chakra"` entry that runs
//! the traces again on the same hosts and with the same algorithms, chunk and channels.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::simai::SimaiSpec;
use super::source_map::SourceMap;
use super::traffic::TrafficCtx;
use super::{locate, tenants, Scenario, ScenarioSpec, TrafficSpec, JSON_SOURCE};
use crate::app::collective::{Algorithm, Collective, Kind};
use crate::error::{Error, Result};
use crate::formats::chakra::write::write_collectives;
use crate::formats::chakra::write_simai::write_simai;
use crate::ids::NodeId;
use crate::units::Time;

/// What an export wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    /// The trace files, rank 0 first.
    pub files: Vec<PathBuf>,
    /// The host of each rank (node ids, as `ranks` names them).
    pub hosts: Vec<u32>,
    /// The `[[traffic]]` entry (TOML) that runs the traces as the scenario ran its workload.
    pub traffic: String,
    /// What the traces cannot hold exactly (compute rounded to whole microseconds).
    pub notes: Vec<String>,
}

/// Exports the workload of a TOML scenario (`path` names it in errors and resolves its
/// relative paths) to `<prefix>.<rank>.et`.
pub fn export_toml(text: &str, path: &Path, prefix: &Path) -> Result<Exported> {
    let built = Scenario::from_toml(text, path)?;
    let de = toml::Deserializer::new(text);
    let spec: ScenarioSpec = serde_path_to_error::deserialize(de).map_err(|e| locate::toml_error(e, text, path))?;
    let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
    export(&spec, &built, &base, path, prefix).map_err(|e| locate::with_line(e, path, || SourceMap::parse(text)))
}

/// Exports the workload of a JSON scenario (what Python sends; relative paths against `base`).
pub fn export_json(text: &str, base: &Path, prefix: &Path) -> Result<Exported> {
    let built = Scenario::from_json(text, base)?;
    export(&Scenario::json_spec(text)?, &built, base, Path::new(JSON_SOURCE), prefix)
}

fn export(spec: &ScenarioSpec, built: &Scenario, base: &Path, file: &Path, prefix: &Path) -> Result<Exported> {
    let simai: Vec<(usize, &SimaiSpec)> = spec
        .traffic
        .iter()
        .enumerate()
        .filter_map(|(i, t)| if let TrafficSpec::Simai(s) = t { Some((i, s)) } else { None })
        .collect();
    match (built.collectives.is_empty(), simai.as_slice()) {
        (false, []) => collectives(built, file, prefix),
        (true, [(i, s)]) => {
            let tenants = tenants::Tenants::build(&spec.tenants, file, &built.topology)?;
            let ctx = TrafficCtx { i: *i, base, file, topo: &built.topology, seed: spec.seed, tenants: &tenants };
            let (w, layout) = s.layout(&ctx).map_err(|e| locate::in_section(e, file, &format!("traffic[{i}]")))?;
            let t = write_simai(prefix, &w)?;
            let hosts: Vec<u32> = layout.hosts.iter().map(|h| h.0).collect();
            let mut notes = Vec::new();
            if t.rounded > 0 {
                notes.push(format!(
                    "{} compute time(s) of a rank rounded to whole microseconds (Chakra's duration_micros), by up to \
                     {} ns",
                    t.rounded,
                    t.max_rounding.0 / 1000
                ));
            }
            let algorithms = [(Kind::Allreduce, layout.algorithm)];
            let traffic = entry(prefix, &hosts, &algorithms, layout.channels, layout.chunk, layout.start);
            Ok(Exported { files: t.files, hosts, traffic, notes })
        }
        (true, []) => Err(Error::input(
            file,
            0,
            "collective",
            "nothing to export: no [[collective]] and no [[traffic]] kind = \"simai\"",
        )),
        _ => Err(Error::input(
            file,
            0,
            "traffic",
            "one workload at a time: the scenario has a [[collective]] list and SimAI workloads, or several SimAI \
             workloads",
        )),
    }
}

/// The `[[collective]]` list. A trace lists no ranks, a collective runs over its group's in
/// rank order: the ranks are numbered so that each collective's hosts come in its order
/// (the first host that no collective puts after an unnumbered one, the lowest first).
fn collectives(built: &Scenario, file: &Path, prefix: &Path) -> Result<Exported> {
    let cs = &built.collectives;
    for (i, c) in cs.iter().enumerate() {
        for (name, same) in [("chunk", c.chunk == cs[0].chunk), ("channels", c.channels == cs[0].channels)] {
            if !same {
                return Err(Error::input(
                    file,
                    0,
                    format!("collective[{i}].{name}"),
                    format!("differs from collective[0].{name}: a trace set runs with one {name}"),
                ));
            }
        }
    }
    let ids = rank_order(cs, file)?;
    let files = write_collectives(prefix, &ids, cs)?;
    let mut algorithms: Vec<(Kind, Algorithm)> = Vec::new();
    for c in cs {
        if !algorithms.iter().any(|(k, _)| *k == c.kind) {
            algorithms.push((c.kind, c.algorithm));
        }
    }
    let hosts: Vec<u32> = ids.iter().map(|h| h.0).collect();
    let traffic = entry(prefix, &hosts, &algorithms, cs[0].channels, cs[0].chunk, Time::ZERO);
    Ok(Exported { files, hosts, traffic, notes: Vec::new() })
}

/// Every host of `cs` once, each collective's in its order; an error names a collective
/// whose order contradicts the others'.
fn rank_order(cs: &[Collective], file: &Path) -> Result<Vec<NodeId>> {
    let mut hosts: Vec<NodeId> = cs.iter().flat_map(|c| c.ranks.iter().copied()).collect();
    hosts.sort();
    hosts.dedup();
    let mut after: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
    let mut before: BTreeMap<NodeId, usize> = hosts.iter().map(|&h| (h, 0)).collect();
    for c in cs {
        for p in c.ranks.windows(2) {
            after.entry(p[0]).or_default().push(p[1]);
            *before.get_mut(&p[1]).expect("a host of the list") += 1;
        }
    }
    let mut ready: BTreeSet<NodeId> = before.iter().filter(|(_, &n)| n == 0).map(|(&h, _)| h).collect();
    let mut order = Vec::with_capacity(hosts.len());
    while let Some(h) = ready.pop_first() {
        order.push(h);
        for &b in after.get(&h).map_or(&[][..], |v| v.as_slice()) {
            let n = before.get_mut(&b).expect("a host of the list");
            *n -= 1;
            if *n == 0 {
                ready.insert(b);
            }
        }
    }
    if order.len() < hosts.len() {
        let i = cs.iter().rposition(|c| c.ranks.iter().any(|h| !order.contains(h))).expect("an unplaced host");
        return Err(Error::input(
            file,
            0,
            format!("collective[{i}].ranks"),
            "their order contradicts another collective's: the traces number the ranks once, and each \
             collective runs over its ranks in that order",
        ));
    }
    Ok(order)
}

/// The `[[traffic]]` entry that runs the traces.
fn entry(prefix: &Path, hosts: &[u32], algs: &[(Kind, Algorithm)], channels: u16, chunk: u64, start: Time) -> String {
    let ranks: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    let algs: Vec<String> = algs.iter().map(|(k, a)| format!("{} = \"{}\"", k.name(), a.name())).collect();
    let mut s = String::from("[[traffic]]\nkind = \"chakra\"\n");
    let _ = writeln!(s, "path = {}", toml_string(&prefix.display().to_string()));
    let _ = writeln!(s, "ranks = [{}]", ranks.join(", "));
    let _ = writeln!(s, "algorithm = {{ {} }}", algs.join(", "));
    let _ = writeln!(s, "channels = {channels}\nchunk = {chunk}");
    if start > Time::ZERO {
        let _ = writeln!(s, "start = \"{}ps\"", start.0);
    }
    s
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
