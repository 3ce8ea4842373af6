//! Host applications under the parallel engine: multipath and Virtuoso connections, the
//! DRUM paper's closed-loop applications and DRUM's per-host schedulers.
//!
//! Every partition builds the same applications at setup, so an application id, a
//! connection and its QP slots name the same thing in each. Each application half lives
//! on one host and runs only in that host's partition:
//!
//! - the events setup scheduled for another partition's hosts (a message's first post, a
//!   closed loop's first batch, a scheduler's first control period) are dropped once, right
//!   after the cut (`drop_foreign_setup_events`); whatever a half schedules later comes
//!   from its own handlers;
//! - what a half tells the other host travels in packets: the application header of a WR
//!   crosses the cut with its packet (`exchange::Crossing`), and the one message a host's
//!   application sends to another outside the data (a Virtuoso connection's close, which
//!   closes the receiver's READ QPs) is an event pushed to that host a path's propagation
//!   delay later (`push_to_node`, at least the lookahead whenever it crosses a cut);
//! - the results take each application's row of the table from its host's partition
//!   (`merge_app_tables`).

use std::mem::swap;

use super::super::{Event, Results, Simulation};
use crate::app::{AppId, AppKind};
use crate::config::Scenario;
use crate::ids::NodeId;
use crate::units::Time;

impl Simulation {
    /// The host whose state `ev` acts on, for the events that belong to one host and are
    /// not tied to a port, NIC or QP otherwise; `None`: every partition handles it (or
    /// decides for itself whether it owns it, as the flow list does).
    fn home(&self, ev: Event) -> Option<NodeId> {
        match ev {
            Event::App(app, _) => self.app_host(app),
            Event::CloseQp(q) => Some(self.qps[q.idx()].src),
            Event::WqeDone(nic) => Some(self.nics[nic.idx()].node),
            _ => None,
        }
    }

    /// The host application `app` runs on (`None`: DRUM's network-wide control loop and its
    /// in-band ends, which the parallel engine refuses).
    fn app_host(&self, app: AppId) -> Option<NodeId> {
        let conn = |c: u32| &self.apps.conns[c as usize];
        match self.apps.rows.get(app.idx())?.kind {
            AppKind::Attack(i) => Some(self.attack_host(i)),
            AppKind::MpSender(c) | AppKind::VSender(c) => Some(conn(c).src),
            AppKind::MpReceiver(c) | AppKind::VReceiver(c) => Some(conn(c).dst),
            AppKind::Closed(_) => Some(self.apps.state(app).closed().spec.host),
            AppKind::DrumAgent(_) => {
                let first = *self.apps.state(app).drum_agent().apps.first()?;
                let closed = self.hostm.as_ref()?.ids[first as usize];
                Some(self.apps.state(closed).closed().spec.host)
            }
            AppKind::Rank(_) => Some(self.rank_host(app)),
            AppKind::DrumNet | AppKind::DrumCtl(_) => None,
        }
    }

    /// After the cut: drops the pending events that belong to hosts of other partitions
    /// (every partition ran the same setup), keeping the others' times and keys.
    pub(super) fn drop_foreign_setup_events(&mut self) {
        let mut queue = std::mem::take(&mut self.queue);
        queue.retain(|&ev| self.home(ev).is_none_or(|node| self.owns(node)));
        self.queue = queue;
    }

    /// Schedules `ev`, which acts on `node`'s state, at `at`, with the tie key of the
    /// current origin: here if this simulation owns `node`, else through the next barrier
    /// to the partition that does, which must not have passed `at` yet (so `at` is at least
    /// a lookahead away whenever `node` is in another partition).
    pub(in crate::sim) fn push_to_node(&mut self, node: NodeId, at: Time, ev: Event) {
        let key = self.queue.reserve_seq();
        match self.part.as_deref_mut() {
            Some(p) if !p.owns(node) => {
                let to = p.part_of[node.idx()];
                p.outbox.push((to, at, key, ev));
            }
            _ => self.queue.push_reserved(at, key, ev),
        }
    }
}

/// What a mechanism the parallel engine cannot split yet is called in its refusal (all of
/// them host applications now).
pub(super) fn unsupported(s: &Scenario) -> Option<&'static str> {
    use crate::app::host_model::{Control, Mechanism};
    // Samples, the trace and the queue monitor are split (`observe`), host applications
    // and multipath connections too (`apps`).
    let drum_network =
        s.host_model.as_ref().is_some_and(|h| h.host.mechanism == Mechanism::Drum && h.drum.control != Control::Local);
    let virtuoso = s.multipath.iter().any(|m| matches!(m.config.split, crate::multipath::Split::Virtuoso(_)));
    // A paced incast opens its QPs as it runs: the receiver's partition mirrors them from
    // their packets, which do not say whether they are SENDs.
    let paced_sends = s.config.rnr.is_some()
        && s.flows.iter().any(|f| {
            f.verb == crate::workload::Verb::Send
                && matches!(s.apps.get(f.app.idx()), Some(crate::workload::attacks::HostApp::Staggered(_)))
        });
    let checks: [(bool, &'static str); 3] = [
        // One event serves every scheduler and the coordinator reads every host's report.
        (drum_network, "DRUM's network-wide control (drum.control = \"out_of_band\" or \"in_band\")"),
        // Reconnecting a QP after a failed WR resets both of its ends at once.
        (virtuoso && s.config.retry_limit.is_some(), "Virtuoso connections with fabric.retry_limit"),
        (paced_sends, "SENDs of a paced incast (stagger = \"paced\", verb = \"send\") on receive queues"),
    ];
    checks.into_iter().find(|(on, _)| *on).map(|(_, name)| name)
}

