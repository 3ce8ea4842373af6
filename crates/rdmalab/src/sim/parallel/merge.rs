//! The parallel run's results: every partition's snapshot merged into one run's, as one
//! simulation would have reported it (each partition counts only its own nodes).

use super::{apps, observe, ParallelRun};
use crate::error::{Error, Result};
use crate::sim::observe::first_loss::lossless_drop_error;
use crate::sim::Results;

impl ParallelRun {
    /// The merged results, and the multipath chunks placed beyond their message (0 in a
    /// correct run).
    pub(super) fn merged(&mut self) -> (Results, u64) {
        let end_time = self.end_time();
        let mut snaps: Vec<Results> = self.parts.iter_mut().map(|p| p.snapshot()).collect();
        let names: Vec<_> = self.parts.iter().map(|p| &p.runtime_qps).collect();
        let mut rows: Vec<_> = snaps.iter_mut().map(|r| &mut r.rate_samples).collect();
        crate::sim::qp_names::rename_runtime_qps(&names, &mut rows);
        let (first, others) = snaps.split_first_mut().expect("at least one partition");
        observe::merge_samples(first, others);
        let anomalies = apps::merge_app_tables(&mut self.parts, &self.part_of, &mut snaps);
        let widest_bin = snaps.iter().map(|s| s.tenant_bin).max().unwrap_or(crate::tenancy::METER_BIN);
        // A peak over nodes is its partitions' largest (each node is one partition's).
        let peaks: Vec<(&str, u64)> = crate::sim::mech::Mechanisms::PEAK_COUNTERS
            .iter()
            .map(|&n| (n, snaps.iter().map(|s| s.mechanism_counters.get(n)).max().unwrap_or(0)))
            .collect();
        let mut it = snaps.into_iter();
        let mut r = it.next().expect("at least one partition");
        let topo = &self.parts[0].topo;
        let owner = |port: usize| self.part_of[topo.ports[port].node.idx()] as usize;
        let mut ports = r.ports.clone();
        // Partitions may have coarsened their meters to different widths: re-bin all to the
        // widest.
        let tenant_bin = widest_bin;
        let mut tenant_bins = std::mem::take(&mut r.tenant_bins);
        crate::tenancy::meter::rebin(&mut tenant_bins, r.tenant_bin, tenant_bin);
        // Every partition runs the same link events and opens the same QPs at setup: count
        // them once.
        let (link_failures, reroutes) =
            (r.mechanism_counters.get("link_failures"), r.mechanism_counters.get("reroutes"));
        let setup_qps_again = self.setup_qps * (self.parts.len() as u64 - 1);
        for (i, other) in it.enumerate() {
            let me = i + 1;
            r.counters.add(&other.counters);
            r.mechanism_counters.add(&other.mechanism_counters);
            r.deliberate_drops += other.deliberate_drops;
            r.records.extend(other.records);
            r.spilled.parts.extend(other.spilled.parts); // each partition's runs, merged when read
            r.pfc_events.extend(other.pfc_events);
            r.unreachable.extend(other.unreachable);
            r.last_completion = r.last_completion.max(other.last_completion);
            if let Some(site) = other.first_loss {
                crate::sim::observe::first_loss::note(&mut r.first_loss, site);
            }
            r.payload_in_flight += other.payload_in_flight;
            merge_flow_rx(&mut r.flow_rx, &other.flow_rx);
            let mut bins = other.tenant_bins;
            crate::tenancy::meter::rebin(&mut bins, other.tenant_bin, tenant_bin);
            tenant_bins.extend(bins);
            add_class_counters(&mut r.classes, &other.classes);
            for (p, c) in ports.iter_mut().enumerate() {
                if owner(p) == me {
                    *c = other.ports[p];
                }
            }
        }
        r.ports = ports;
        r.mechanism_counters.set("link_failures", link_failures);
        r.mechanism_counters.set("reroutes", reroutes);
        for (name, peak) in peaks {
            r.mechanism_counters.set(name, peak);
        }
        r.counters.qps_opened -= setup_qps_again;
        r.counters.qps_peak = self.live_qps.peak; // the partitions' changes in the run's order
        r.tenant_bins = crate::tenancy::meter::merge(tenant_bins);
        r.tenant_bin = tenant_bin;
        r.records.sort_by_key(|x| (x.start + x.fct, x.flow));
        crate::stats::attach_rx_counts(&mut r.records, &r.flow_rx); // receivers in any partition
        r.pfc_events.sort_by_key(|e| (e.time, e.node, e.ifindex, e.pause));
        r.unreachable.sort_by_key(|u| u.flow);
        r.stall_cause = self.stall_cause.clone();
        // A run stopped for a deadlock or a stall ends when it was found, one whose work is done
        // with connections left open at its last completion, as one simulation does.
        let idle_apps_end = self.state.idle_apps_at.map(|_| r.last_completion);
        r.end_time = self.state.deadlock_at.or(self.state.stall_at).or(idle_apps_end).unwrap_or(end_time);
        // A port still paused counts its pause up to the run's end, as one simulation's does
        // (its partition closed the interval at its own last event, `PortState::finish`).
        for (p, c) in r.ports.iter_mut().enumerate() {
            if let Some(t) = self.parts[owner(p)].ports[p].paused_since {
                c.paused_ps += r.end_time.saturating_sub(t).0;
            }
        }
        r.deadlock = self.watch.found.first.clone();
        r.deadlocks = self.watch.found.count;
        (r, anomalies)
    }

