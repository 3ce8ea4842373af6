//! The mechanisms' own result tables (`Mechanisms::tables`), each a `stats::table::Table`
//! that reaches Python as `res.<name>` and a store as `<name>.parquet` without a field of its
//! own anywhere on the way. To add one: build it here from the mechanism's state, name its
//! key columns, and give Python its empty frame (`python/rdmalab/results.py`,
//! `MECHANISM_TABLES`) for runs without the mechanism.

use super::Mechanisms;
use crate::fabric::lb::conweave::ReorderRow;
use crate::fabric::lb::BalanceRow;
use crate::stats::table::Table;
use crate::stats::NamedCounts;

impl Mechanisms {
    /// Every mechanism's counters by name, in a fixed order: IOFD's and the switch-side
    /// balancer's always (zeros when off, so every run reports the same names), ConWeave's
    /// out-of-order causes only where ConWeave sent control packets (listed last).
    pub(crate) fn counters(&self) -> NamedCounts {
        let mut c = NamedCounts::default();
        let iofd = self.iofd.as_deref().map(|i| i.tally).unwrap_or_default();
        c.push("deflections", iofd.deflections);
        c.push("resequenced", iofd.resequenced);
        c.push("reseq_escapes", iofd.reseq_escapes);
        let t = self.lb.as_deref().map(|l| l.tally).unwrap_or_default();
        c.push("lb_reroutes", t.reroutes);
        c.push("reorder_held", t.held);
        c.push("reorder_timeouts", t.timeouts);
        c.push("reorder_unheld", t.unheld);
        c.push("lb_control_packets", t.control);
        c.push("lb_untracked", t.untracked);
        let rnr = self.rnr.as_deref();
        c.push("rnr_naks", rnr.map_or(0, |r| r.naks));
        c.push("rnr_retry_exceeded", rnr.map_or(0, |r| r.retry_exceeded));
        if let Some(lb) = self.lb.as_deref().filter(|_| t.control > 0) {
            let causes = lb.reorder_causes();
            for (k, name) in crate::fabric::lb::conweave::CAUSE_NAMES.iter().enumerate() {
                c.push_conditional(format!("reorder_ooo_{name}"), causes.ooo[k]);
                c.push_conditional(format!("reorder_gaps_{name}"), causes.gaps[k]);
            }
        }
        c
    }

    /// Every table the run's mechanisms keep, in a fixed order: `balance` with a switch-side
    /// balancer (or `[fabric.lb]`), `reorder` under ConWeave, `rnr` with receive queues.
    pub(crate) fn tables(&self) -> Vec<Table> {
        let mut out = Vec::new();
        if let Some(lb) = self.lb.as_deref() {
            out.push(balance(&lb.balance_rows()));
            if lb.runs_conweave() {
                out.push(reorder(&lb.reorder_rows()));
            }
        }
        if let Some(r) = self.rnr.as_deref() {
            out.push(rnr_flows(r));
        }
        out
    }
}

/// RNR NAKs per plain flow (those that met at least one; `[rnic] recv_queue_depth`).
fn rnr_flows(r: &super::rnr::Rnr) -> Table {
    let (flows, naks): (Vec<u64>, Vec<u64>) = r.flow_rows().unzip();
    Table::new("rnr", &["flow"]).u64("flow", flows).u64("rnr_naks", naks)
}

/// A u64 column of `rows`.
fn col<T>(rows: &[T], f: impl Fn(&T) -> u64) -> Vec<u64> {
    rows.iter().map(f).collect()
}

/// Per ToR and `lb_window`, its uplinks' data bytes and imbalance (docs/load-balancing.md).
fn balance(rows: &[BalanceRow]) -> Table {
    Table::new("balance", &["window_start_ps", "switch"])
        .u64("window_start_ps", col(rows, |b| b.window_start.0))
        .u64("switch", col(rows, |b| b.switch.0 as u64))
        .u64("uplinks", col(rows, |b| b.uplinks as u64))
        .u64("min_bytes", col(rows, |b| b.min_bytes))
        .u64("max_bytes", col(rows, |b| b.max_bytes))
        .f64("mean_bytes", rows.iter().map(|b| b.mean_bytes).collect())
        .f64("imbalance", rows.iter().map(|b| b.imbalance).collect())
}

/// ConWeave: per destination ToR and `lb_window`, the most reorder queues in use and packets
/// and bytes held.
fn reorder(rows: &[ReorderRow]) -> Table {
    Table::new("reorder", &["window_start_ps", "switch"])
        .u64("window_start_ps", col(rows, |b| b.window_start.0))
        .u64("switch", col(rows, |b| b.switch.0 as u64))
        .u64("queues", col(rows, |b| b.queues as u64))
        .u64("packets", col(rows, |b| b.packets))
        .u64("bytes", col(rows, |b| b.bytes))
}