/// Swaps the state of every application row held by a partition other than 0 (the one
/// that owns the application's host) with partition 0's copy of it; a second call swaps
/// them back. Rows of no one host (DRUM's network-wide control) stay.
fn swap_rows(parts: &mut [Simulation], part_of: &[u16]) {
    let (first, rest) = parts.split_first_mut().expect("at least one partition");
    let owners: Vec<(usize, usize)> = (0..first.apps.len())
        .filter_map(|i| Some((i, part_of[first.app_host(AppId::new(i))?.idx()] as usize)))
        .filter(|&(_, owner)| owner != 0)
        .collect();
    for (i, owner) in owners {
        swap(&mut first.apps.rows[i].state, &mut rest[owner - 1].apps.rows[i].state);
    }
}

/// Fills the application tables of `snaps[0]` (the merged results) from every partition:
/// each connection's records from its two halves, each closed-loop application's row from
/// its host's partition, the batches and DRUM rows of all in an order that does not depend
/// on the cut. Returns the multipath anomalies (chunks placed beyond their message).
pub(super) fn merge_app_tables(parts: &mut [Simulation], part_of: &[u16], snaps: &mut [Results]) -> u64 {
    let mut anomalies = 0;
    if !parts[0].apps.conns.is_empty() {
        swap_rows(parts, part_of);
        let first = &parts[0];
        let r = &mut snaps[0];
        r.mp_messages = first.mp_message_records();
        r.mp_chunks = first.mp_chunk_records();
        r.mp_paths = first.mp_path_records();
        r.mp_wrs = first.mp_wr_records();
        anomalies = first.mp_anomalies();
        swap_rows(parts, part_of);
    }
    if !parts[0].apps.jobs.is_empty() {
        // Each rank's times are in its host's partition.
        swap_rows(parts, part_of);
        snaps[0].collectives = parts[0].collective_records();
        // So are a trace's nodes' (each partition's own table lacks the others' times).
        snaps[0].tables.retain(|t| t.name != "chakra");
        snaps[0].tables.extend(parts[0].trace_tables());
        swap_rows(parts, part_of);
    }
    let (first, others) = snaps.split_first_mut().expect("at least one partition");
    if let Some(m) = parts[0].hostm.as_ref() {
        for (i, &id) in m.ids.iter().enumerate() {
            let owner = part_of[parts[0].apps.state(id).closed().spec.host.idx()] as usize;
            if owner != 0 {
                first.host_apps[i] = others[owner - 1].host_apps[i].clone();
            }
        }
    }
    for o in others {
        first.host_batches.append(&mut o.host_batches);
        first.drum_rows.append(&mut o.drum_rows);
        first.wqes_processed += o.wqes_processed;
    }
    sort_app_tables(first);
    anomalies
}

/// The origin order's order of the tables several hosts append to (`Simulation::snapshot`
/// and the merge): by time, then application.
pub(in crate::sim) fn sort_app_tables(r: &mut Results) {
    r.host_batches.sort_by_key(|b| (b.posted, b.app, b.batch));
    r.drum_rows.sort_by_key(|d| (d.t, d.app));
}

#[cfg(test)]
mod tests {
    use super::super::ParallelRun;
    use crate::config::Scenario;
    use crate::sim::StopReason;

    /// A Virtuoso connection's close reaches the READ QPs its receiver sends on, in the
    /// receiver's partition: at the end every application QP is closed where it is owned
    /// (no table shows it: `tests/parallel.rs` cannot catch a close that goes astray).
    #[test]
    fn a_virtuoso_close_closes_the_receivers_qps_in_its_partition() {
        let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n\
                    [[traffic]]\nkind = \"multipath\"\nsplit = \"virtuoso\"\npath_by = \"sport\"\nqps = 2\n\
                    messages = [{ src = 1, dst = 10, size = 300000, verb = \"read\" }]\n[fabric]\ncc = \"dcqcn\"\n";
        let s = Scenario::from_toml(toml, std::path::Path::new("v.toml")).unwrap();
        let mut run = ParallelRun::new(s, 2).unwrap();
        assert_eq!(run.partitions(), 2);
        assert_eq!(run.run_to_end(), StopReason::Finished);
        let mut checked = 0;
        for sim in &run.parts {
            for c in &sim.apps.conns {
                assert_ne!(sim.owns(c.src), sim.owns(c.dst), "the connection crosses the cut");
                for q in c.qps.iter().chain(&c.reverse).map(|q| &sim.qps[q.idx()]) {
                    if sim.owns(q.src) {
                        assert!(q.close_when_idle && q.finished, "QP from {} to {} left open", q.src, q.dst);
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 4, "two paths, a QP each way");
    }
}
