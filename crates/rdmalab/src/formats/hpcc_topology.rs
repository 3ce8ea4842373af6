//! Reader of the ns-3 HPCC topology file (repo `mix/fat.txt`, `mix/topology.txt`; read in `main`
//! of the reference's `simulation/scratch/third.cc`; docs/formats.md).
//!
//! ```text
//! N S L
//! <S switch ids>
//! a b RATE DELAY ERR      (L times)
//! ```
//!
//! Tokens are separated by any whitespace, as the reference reads them with C++ `>>`, and
//! anything after the L-th link is ignored (`topology.txt` has explanatory text there).
//! The reference trusts the file; we check it, so that a bad file fails here with the file,
//! line and field instead of deep inside a run.

use std::path::Path;

use super::tokens::{read_text, show, Reader};
use super::units_parse::{parse_nonzero_rate, parse_time};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::topology::Topology;
use crate::units::{Rate, Time};

/// Most nodes a topology file may declare (keeps a corrupt `N` from allocating gigabytes).
pub const MAX_NODES: u64 = 1 << 22;

/// One link record as read, before it joins the graph.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkRec {
    line: usize,
    a: NodeId,
    b: NodeId,
    rate: Rate,
    delay: Time,
    err: f64,
}

/// Parses a topology file's text. `path` is used in error messages only.
///
/// Errors (all [`Error::Input`] naming file, line and field): a file that ends early, a
/// non-number, a count that is negative or too large, a switch id out of range or listed
/// twice, a link end out of range, a self-link, a zero or malformed rate, a negative or
/// malformed delay, a loss rate outside [0, 1], and a host with no link.
pub fn parse_topology(text: &str, path: &Path) -> Result<Topology> {
    let mut r = Reader::new(text, path);
    r.check_record("the header", "N S L")?;
    let (n, n_line) = r.u64_max("N", "the node count N", MAX_NODES)?;
    let (s, s_line) = r.u64("S", "the switch count S")?;
    if s > n {
        return Err(r.err(s_line, "S", format!("{s} switches but only N = {n} nodes")));
    }
    let (l, _) = r.u64("L", "the link count L")?;
    let switches = read_switches(&mut r, n, s)?;
    let links = read_links(&mut r, n, l)?;
    check_hosts_linked(&r, n, n_line, &switches, &links)?;
    build(n, &switches, &links, path)
}

/// Reads and parses the topology file at `path`.
pub fn read_topology(path: impl AsRef<Path>) -> Result<Topology> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_topology(&text, path)
}

pub(crate) fn read_switches(r: &mut Reader<'_>, n: u64, s: u64) -> Result<Vec<NodeId>> {
    let mut seen = vec![false; usize::try_from(n).unwrap_or(0)];
    let mut out = Vec::new();
    for i in 0..s {
        let ctx = format!("switch id {} of S = {s}", i + 1);
        let (id, line) = r.u64("switch id", &ctx)?;
        let slot = usize::try_from(id).ok().and_then(|k| seen.get_mut(k));
        match slot {
            None => return Err(r.err(line, "switch id", format!("switch id {id} is out of range 0..{n}"))),
            Some(true) => return Err(r.err(line, "switch id", format!("switch id {id} is listed twice"))),
            Some(flag) => *flag = true,
        }
        out.push(NodeId(id as u32)); // id < n <= MAX_NODES < 2^32
    }
    Ok(out)
}

pub(crate) fn read_links(r: &mut Reader<'_>, n: u64, l: u64) -> Result<Vec<LinkRec>> {
    let mut out = Vec::new();
    for i in 0..l {
        out.push(read_link(r, n, i + 1, l)?);
    }
    Ok(out)
}

fn read_link(r: &mut Reader<'_>, n: u64, k: u64, l: u64) -> Result<LinkRec> {
    let ctx = |f: &str| format!("`{f}` of link {k} of L = {l}");
    r.check_record(&format!("link {k}"), "a b RATE DELAY ERR")?;
    let (a, line) = read_end(r, "a", &ctx("a"), n, k)?;
    let (b, b_line) = read_end(r, "b", &ctx("b"), n, k)?;
    if a == b {
        return Err(r.err(b_line, "b", format!("link {k} joins node {a} to itself")));
    }
    let t = r.next("RATE", &ctx("RATE"))?;
    let rate = parse_nonzero_rate(t.text).map_err(|e| r.err(t.line, "RATE", format!("link {k}: {e}")))?;
    let t = r.next("DELAY", &ctx("DELAY"))?;
    let delay = parse_time(t.text).map_err(|e| r.err(t.line, "DELAY", format!("link {k}: {e}")))?;
    let t = r.next("ERR", &ctx("ERR"))?;
    let err = super::tokens::parse_f64(t.text).map_err(|e| r.err(t.line, "ERR", format!("link {k}: {e}")))?;
    if !(0.0..=1.0).contains(&err) {
        return Err(r.err(t.line, "ERR", format!("link {k}: loss rate `{}` is outside [0, 1]", show(t.text))));
    }
    Ok(LinkRec { line, a, b, rate, delay, err })
}