    /// The conservation check over the whole fabric, on the merged results (`anomalies`:
    /// multipath chunks placed beyond their message), as one simulation checks its own.
    pub(super) fn check(&self, r: &Results, anomalies: u64) -> Result<()> {
        if anomalies > 0 {
            let n = anomalies;
            return Err(Error::Invariant(format!("{n} multipath chunk(s) placed beyond their message")));
        }
        let c = &r.counters;
        let accounted = c.payload_bytes_delivered + c.payload_bytes_dropped + c.payload_bytes_discarded;
        if c.payload_bytes_sent != accounted + r.payload_in_flight {
            return Err(Error::Invariant(format!(
                "byte conservation (parallel run): sent {} != delivered {} + dropped {} + discarded {} + in flight {}",
                c.payload_bytes_sent,
                c.payload_bytes_delivered,
                c.payload_bytes_dropped,
                c.payload_bytes_discarded,
                r.payload_in_flight
            )));
        }
        let buffer_drops = c.drops - c.link_error_losses - c.link_down_losses - c.no_route_drops - r.deliberate_drops;
        let lossless = self.parts[0].cfg.lossless && self.parts[0].mech.keeps_lossless() && c.pause_frames_lost == 0;
        if lossless && self.parts[0].cfg.classes.is_none() && buffer_drops > 0 {
            return Err(lossless_drop_error(buffer_drops, "lossless mode", r.first_loss.as_ref()));
        }
        // Classes with PFC off may drop at admission; nothing else may (as in one simulation).
        let lossy: u64 = r.classes.iter().filter(|c| !c.config.pfc).map(|c| c.counters.drops).sum();
        if self.parts[0].cfg.classes.is_some() && buffer_drops > lossy && c.pause_frames_lost == 0 {
            let n = buffer_drops - lossy;
            return Err(lossless_drop_error(n, "lossless classes", r.first_loss.as_ref()));
        }
        Ok(())
    }
}

/// Adds a partition's class counters to the run's: each counts only its own switches' ports.
fn add_class_counters(run: &mut [crate::sim::ClassRecord], part: &[crate::sim::ClassRecord]) {
    for (c, p) in run.iter_mut().zip(part).map(|(a, b)| (&mut a.counters, b.counters)) {
        c.tx_bytes += p.tx_bytes;
        c.tx_packets += p.tx_packets;
        c.drops += p.drops;
        c.pauses += p.pauses;
        c.ecn_marks += p.ecn_marks;
    }
}

/// Adds a partition's per-flow receiver counts to the merged ones (a flow's receiver lives
/// in one partition; the others hold zeros for it or nothing).
fn merge_flow_rx(into: &mut Vec<crate::stats::RxFlowCounts>, other: &[crate::stats::RxFlowCounts]) {
    if into.len() < other.len() {
        into.resize(other.len(), Default::default());
    }
    for (a, b) in into.iter_mut().zip(other) {
        a.add(b);
    }
}
