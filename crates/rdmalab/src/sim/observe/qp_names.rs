//! Names for the QPs opened while running, the same for any thread count.
//!
//! In the origin order a QP opened at setup (a flow's, an application's first) has the same
//! slot everywhere, and outputs name it by that slot. A QP opened while running (a staggered
//! chunk's, an overlay pair's) takes the next slot of the simulation that opens it: with
//! partitions, that depends on what else the sender's partition opened, so outputs rename it.
//! Its name is the setup QPs' count plus its rank among every QP opened while running, by
//! (time opened, sending host, how many that host opened before): facts of the sending host
//! alone, so every cut gives the same names, `--threads 1` included.

use std::collections::HashMap;

use crate::ids::{NodeId, QpId};
use crate::sim::Simulation;
use crate::stats::RateSample;
use crate::units::Time;

/// One QP opened while running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct RuntimeOpen {
    at: Time,
    src: NodeId,
    /// QPs its host opened while running before it.
    nth: u32,
    slot: QpId,
}

/// The QPs a simulation opened while running (origin order only).
#[derive(Clone, Debug, Default)]
pub(crate) struct RuntimeQps {
    /// Slots below this were opened at setup.
    base: Option<u32>,
    per_host: Vec<u32>,
    opens: Vec<RuntimeOpen>,
}

impl Simulation {
    /// Notes a QP opened while running into `slot` (origin order; rare: not on the packet path).
    #[cold]
    pub(in crate::sim) fn note_runtime_open(&mut self, slot: QpId, src: NodeId) {
        let shared = self.part.as_ref().map(|p| p.shared_qps);
        let names = &mut self.runtime_qps;
        names.base.get_or_insert(shared.unwrap_or(slot.0));
        if names.per_host.len() <= src.idx() {
            names.per_host.resize(src.idx() + 1, 0);
        }
        let nth = names.per_host[src.idx()];
        names.per_host[src.idx()] += 1;
        names.opens.push(RuntimeOpen { at: self.now, src, nth, slot });
    }

    /// True if a QP opened into `slot` now is named apart from its slot.
    #[inline]
    pub(in crate::sim) fn opens_while_running(&self, given_slot: bool) -> bool {
        self.origin_order && !given_slot && self.counters.events > 0
    }
}

/// Renames, in each simulation's rate rows, the QPs it opened while running (`parts[i]`
/// with `rows[i]`), by their rank over every simulation of the run.
pub(crate) fn rename_runtime_qps(parts: &[&RuntimeQps], rows: &mut [&mut Vec<RateSample>]) {
    let Some(base) = parts.iter().filter_map(|p| p.base).min() else { return };
    let mut all: Vec<(RuntimeOpen, usize)> =
        parts.iter().enumerate().flat_map(|(i, p)| p.opens.iter().map(move |&o| (o, i))).collect();
    all.sort_unstable();
    let mut name: Vec<HashMap<QpId, u32>> = vec![HashMap::new(); parts.len()];
    for (rank, (open, part)) in all.iter().enumerate() {
        name[*part].insert(open.slot, base + rank as u32);
    }
    for (rows, names) in rows.iter_mut().zip(&name) {
        for r in rows.iter_mut() {
            if let Some(&new) = names.get(&r.qp) {
                // A QP without a message yet is labelled by its slot in the flow column.
                if r.flow == r.qp.0 {
                    r.flow = new;
                }
                r.qp = QpId(new);
            }
        }
    }
}
