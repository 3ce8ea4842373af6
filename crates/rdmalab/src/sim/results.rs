//! What a run hands back, and the end-of-run conservation check.

use super::observe::first_loss::lossless_drop_error;
use super::Simulation;
use crate::error::{Error, Result};
use crate::fabric::classes::ClassCounters;
use crate::fabric::PortCounters;
use crate::fabric::{PacketKind, NUM_PRIOS};
use crate::ids::PortId;
use crate::stats::PfcEvent;
use crate::stats::{Counters, FlowRecord, RateSample};
use crate::units::Time;

/// Why `run` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every flow completed and nothing is left to do.
    Finished,
    /// The scenario's stop time was reached.
    StopTime,
    /// The caller's limit (time or event budget) was reached; `run` may be called again.
    Paused,
    /// Nothing is scheduled but flows are unfinished: a deadlock (e.g. PFC) or a loss
    /// that nothing will repair.
    Stalled,
    /// A cycle of switch ports paused past `SimConfig::deadlock_timeout` (with
    /// `OnDeadlock::Stop`): `Results::deadlock` names it.
    PfcDeadlock,
}

impl StopReason {
    /// The reason's name in summaries, the store and the bindings.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::StopTime => "stop_time",
            StopReason::Paused => "paused",
            StopReason::Stalled => "stalled",
            StopReason::PfcDeadlock => "pfc_deadlock",
        }
    }
}

/// Everything measured in a run.
#[derive(Clone, Debug)]
pub struct Results {
    /// Completed flows in completion order: all of them, or those still held in memory when
    /// more completed than `SimConfig::records_in_memory` and the rest are in `spilled`.
    /// Read every one with `Results::each_record` (or count them with `flows_completed`).
    pub records: Vec<FlowRecord>,
    /// Completed flows' records written out during the run (`stats::spill`).
    pub spilled: crate::stats::spill::SpilledRecords,
    /// Run counters (the core's).
    pub counters: Counters,
    /// The mechanisms' counters by name (`Mechanisms::counters`), reported beside them.
    pub mechanism_counters: crate::stats::NamedCounts,
    /// Packets the mechanisms dropped on purpose (`Mechanisms::deliberate_drops`, among
    /// `counters.drops`): the lossless check exempts them.
    pub deliberate_drops: u64,
    /// Per-port counters, indexed by port id.
    pub ports: Vec<PortCounters>,
    /// PFC frames received, in time order.
    pub pfc_events: Vec<PfcEvent>,
    /// Queue-length samples (time, switch port, bytes), when asked for.
    pub queue_samples: Vec<(Time, PortId, u64)>,
    /// Per-QP rate and throughput samples in time order (QP id order within a time), when
    /// `SimConfig::rate_sample_interval` asks for them.
    pub rate_samples: Vec<RateSample>,
    /// Bytes each port sent per `SimConfig::link_sample_interval`: (end of the interval,
    /// port, bytes), in time order, port order within a time.
    pub link_samples: Vec<(Time, PortId, u64)>,
    /// Flows given up because their destination became unreachable, in the order given up.
    pub unreachable: Vec<crate::sim::UnreachableFlow>,
    /// When the last flow completed or was given up (zero if none did): the run's
    /// makespan, what the summary calls simulated time.
    pub last_completion: Time,
    /// Simulated time when the run stopped: the last event executed (a leftover timer may
    /// fire after the last completion) or the stop time.
    pub end_time: Time,
    /// Flows in the scenario.
    pub flows_total: usize,
    /// Payload bytes still inside the network when the run ended.
    pub payload_in_flight: u64,
    /// In-order payload delivered per tenant per bin of `tenant_bin`, merged over
    /// receivers (empty when `SimConfig::tenant_meter` is off).
    pub tenant_bins: Vec<crate::tenancy::TenantBin>,
    /// Width of `tenant_bins`' bins: 1 µs, doubled as often as the busiest receiver had to
    /// (`tenancy::meter`).
    pub tenant_bin: Time,
    /// Tenant names by index.
    pub tenant_names: Vec<String>,
    /// Chunks posted by host applications (with `SimConfig::trace_apps`).
    pub app_posts: Vec<super::AppPost>,
    /// The first PFC deadlock found, if any.
    pub deadlock: Option<super::Deadlock>,
    /// PFC deadlocks found (more than one only with `OnDeadlock::Continue`).
    pub deadlocks: u64,
    /// Why the run stalled, in one line, when it did.
    pub stall_cause: Option<String>,
    /// The first packet a lossless class lost at a switch's admission, if any.
    pub first_loss: Option<super::observe::first_loss::LossSite>,
    /// Every message posted on a multipath connection, in id order.
    pub mp_messages: Vec<crate::multipath::MpMessageRecord>,
    /// Every chunk of those messages, by message then chunk number.
    pub mp_chunks: Vec<crate::multipath::MpChunkRecord>,
    /// Every path of every Virtuoso connection.
    pub mp_paths: Vec<crate::multipath::MpPathRecord>,
    /// Every WR the Virtuoso senders posted, by connection then post order.
    pub mp_wrs: Vec<crate::multipath::MpWrRecord>,
    /// Packets still held by IOFD re-sequencers when the run ended (0 without IOFD).
    pub reseq_held: usize,
    /// The receivers' per-flow counts, by flow (empty when nothing was counted); already
    /// joined into `records`, kept for merging a parallel run's partitions.
    pub flow_rx: Vec<crate::stats::RxFlowCounts>,
    /// Closed-loop applications (the DRUM paper): (name, host, dst, finished), by application index.
    pub host_apps: Vec<(String, crate::ids::NodeId, crate::ids::NodeId, bool)>,
    /// Every batch they posted, in post order (`seen` = `Time::MAX` while unfinished).
    pub host_batches: Vec<crate::app::closed_loop::BatchRecord>,
    /// The host model's settings (`[host]`, `[drum]`), when it runs.
    pub host_cfg: Option<(crate::app::host_model::HostConfig, crate::app::host_model::DrumConfig)>,
    /// DRUM's allocations: one row per control period and application.
    pub drum_rows: Vec<crate::app::drum_agent::DrumRow>,
    /// WQEs processed by the NICs' WQE engines.
    pub wqes_processed: u64,
    /// One row per class 0..8 with `[[fabric.classes]]` (empty without).
    pub classes: Vec<ClassRecord>,
    /// Every collective's iterations, in scenario order (empty without `[[collective]]`).
    pub collectives: Vec<crate::app::collective::CollectiveRecord>,
    /// The mechanisms' own tables (`stats::table`), by name: `balance` with a switch-side
    /// balancer or `[fabric.lb]`, `reorder` under ConWeave (`sim/mech/tables.rs`).
    pub tables: Vec<crate::stats::table::Table>,
}

