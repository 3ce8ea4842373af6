//! Per-link settings (`[[links]]`, `fabric.error_rate`) and scheduled link events
//! (`[[events]] kind = "link_down" | "link_up"`) of a scenario.

use std::path::Path;

use serde::Deserialize;

use super::field_time;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::topology::Topology;

/// `[[links]]`: settings of the link(s) joining nodes `a` and `b`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// One end (node id).
    pub a: u32,
    /// The other end.
    pub b: u32,
    /// Per-packet loss probability on this link, both directions (default: `fabric.error_rate`).
    pub error_rate: Option<f64>,
    /// Line rate of this link (both directions), overriding the topology's: an asymmetric
    /// fabric, e.g. one spine link at a quarter rate (default: the topology's).
    pub rate: Option<String>,
}

/// `[[events]]`: a scheduled change during the run.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum EventSpec {
    /// The link(s) joining `a` and `b` fail at `at`.
    LinkDown {
        /// When.
        at: String,
        /// One end (node id).
        a: u32,
        /// The other end.
        b: u32,
    },
    /// The link(s) joining `a` and `b` are repaired at `at`.
    LinkUp {
        /// When.
        at: String,
        /// One end (node id).
        a: u32,
        /// The other end.
        b: u32,
    },
}

/// `fabric.error_rate` on every link, then the `[[links]]` overrides (loss and rate).
pub(super) fn set_link_overrides(topo: &mut Topology, all: Option<f64>, specs: &[LinkSpec], file: &Path) -> Result<()> {
    if let Some(r) = all {
        check_probability(file, "fabric.error_rate", r)?;
        for l in &mut topo.links {
            l.error_rate = r;
        }
    }
    for (i, spec) in specs.iter().enumerate() {
        let links = link_ends(file, &format!("links[{i}]"), topo, spec.a, spec.b)?;
        if let Some(r) = spec.error_rate {
            check_probability(file, &format!("links[{i}].error_rate"), r)?;
            for &l in &links {
                topo.links[l.idx()].error_rate = r;
            }
        }
        if let Some(r) = &spec.rate {
            let rate = super::field_rate(file, &format!("links[{i}].rate"), r)?;
            for &l in &links {
                topo.links[l.idx()].rate = rate;
            }
        }
    }
    Ok(())
}

/// The `[[events]]` as the simulator's link events.
pub(super) fn link_events(events: &[EventSpec], topo: &Topology, file: &Path) -> Result<Vec<crate::config::LinkEvent>> {
    let mut out = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        let (at, a, b, up) = match ev {
            EventSpec::LinkDown { at, a, b } => (at, a, b, false),
            EventSpec::LinkUp { at, a, b } => (at, a, b, true),
        };
        let at = field_time(file, &format!("events[{i}].at"), at)?;
        link_ends(file, &format!("events[{i}]"), topo, *a, *b)?;
        out.push(crate::config::LinkEvent { at, a: NodeId(*a), b: NodeId(*b), up });
    }
    Ok(out)
}

fn check_probability(file: &Path, field: &str, p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::input(file, 0, field, format!("{p} is not a probability in [0, 1]")));
    }
    Ok(())
}

/// The links joining nodes `a` and `b`, or an error naming `at.a` / `at.b`.
fn link_ends(file: &Path, at: &str, topo: &Topology, a: u32, b: u32) -> Result<Vec<crate::ids::LinkId>> {
    for (name, n) in [("a", a), ("b", b)] {
        if n as usize >= topo.len() {
            let msg = format!("unknown node {n} (the topology has {} nodes)", topo.len());
            return Err(Error::input(file, 0, format!("{at}.{name}"), msg));
        }
    }
    let links = crate::topology::links_between(topo, NodeId(a), NodeId(b));
    if links.is_empty() {
        return Err(Error::input(file, 0, format!("{at}.b"), format!("no link joins nodes {a} and {b}")));
    }
    Ok(links)
}