fn read_end(r: &mut Reader<'_>, field: &str, ctx: &str, n: u64, k: u64) -> Result<(NodeId, usize)> {
    let (v, line) = r.u64(field, ctx)?;
    if v >= n {
        return Err(r.err(line, field, format!("link {k}: node id {v} is out of range 0..{n}")));
    }
    Ok((NodeId(v as u32), line)) // v < n <= MAX_NODES < 2^32
}

/// Every host needs a link: the reference takes the NIC rate from a host's first link and
/// routes through it. (This also bounds `N` by the size of the file.)
pub(crate) fn check_hosts_linked(
    r: &Reader<'_>,
    n: u64,
    n_line: usize,
    switches: &[NodeId],
    links: &[LinkRec],
) -> Result<()> {
    let mut linked = vec![false; usize::try_from(n).unwrap_or(0)];
    for s in switches {
        if let Some(f) = linked.get_mut(s.idx()) {
            *f = true;
        }
    }
    for l in links {
        for end in [l.a, l.b] {
            if let Some(f) = linked.get_mut(end.idx()) {
                *f = true;
            }
        }
    }
    match linked.iter().position(|&f| !f) {
        Some(h) => Err(r.err(n_line, "N", format!("host {h} has no link (N = {n} counts it as a host)"))),
        None => Ok(()),
    }
}

pub(crate) fn build(n: u64, switches: &[NodeId], links: &[LinkRec], path: &Path) -> Result<Topology> {
    let mut topo = Topology::new(usize::try_from(n).unwrap_or(0), switches);
    for l in links {
        // Every value was checked above; a failure here would name the link anyway.
        topo.add_link(l.a, l.b, l.rate, l.delay, l.err)
            .map_err(|e| Error::input(path, l.line, "a", format!("link {}-{}: {e}", l.a, l.b)))?;
    }
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Topology> {
        parse_topology(t, Path::new("t.txt"))
    }

    #[test]
    fn small_star_with_trailing_words() {
        let t = parse("3 1 2\n0\n0 1 100Gbps 1000ns 0\n0 2 25Gbps 0.001ms 0.000000\nwords after\n").unwrap();
        assert_eq!(t.len(), 3);
        assert!(!t.is_host(NodeId(0)) && t.is_host(NodeId(1)));
        assert_eq!(t.links[1].rate, Rate::gbps(25));
        assert_eq!(t.links[1].delay, Time::from_us(1));
        assert_eq!(t.ports[2].ifindex, 2);
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = parse("3 1 2\n0\n0 1 100Gbps 1000ns 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:3: field `a`") && e.contains("truncated"), "{e}");
        let e = parse("3 1 1\n0\n0 0 100Gbps 1000ns 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:3: field `b`") && e.contains("itself"), "{e}");
        let e = parse("3 2 1\n0 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:2: field `switch id`") && e.contains("twice"), "{e}");
        let e = parse("3 1 1\n0\n0 1 1Gbps 1ns 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:1: field `N`") && e.contains("host 2 has no link"), "{e}");
        let e = parse("3 1 2\n0\n0 1 100Gbps 1000ns\n0 2 100Gbps 1000ns 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:3: field `ERR`") && e.contains("has 4 field(s)"), "{e}");
        let e = parse("3 1 2\n0\n0 1 100Gbps 1000ns 0 0\n0 2 100Gbps 1000ns 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:3: field `ERR`") && e.contains("has 6 field(s)"), "{e}");
        let e = parse("3 1\n2\n0\n0 1 100Gbps 1000ns 0\n").unwrap_err().to_string();
        assert!(e.contains("t.txt:1: field `L`") && e.contains("missing"), "{e}");
        let e = parse("99999999 0 0").unwrap_err().to_string();
        assert!(e.contains("field `N`") && e.contains("maximum"), "{e}");
    }
}