impl Results {
    /// The mechanism table named `name` (`None` when no mechanism of the run keeps it).
    pub fn table(&self, name: &str) -> Option<&crate::stats::table::Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// A traffic class's settings and what every switch port counted for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassRecord {
    /// The class (priority group).
    pub pg: u8,
    /// Its settings.
    pub config: crate::fabric::classes::ClassConfig,
    /// Counters summed over switch ports.
    pub counters: ClassCounters,
}

impl Results {
    /// A mechanism's counter by name (0 when no mechanism of the run reports it).
    pub fn mechanism_count(&self, name: &str) -> u64 {
        self.mechanism_counters.get(name)
    }
}

impl Simulation {
    /// Payload bytes of data packets currently in queues or on wires.
    fn payload_in_network(&self) -> u64 {
        let data = |p: &crate::fabric::Packet| {
            if p.kind == PacketKind::Data {
                p.payload as u64
            } else {
                0
            }
        };
        // Held, not yet delivered: at IOFD's re-sequencers and at IRN's receivers.
        let held = self.mech.iofd.as_ref().map_or(0, |i| i.held_payload())
            + self.mech.irn.as_ref().map_or(0, |i| i.held_bytes)
            + self.mech.lb.as_ref().map_or(0, |l| l.held_payload(&self.packets));
        // A port with nothing on its wire, nothing queued and no arbiter holds nothing: the
        // common case at the end of a run, tested first (at a million hosts, six million
        // ports). The ports are scanned once for their queues and once for the rest, rather
        // than listed: a cut run of that size can leave most of them busy.
        let busy = || {
            let holds = |st: &&crate::fabric::PortState| {
                !st.in_flight.is_empty() || st.arbiter.is_some() || st.queues.iter().any(|q| !q.is_empty())
            };
            self.ports.iter().filter(holds)
        };
        let queues = busy().flat_map(|st| st.queues.iter().copied());
        let loose = busy().flat_map(|st| {
            let arbiter = st.arbiter.as_deref().into_iter();
            let held = arbiter.flat_map(|a| (0..NUM_PRIOS).flat_map(move |q| a.held(q)));
            st.in_flight.iter().map(|&(_, r, _)| r).chain(held)
        });
        held + self.packets.sum_parked(queues, loose, data)
    }

