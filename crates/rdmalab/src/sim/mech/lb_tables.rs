//! The switch-side balancers' and IOFD's counts and tables (`fabric::lb`,
//! `fabric::deflection`): the counters every run reports (zeros when off), ConWeave's causes
//! of out-of-order arrivals, and the `balance` and `reorder` tables. `Mechanisms::counters`
//! and `Mechanisms::tables` (`mod.rs`) call these in their fixed order.

use crate::fabric::deflection::Iofd;
use crate::fabric::lb::conweave::{ReorderRow, TableKind};
use crate::fabric::lb::{BalanceRow, LoadBalancer};
use crate::stats::table::{ColumnKind, Table, TableSchema};
use crate::stats::NamedCounts;

/// `balance`: per ToR and `fabric.lb.lb_window`, its uplinks' data bytes and (max - min) /
/// mean (docs/load-balancing.md); a switch-side balancer or `[fabric.lb]`.
pub(crate) const BALANCE: TableSchema = TableSchema {
    name: "balance",
    columns: &[
        ("switch", ColumnKind::U32),
        ("window_start_ps", ColumnKind::Ps),
        ("uplinks", ColumnKind::U16),
        ("min_bytes", ColumnKind::U64),
        ("max_bytes", ColumnKind::U64),
        ("mean_bytes", ColumnKind::F64),
        ("imbalance", ColumnKind::F64),
    ],
};

/// `reorder`: ConWeave, per destination ToR and `lb_window`, the most reorder queues in use
/// and the packets and bytes held at once.
pub(crate) const REORDER: TableSchema = TableSchema {
    name: "reorder",
    columns: &[
        ("switch", ColumnKind::U32),
        ("window_start_ps", ColumnKind::Ps),
        ("queues", ColumnKind::U32),
        ("packets", ColumnKind::U64),
        ("bytes", ColumnKind::U64),
    ],
};

/// IOFD's counts (zeros when off).
pub(super) fn iofd_counters(iofd: Option<&Iofd>, c: &mut NamedCounts) {
    let t = iofd.map(|i| i.tally).unwrap_or_default();
    c.push("deflections", t.deflections);
    c.push("resequenced", t.resequenced);
    c.push("reseq_escapes", t.reseq_escapes);
}

/// The balancer's counts (zeros when off).
pub(super) fn balancer_counters(lb: Option<&LoadBalancer>, c: &mut NamedCounts) {
    let t = lb.map(|l| l.tally).unwrap_or_default();
    c.push("lb_reroutes", t.reroutes);
    c.push("reorder_held", t.held);
    c.push("reorder_timeouts", t.timeouts);
    c.push("reorder_unheld", t.unheld);
    c.push("lb_control_packets", t.control);
    c.push("lb_untracked", t.untracked);
    // Only where ConWeave keeps exact tables: every other run's counters (the direct table's
    // included) stay as they were before the count existed.
    if lb.is_some_and(|l| l.conweave_table_kind() == Some(TableKind::Exact)) {
        c.push_conditional("lb_table_full", t.table_full);
    }
    if lb.is_some_and(|l| l.conweave_admits_on_release()) {
        c.push_conditional("reorder_release_drops", t.release_drops);
    }
}

/// ConWeave's out-of-order arrivals and gaps by cause, only where it sent control packets
/// (so listed after every count all runs report).
pub(super) fn conweave_causes(lb: Option<&LoadBalancer>, c: &mut NamedCounts) {
    let Some(lb) = lb.filter(|l| l.tally.control > 0) else { return };
    let causes = lb.reorder_causes();
    for (k, name) in crate::fabric::lb::conweave::CAUSE_NAMES.iter().enumerate() {
        c.push_conditional(format!("reorder_ooo_{name}"), causes.ooo[k]);
        c.push_conditional(format!("reorder_gaps_{name}"), causes.gaps[k]);
    }
}

/// `balance` with a balancer, and `reorder` under ConWeave.
pub(super) fn balancer_tables(lb: Option<&LoadBalancer>, out: &mut Vec<Table>) {
    if let Some(lb) = lb {
        out.push(balance(&lb.balance_rows()));
        if lb.runs_conweave() {
            out.push(reorder(&lb.reorder_rows()));
        }
    }
}

/// A u64 column of `rows`.
fn col<T>(rows: &[T], f: impl Fn(&T) -> u64) -> Vec<u64> {
    rows.iter().map(f).collect()
}

/// Per ToR and `lb_window`, its uplinks' data bytes and imbalance (docs/load-balancing.md).
fn balance(rows: &[BalanceRow]) -> Table {
    Table::new(BALANCE.name, &["window_start_ps", "switch"])
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
    Table::new(REORDER.name, &["window_start_ps", "switch"])
        .u64("window_start_ps", col(rows, |b| b.window_start.0))
        .u64("switch", col(rows, |b| b.switch.0 as u64))
        .u64("queues", col(rows, |b| b.queues as u64))
        .u64("packets", col(rows, |b| b.packets))
        .u64("bytes", col(rows, |b| b.bytes))
}
