//! The send side of the DRUM paper's host model: the RNIC's WQE engine (the doorbell FIFO that
//! every application of a host shares, `rnic::WqeEngine`) and the QPs' send queues it fills,
//! with the count of WQEs each holds (`Qp::sq_room`, `[host] max_send_wr`); and, at the end
//! of a run, where each batch's WQEs are (`res.wqes`' `state`).

use crate::app::closed_loop::BatchRecord;
use crate::app::AppKind;
use crate::ids::{NicId, QpId};
use crate::rnic::{Message, Nic, Qp};
use crate::sim::{Event, Simulation};

impl Simulation {
    /// Posts WQE `m` on `qp`: through the NIC's WQE engine when it has one.
    pub(in crate::sim) fn post_wqe(&mut self, qp: QpId, m: Message) {
        let nic = self.qps[qp.idx()].nic;
        let now = self.now;
        let Some(e) = self.nics[nic.idx()].engine.as_mut() else {
            self.post_to_qp(qp, m);
            return;
        };
        e.ring(qp, m);
        if !e.busy {
            e.busy = true;
            let at = now + e.cost;
            self.queue.push(at, Event::WqeDone(nic));
        }
    }

    /// The WQE engine finished the head of its FIFO: its bytes join the QP's stream.
    pub(in crate::sim) fn on_wqe_done(&mut self, nic: NicId) {
        let now = self.now;
        let e = self.nics[nic.idx()].engine.as_mut().expect("engine event without engine");
        let Some((qp, m)) = e.take_head() else { return };
        e.processed += 1;
        e.busy = !e.fifo.is_empty();
        if e.busy {
            let at = now + e.cost;
            self.queue.push(at, Event::WqeDone(nic));
        }
        self.post_to_qp(qp, m);
        self.qps[qp.idx()].finished = false;
        self.nic_kick(nic);
    }

    /// Appends a WQE's bytes to its QP's stream. A QP in the error state (`sim::retry`)
    /// holds them until it is reconnected.
    fn post_to_qp(&mut self, qp: QpId, m: Message) {
        let q = &mut self.qps[qp.idx()];
        let before = q.posted;
        crate::sim::mech::uet::align_post(q, self.cfg.mtu); // UET: on a packet boundary
        q.post_message(m);
        if let Some(r) = self.mech.rccc.as_deref_mut() {
            // RCCC: a message on an idle connection starts with its opening credit.
            if crate::sim::mech::rccc::on_post(r, &mut self.mech.uet, qp, q, before, self.now) {
                self.nics[q.nic.idx()].pacing_moved(q);
            }
        }
        if q.error {
            q.snd_nxt = q.posted;
        }
        let nic = q.nic;
        self.nics[nic.idx()].mark(q);
        self.nic_changed(nic); // posted from a handler that kicks nothing (a send completion)
    }

    /// The batch records, each with its WQEs on the wire now (sent from, not completed).
    pub(in crate::sim) fn host_batches(&self) -> Vec<BatchRecord> {
        let Some(m) = self.hostm.as_ref() else { return Vec::new() };
        let mut out = m.batches.clone();
        for q in &self.qps {
            for msg in q.messages.iter().filter(|x| x.end - x.size < q.snd_nxt) {
                if !msg.app.is_none() && matches!(self.apps.kind(msg.app), AppKind::Closed(_)) {
                    let b = &mut out[(msg.cookie >> 1) as usize];
                    b.wire += 1;
                    b.wire_acked += q.snd_una.saturating_sub(msg.end - msg.size);
                }
            }
        }
        out
    }
}

/// WQEs of QP `id` rung and not yet processed by its NIC's WQE engine, and their bytes (none
/// without an engine). Takes the two tables, not the simulation, for callers that hold
/// other parts of it.
pub(in crate::sim) fn in_engine(nics: &[Nic], qps: &[Qp], id: QpId) -> (u32, u64) {
    let nic = qps[id.idx()].nic;
    nics[nic.idx()].engine.as_ref().map_or((0, 0), |e| e.pending(id))
}