    /// Checks byte conservation: every payload byte a host sent was delivered in order,
    /// dropped by the fabric, discarded by a receiver (out of order, duplicate), or is still
    /// in the network or held by a receiver; and
    /// nothing was dropped in lossless mode unless links lose packets by configuration.
    pub fn check_conservation(&self) -> Result<()> {
        let c = &self.counters;
        let in_net = self.payload_in_network();
        let accounted = c.payload_bytes_delivered + c.payload_bytes_dropped + c.payload_bytes_discarded + in_net;
        if c.payload_bytes_sent != accounted {
            return Err(Error::Invariant(format!(
                "byte conservation: sent {} != delivered {} + dropped {} + discarded {} + in flight {}",
                c.payload_bytes_sent,
                c.payload_bytes_delivered,
                c.payload_bytes_dropped,
                c.payload_bytes_discarded,
                in_net
            )));
        }
        if let Some(n) = self.mech.ib.as_deref().map(|ib| ib.overruns()).filter(|&n| n > 0) {
            return Err(Error::Invariant(format!("{n} packets arrived at a full InfiniBand input buffer")));
        }
        let anomalies = self.mp_anomalies();
        if anomalies > 0 {
            return Err(Error::Invariant(format!("{anomalies} multipath chunk(s) placed beyond their message")));
        }
        // Links lose packets by configuration (error rate) or failure, a failure may leave
        // packets without a route, and a mechanism may drop on purpose; buffers must not drop,
        // unless a link lost a PAUSE (its sender's buffer then fills past the headroom, as a
        // real one does).
        let buffer_drops =
            c.drops - c.link_error_losses - c.link_down_losses - c.no_route_drops - self.mech.deliberate_drops;
        match &self.cfg.classes {
            None if self.cfg.lossless && self.mech.keeps_lossless() && c.pause_frames_lost == 0 && buffer_drops > 0 => {
                return Err(lossless_drop_error(buffer_drops, "lossless mode", self.watch.first_loss.as_ref()));
            }
            None => {}
            Some(t) => {
                // Classes with PFC off may drop at admission; nothing else may.
                let lossy: u64 =
                    (0..NUM_PRIOS).filter(|&q| !t.classes[q].pfc).map(|q| self.class_counters(q).drops).sum();
                if buffer_drops > lossy && c.pause_frames_lost == 0 {
                    let n = buffer_drops - lossy;
                    return Err(lossless_drop_error(n, "lossless classes", self.watch.first_loss.as_ref()));
                }
            }
        }
        Ok(())
    }

    /// Closes the counters and returns the results; fails loudly if bytes were not conserved.
    pub fn results(&mut self) -> Result<Results> {
        self.check_conservation()?;
        Ok(self.snapshot())
    }

    /// The results so far, without the conservation check (for interrupted runs).
    pub fn snapshot(&mut self) -> Results {
        let now = self.now;
        for p in &mut self.ports {
            p.finish(now);
        }
        let mut counters = self.counters;
        for cache in self.nics.iter().filter_map(|n| n.cache.as_ref()) {
            counters.qp_cache_hits += cache.hits;
            counters.qp_cache_misses += cache.misses;
        }
        let (mut records, mut pfc_events) = (self.records.clone(), self.pfc_events.clone());
        let (mut unreachable, mut rate_samples) = (self.unreachable.clone(), self.sampler.rates.clone());
        let (tenant_bins, tenant_bin) = crate::tenancy::meter::merge_meters(&self.mech.meters);
        if self.origin_order {
            // An order that does not depend on how the nodes were partitioned (`sim::parallel`).
            records.sort_by_key(|r| (r.start + r.fct, r.flow));
            pfc_events.sort_by_key(|e| (e.time, e.node, e.ifindex, e.pause));
            unreachable.sort_by_key(|u| u.flow);
            if self.part.is_none() {
                super::qp_names::rename_runtime_qps(&[&self.runtime_qps], &mut [&mut rate_samples]);
            }
            rate_samples.sort_by_key(|s| (s.time, s.qp));
        }
        let mut ports: Vec<_> = self.ports.iter().map(|p| p.port_counters()).collect();
        super::mech::ib::stall_counters(self.mech.ib.as_deref(), self.now, &mut ports);
        super::mech::trimming::port_counters(self.mech.trimming.as_deref(), &mut ports);
        let mut r = Results {
            records,
            spilled: self.spilled_records(),
            counters,
            mechanism_counters: self.mech.counters(),
            deliberate_drops: self.mech.deliberate_drops,
            ports,
            pfc_events,
            queue_samples: self.queue_samples.clone(),
            rate_samples,
            link_samples: self.sampler.links.clone(),
            unreachable,
            last_completion: self.last_completion,
            end_time: now,
            flows_total: self.work_total(),
            payload_in_flight: self.payload_in_network(),
            tenant_bins,
            tenant_bin,
            tenant_names: self.mech.tenant_names.clone(),
            app_posts: self.app_posts.clone(),
            deadlock: self.watch.found.first.clone(),
            deadlocks: self.watch.found.count,
            stall_cause: self.watch.stall_cause.clone(),
            first_loss: self.watch.first_loss,
            mp_messages: self.mp_message_records(),
            mp_chunks: self.mp_chunk_records(),
            mp_paths: self.mp_path_records(),
            mp_wrs: self.mp_wr_records(),
            reseq_held: self.mech.iofd.as_ref().map_or(0, |i| i.held_packets()),
            flow_rx: self.flow_rx.clone(),
            host_apps: self.host_app_table(),
            host_batches: self.host_batches(),
            host_cfg: self.hostm.as_ref().map(|m| (m.cfg, m.drum)),
            drum_rows: self.hostm.as_ref().map_or_else(Vec::new, |m| m.drum_rows.clone()),
            wqes_processed: self.nics.iter().filter_map(|n| n.engine.as_ref()).map(|e| e.processed).sum(),
            classes: self.class_records(),
            collectives: self.collective_records(),
            tables: self.mech.tables().into_iter().chain(self.trace_tables()).collect(),
        };
        if self.origin_order {
            super::parallel::sort_app_tables(&mut r); // tables several hosts append to
        }
        crate::stats::attach_rx_counts(&mut r.records, &r.flow_rx);
        r
    }

