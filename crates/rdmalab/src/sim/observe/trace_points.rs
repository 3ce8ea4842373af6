//! Where the simulator writes the per-packet trace (`trace`): starting and finishing it,
//! and the one call each trace point makes (a test of `trace.is_some()` at the call site
//! keeps an untraced run free of it).

use std::path::Path;

use super::trace::{Row, RowKey, Tick, Trace, TraceEvent, NOT_OWNER, OWNER, QLEN, RECORD_BYTES};
use crate::config::TraceConfig;
use crate::error::{Error, Result};
use crate::fabric::{Packet, PacketKind};
use crate::ids::{FlowId, PortId, QpId};
use crate::sim::Simulation;

impl Simulation {
    /// True when the scenario asks for a trace (the driver then calls `start_trace`).
    pub fn trace_requested(&self) -> bool {
        self.cfg.trace.is_some()
    }

    /// Starts writing the trace asked for by the scenario into the spool file `path`,
    /// after checking its estimated size against its cap.
    pub fn start_trace(&mut self, path: &Path) -> Result<u64> {
        let Some(cfg) = self.cfg.trace.clone() else {
            return Err(Error::scenario("trace", "the scenario has no [trace] table"));
        };
        let estimate = self.trace_estimate(&cfg);
        if estimate > cfg.max_bytes {
            return Err(Error::scenario(
                "trace.max_bytes",
                format!(
                    "the trace would take about {estimate} bytes ({} records), over the cap of {}: \
                     narrow `flows`, `nodes`, `ports` or the time window, or raise `max_bytes`",
                    estimate / RECORD_BYTES,
                    cfg.max_bytes
                ),
            ));
        }
        let mut t = Trace::open(cfg, path, self.flows.len(), self.topo.len(), self.ports.len())?;
        if self.origin_order {
            t.tick = Some(Tick::default());
            t.keyed = self.part.is_some();
        }
        self.trace = Some(Box::new(t));
        // The trace is written in event order: every switch dequeue is an event.
        self.mech.deferred = None;
        Ok(estimate)
    }

    /// An upper bound of the trace's size: for every selected flow, its data packets and
    /// ACKs times their events along the first path (a dequeue at every hop, an enqueue at
    /// every switch), counting only the path's selected ports; the time window is ignored.
    fn trace_estimate(&self, cfg: &TraceConfig) -> u64 {
        let any_place = cfg.nodes.is_empty() && cfg.ports.is_empty();
        let mut records = 0u64;
        for (i, f) in self.flows.iter().enumerate() {
            if !cfg.flows.is_empty() && !cfg.flows.contains(&(i as u32)) {
                continue;
            }
            let packets = f.size.div_ceil(self.cfg.mtu as u64);
            let acks = packets.div_ceil(self.cfg.ack_interval as u64);
            // ACKs cross as many hops back as data forward; the forward ports stand for both.
            let path = self.routes.first_path(&self.topo, f.src, f.dst);
            let hit =
                |p: &&PortId| any_place || cfg.ports.contains(p) || cfg.nodes.contains(&self.topo.ports[p.idx()].node);
            records += (packets + acks) * 2 * path.iter().filter(hit).count() as u64;
        }
        records * RECORD_BYTES
    }

    /// Closes the trace: `(records written, truncated at the cap)`.
    pub fn finish_trace(&mut self) -> Result<(u64, bool)> {
        match self.trace.as_mut() {
            Some(t) => {
                t.finish()?;
                Ok((t.records, t.truncated))
            }
            None => Ok((0, false)),
        }
    }

    /// The flow a QP carries (`NONE` when none: PFC frames, unknown QPs).
    fn flow_of(&self, qp: QpId) -> FlowId {
        self.qp_flow.get(qp.idx()).copied().unwrap_or(FlowId::NONE)
    }

    /// Records `ev` for `pkt` at `port` (on `port`'s node) if the trace selects it.
    #[cold]
    pub(in crate::sim) fn trace_event(&mut self, ev: TraceEvent, port: PortId, pkt: &Packet) {
        let (node, qlen) = {
            let st = &self.ports[port.idx()];
            (st.node, st.total_queued())
        };
        let flow = self.flow_of(pkt.qp);
        let now = self.now;
        let rank = if self.owns(node) { OWNER } else { NOT_OWNER };
        let key = RowKey { event: self.queue.popped_seq(), node: node.0, rank };
        if let Some(t) = self.trace.as_mut() {
            if t.wants(now, node, port, flow) {
                t.write(Row { time: now, ev, node, port, flow, pkt: *pkt, qlen }, key);
            }
        }
    }

    /// A partition's link failure empties the wire of `port`, one it owns that crosses a cut:
    /// its records of packets the receiving partition held need this port's queue length
    /// (see `RowKey`).
    #[cold]
    pub(in crate::sim) fn trace_cut_wire_lost(&mut self, port: PortId) {
        let (node, qlen) = (self.ports[port.idx()].node, self.ports[port.idx()].total_queued());
        let peer = self.ports[self.ports[port.idx()].peer.idx()].node;
        let crosses = self.part.as_ref().is_some_and(|p| p.owns(node) && !p.owns(peer));
        let (now, event) = (self.now, self.queue.popped_seq());
        if let Some(t) = self.trace.as_mut().filter(|t| t.keyed && crosses) {
            let pkt = Packet::pfc(PacketKind::Pause, 0, 0); // (not written)
            let row = Row { time: now, ev: TraceEvent::Drop, node, port, flow: FlowId::NONE, pkt, qlen };
            t.write(row, RowKey { event, node: node.0, rank: QLEN });
        }
    }

    /// Remembers which flow QP `qp` was opened for (the trace's `flow` column, the rate
    /// sampler's rows).
    pub(in crate::sim) fn note_qp_flow(&mut self, qp: QpId, flow: FlowId) {
        self.note_opened_for_sampling(qp, flow);
        if self.qp_flow.len() <= qp.idx() {
            self.qp_flow.resize(qp.idx() + 1, FlowId::NONE);
        }
        self.qp_flow[qp.idx()] = flow;
    }
}
