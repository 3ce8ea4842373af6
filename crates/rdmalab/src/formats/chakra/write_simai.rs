//! Writer of one training iteration of a SimAI workload (`formats::simai`) as Chakra traces,
//! one file per SimAI rank, that the reader runs as `formats::simai::iteration` does:
//!
//! - the communications in SimAI's issue order (forward layers 0..L−1, then backward L−1..0,
//!   input gradient then weight gradient), each a `COMM_COLL_NODE` whose process group is the
//!   rank's group of that kind (`pg_name` = `0-tp.3`, `1-dp.0`, `2-ep.1`, `3-dp_ep.0`, the
//!   group number padded to one width: the k-th collective of a group at each of its ranks is
//!   one collective, its ranks in rank order as SimAI's groups are). The names sort as SimAI
//!   numbers its communicators and groups, so that the reader, which gives each group the
//!   first communicator that no earlier group sharing a rank with it uses and opens the QPs
//!   in the order the ranks reach the collectives, puts every transfer on the QP SimAI's run
//!   uses;
//! - before each, a `COMP_NODE` of the compute (and update) time since the last
//!   communication the rank waited for, depending on that communication; the collective
//!   depends on it (or, without compute, on that communication directly);
//! - a forward or input-gradient communication is waited for (the next compute depends on
//!   it), a weight-gradient one is not (SimAI's `Non_Blocking`).
//!
//! Chakra records durations in whole microseconds (`duration_micros`): a compute time that is
//! not whole is rounded to the nearest, and [`SimaiTraces`] says how many and by how much.

use std::path::{Path, PathBuf};

use prost::Message;

use super::schema::{Node, NodeType};
use super::write::{collective_attrs, header, write_rank};
use crate::error::Result;
use crate::formats::simai::{Group, SimaiWorkload};
use crate::units::Time;

/// What [`write_simai`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimaiTraces {
    /// The files, rank 0 first.
    pub files: Vec<PathBuf>,
    /// Compute nodes of one rank whose time is not a whole number of microseconds.
    pub rounded: usize,
    /// The largest of their roundings.
    pub max_rounding: Time,
}

/// Writes `w`'s iteration as `<prefix>.<rank>.et`, SimAI rank r as rank r.
pub fn write_simai(prefix: &Path, w: &SimaiWorkload) -> Result<SimaiTraces> {
    let (mut rounded, mut max_rounding) = (0, Time::ZERO);
    // Group numbers of one width, so that the names sort as the groups are numbered.
    let width = w.all_gpus.to_string().len();
    let mut files = Vec::new();
    for r in 0..w.all_gpus {
        let mut buf = header();
        let (mut waited, mut pending, mut id) = (None::<u64>, Time::ZERO, 0u64);
        for (_, l, phase, blocking, p) in w.iteration() {
            pending += p.compute;
            let Some((kind, group)) = p.comm else { continue };
            if p.bytes == 0 || w.group_size(group) < 2 {
                continue;
            }
            let g = w.groups(group).iter().position(|g| g.contains(&r)).expect("the groups partition the ranks");
            let mut deps: Vec<u64> = waited.into_iter().collect();
            if pending > Time::ZERO {
                let micros = (pending.0 + 500_000) / 1_000_000;
                let off = Time(pending.0.abs_diff(micros * 1_000_000));
                if r == 0 && off > Time::ZERO {
                    rounded += 1;
                    max_rounding = max_rounding.max(off);
                }
                let n = Node {
                    id,
                    name: format!("{}.{phase}.compute", l.name),
                    r#type: NodeType::CompNode as i32,
                    data_deps: deps,
                    duration_micros: micros,
                    ..Default::default()
                };
                n.encode_length_delimited(&mut buf).expect("a Vec grows");
                deps = vec![id];
                id += 1;
            }
            let n = Node {
                id,
                name: format!("{}.{phase}", l.name),
                r#type: NodeType::CommCollNode as i32,
                data_deps: deps,
                attr: collective_attrs(kind, p.bytes, &format!("{}-{}.{g:0width$}", communicator(group), group.name())),
                ..Default::default()
            };
            n.encode_length_delimited(&mut buf).expect("a Vec grows");
            if blocking {
                waited = Some(id);
                pending = l.update;
            }
            id += 1;
        }
        files.push(write_rank(prefix, r, buf)?);
    }
    Ok(SimaiTraces { files, rounded, max_rounding })
}

/// SimAI's communicator of a group kind (`formats::simai::iteration`'s lanes).
fn communicator(g: Group) -> u8 {
    match g {
        Group::Tp => 0,
        Group::Dp => 1,
        Group::Ep => 2,
        Group::DpEp => 3,
    }
}