    /// Class `q`'s counters summed over the switch ports.
    fn class_counters(&self, q: usize) -> ClassCounters {
        self.ports.iter().filter_map(|p| p.classes.as_deref()).map(|c| c.stats[q]).fold(
            ClassCounters::default(),
            |a, b| ClassCounters {
                tx_bytes: a.tx_bytes + b.tx_bytes,
                tx_packets: a.tx_packets + b.tx_packets,
                drops: a.drops + b.drops,
                pauses: a.pauses + b.pauses,
                ecn_marks: a.ecn_marks + b.ecn_marks,
            },
        )
    }

    fn class_records(&self) -> Vec<ClassRecord> {
        let Some(t) = &self.cfg.classes else { return Vec::new() };
        // InfiniBand has no PFC (credits instead, `mech::ib`): a class's `pfc`, left at
        // `fabric.lossless` there, pauses nothing.
        let pfc = !self.cfg.infiniband();
        (0..NUM_PRIOS)
            .map(|q| {
                let mut config = t.classes[q];
                config.pfc &= pfc;
                ClassRecord { pg: q as u8, config, counters: self.class_counters(q) }
            })
            .collect()
    }

    /// The topology being simulated.
    pub fn topology(&self) -> &crate::topology::Topology {
        &self.topo
    }
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::ids::NodeId;
    use crate::sim::{SimConfig, Simulation, StopReason};
    use crate::topology::builders;
    use crate::units::{Rate, Time};
    use crate::workload::FlowSpec;

    /// Two flows into one host of a star, run to the end; the check passes on the real run,
    /// so what the tests below break is the only thing wrong.
    fn finished() -> Simulation {
        let topo = builders::star(3, Rate::gbps(100), Time::from_us(1)).unwrap();
        let flows = vec![
            FlowSpec::new(NodeId(1), NodeId(0), 50_000, Time::ZERO),
            FlowSpec::new(NodeId(2), NodeId(0), 50_000, Time::ZERO),
        ];
        let mut sim = Simulation::new(topo, flows, SimConfig::default()).unwrap();
        assert_eq!(sim.run_to_end(), StopReason::Finished);
        assert!(sim.cfg.lossless);
        sim.check_conservation().expect("an honest run conserves bytes");
        sim
    }

    #[test]
    fn lost_bytes_fail_the_run_loudly() {
        // One payload byte sent but neither delivered, dropped nor in flight: what a
        // forwarding bug that forgets a packet would leave.
        let mut sim = finished();
        sim.counters.payload_bytes_delivered -= 1;
        let err = sim.results().unwrap_err();
        assert!(matches!(err, Error::Invariant(ref m) if m.starts_with("byte conservation")), "{err}");
    }

    #[test]
    fn a_drop_fails_a_lossless_run_but_not_a_lossy_one() {
        // A packet dropped and accounted for: bytes balance, but PFC promised no loss.
        let mut sim = finished();
        sim.counters.drops += 1;
        sim.counters.payload_bytes_delivered -= 1000;
        sim.counters.payload_bytes_dropped += 1000;
        let err = sim.check_conservation().unwrap_err();
        assert!(matches!(err, Error::Invariant(ref m) if m.contains("dropped in lossless mode")), "{err}");
        sim.cfg.lossless = false;
        sim.check_conservation().expect("drops are allowed without PFC");
    }
}
