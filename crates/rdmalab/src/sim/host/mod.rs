//! Host-side handlers: flow admission, RNIC transmit arbitration, the receiver (ACK,
//! NACK, go-back-N), ACK processing at the sender, and retransmission timeouts.

mod cc;
mod cc_groups;
mod completions;
mod egress;
mod rx;
mod tx;
mod uet_rx;

pub(super) use cc_groups::GroupKey;

use crate::ids::{CcGroupId, FlowId, QpId};
use crate::rnic::Qp;
use crate::sim::mech::{irn, retry, tenancy, uet};
use crate::sim::{Event, Simulation};
use crate::units::Time;
use crate::workload::FlowSpec;

/// `Qp::cc_group` of a QP whose slot was released.
const RELEASED: u32 = u32::MAX - 1;

impl Simulation {
    /// Admits every flow starting now, one QP each (or to the application that carries
    /// it), then schedules the next arrival.
    pub(in crate::sim) fn on_flow_arrival(&mut self) {
        while let Some(&f) = self.flows.get(self.next_flow) {
            if f.start > self.now {
                self.set_global_origin(crate::sim::order::Global::Flows);
                self.queue.push(f.start, Event::FlowArrival);
                break;
            }
            let flow = FlowId::new(self.next_flow);
            self.next_flow += 1;
            if !self.owns(f.src) {
                continue; // another partition's flow
            }
            // What admitting the flow pushes comes from its source host.
            self.set_node_origin(f.src.0);
            if !self.reachable(f.src, f.dst) {
                self.record_unreachable(flow, crate::sim::GaveUp::Unreachable);
                continue;
            }
            if !f.app.is_none() {
                self.app_admit(flow, f);
                continue;
            }
            let slot = self.origin_order.then_some(QpId(flow.0));
            let qp = self.open_qp_in(&f, slot);
            self.note_qp_flow(qp, flow);
            self.qps[qp.idx()].rx.flow = flow; // the receiver counts under it
            self.qps[qp.idx()].post(flow, f.size, self.now);
            let nic = self.qps[qp.idx()].nic;
            self.nics[nic.idx()].mark(&self.qps[qp.idx()]);
            self.nic_kick(nic);
        }
    }

    /// Creates a QP for traffic like `f` (its source address, ports, class and tenant;
    /// `f.size` is the first message's size) and puts it in its congestion-control group.
    /// A released slot is reused when there is one, so memory follows the QPs alive at
    /// once, not the QPs ever opened.
    pub(in crate::sim) fn open_qp(&mut self, f: &FlowSpec) -> QpId {
        self.open_qp_in(f, None)
    }

    /// `open_qp` into a given slot (the origin order puts flow `i`'s QP in slot `i`, set up
    /// by `Simulation::with_apps`), or a free or new one.
    fn open_qp_in(&mut self, f: &FlowSpec, slot: Option<QpId>) -> QpId {
        let mut nic_idx = self.egress_nic(f.src, f.dst);
        let sport = f.sport.unwrap_or_else(|| self.nics[nic_idx.idx()].allocate_sport(f.dst));
        if !self.topo.nvswitch.is_empty() {
            nic_idx = self.spread_nic(nic_idx, f, sport);
        }
        let nic = &mut self.nics[nic_idx.idx()];
        let line = nic.rate;
        let path = self.path_info(f.src, f.dst);
        let (id, messages, gen) = match slot.or_else(|| self.free_qps.pop()) {
            Some(id) => {
                // Its NIC may still list the old occupant until its next arbitration (a
                // given slot never had one: it holds a placeholder).
                if slot.is_none() {
                    let old_nic = self.qps[id.idx()].nic.idx();
                    self.nics[old_nic].forget_finished(&mut self.qps);
                }
                let mut m = std::mem::take(&mut self.qps[id.idx()].messages);
                m.clear();
                (id, m, self.qps[id.idx()].gen.wrapping_add(1))
            }
            None => {
                self.qps.push(Qp::placeholder());
                (QpId::new(self.qps.len() - 1), crate::rnic::PostedMessages::default(), 0)
            }
        };
        self.qps[id.idx()] = Qp {
            nic: nic_idx,
            src: f.src,
            dst: f.dst,
            sip: f.src_ip.unwrap_or(self.topo.nodes[f.src.idx()].ips[0]),
            dip: self.topo.nodes[f.dst.idx()].ips[0],
            sport,
            dport: f.dport,
            pg: f.pg,
            messages,
            next_avail: self.now,
            rate: line,
            max_rate: line,
            win: if self.cfg.window.enabled { path.bdp } else { 0 },
            var_win: self.cfg.window.variable,
            base_rtt: path.base_rtt,
            finished: false,
            tenant: f.tenant,
            gen,
            transport: f.transport,
            // The receiver's half tells SENDs from WRITEs by the QP (packets carry no opcode).
            rx: crate::rnic::RxState {
                sends: f.verb == crate::workload::Verb::Send,
                unreliable: !f.transport.reliable(),
                uet: f.transport == crate::rnic::transport::Transport::Uet,
                ..Default::default()
            },
            ..Qp::placeholder()
        };
        if f.transport == crate::rnic::transport::Transport::Uet {
            crate::sim::mech::uet::on_open(&mut self.mech.uet, id, &mut self.qps[id.idx()], self.cfg.mtu);
            if self.mech.rccc.is_some() {
                let (_, bdp) = self.path_rtt_bdp(f.src, f.dst);
                let r = self.mech.rccc.as_deref_mut().expect("tested above");
                crate::sim::mech::rccc::on_open(r, id, bdp, self.cfg.mtu);
            }
        } else if let Some(irn) = self.mech.irn.as_deref_mut() {
            crate::sim::mech::irn::on_open(irn, id, &mut self.qps[id.idx()]);
        }
        if self.opens_while_running(slot.is_some()) {
            self.note_runtime_open(id, f.src);
        }
        self.counters.qps_opened += 1;
        self.live_qps += 1;
        self.counters.qps_peak = self.counters.qps_peak.max(self.live_qps);
        self.log_opened_qp();
        if self.cfg.defense != crate::tenancy::Defense::None {
            let (_, bdp) = self.path_rtt_bdp(f.src, f.dst);
            let (p, now, qp) = (&self.cfg.defense_params, self.now, &mut self.qps[id.idx()]);
            let (rate, budgets) = (self.nics[qp.nic.idx()].rate, &mut self.mech.start_budgets[qp.nic.idx()]);
            tenancy::grant_line_rate_start(p, now, rate, budgets, qp, bdp, f.size);
        }
        self.join_group(id, path);
        self.nics[nic_idx.idx()].attach(id, &mut self.qps[id.idx()]);
        id
    }

    /// Puts a finished QP's slot on the free list once no packet of it is in the network
    /// (a timeout event still pending carries the old generation and is ignored). Slots are not reused while
    /// per-QP rate sampling or the QP-context cache name QPs by id.
    pub(in crate::sim) fn release_if_quiet(&mut self, id: QpId) {
        let qp = &self.qps[id.idx()];
        if !qp.finished || qp.cc_group.0 == RELEASED {
            return;
        }
        if qp.in_flight != 0 {
            self.log_busy_qp(id, true); // packets of it may have left in other partitions
            return;
        }
        // The origin order keeps ids apart from other nodes' history: no reuse.
        let reuse = self.cfg.rate_sample_interval.is_none() && self.cfg.qp_cache.is_none() && !self.origin_order;
        // RCCC: a credit packet still travelling, or a grant still owed, would reach the
        // slot's next occupant; the slot is released when the last credit arrives.
        if reuse && self.mech.rccc.as_deref().is_some_and(|r| !r.quiet(id.idx())) {
            return;
        }
        self.qps[id.idx()].cc_group = CcGroupId(RELEASED);
        self.live_qps -= 1;
        self.log_released_qp(id);
        if reuse {
            self.free_qps.push(id);
        }
    }

    /// Retransmission timer: go back to the oldest unacknowledged byte.
    pub(in crate::sim) fn on_rto(&mut self, qp_id: QpId, gen: u16) {
        let qp = &mut self.qps[qp_id.idx()];
        let is_uet = qp.transport == crate::rnic::transport::Transport::Uet;
        let Some(rto) = (if is_uet { Some(self.cfg.uet.rto) } else { self.cfg.rto }) else {
            return;
        };
        if qp.gen != gen {
            return; // armed by an earlier occupant of this slot
        }
        qp.rto_scheduled = false;
        if qp.finished {
            return;
        }
        if qp.rto_deadline == Time::MAX {
            return;
        }
        if self.now < qp.rto_deadline {
            qp.rto_scheduled = true;
            self.queue.push(qp.rto_deadline, Event::Rto(qp_id, qp.gen));
            return;
        }
        let timeouts = self.counters.timeouts;
        let mut lost = self.cfg.mtu as u64;
        if is_uet {
            match uet::on_timeout(&mut self.mech.uet, qp_id, qp, self.cfg.retry_limit, self.now, self.cfg.mtu) {
                uet::Expired::Idle if uet::idle_with_work(&mut self.mech.uet, qp_id, qp, self.cfg.mtu) => {
                    // RCCC: nothing in flight, new data or packets marked to resend left, no
                    // credit (`uet_rx.rs::uet_on_ack` armed the timer, or a NACK marked the
                    // last packet in flight): one packet of credit, its target asking for more.
                    if let Some(r) = self.mech.rccc.as_deref_mut() {
                        if let Some(at) = crate::sim::mech::rccc::on_idle_timeout(r, qp_id) {
                            self.rccc_resume(qp_id, at);
                        }
                    }
                }
                uet::Expired::Idle => {}
                // A window CC hears of it below (`cc_on_loss`, a timeout of `n` packets).
                uet::Expired::Resend(n) => {
                    lost = n as u64 * self.cfg.mtu as u64;
                    self.counters.timeouts += 1;
                    if let Some(r) = self.mech.rccc.as_deref_mut() {
                        if let Some(at) = crate::sim::mech::rccc::on_timeout(r, qp_id) {
                            self.rccc_resume(qp_id, at);
                        }
                    }
                }
                uet::Expired::Failed => {
                    self.counters.timeouts += 1;
                    self.fail_qp(qp_id, crate::sim::GaveUp::RetryExceeded);
                    return;
                }
            }
        } else if let Some(irn) = self.mech.irn.as_deref_mut() {
            match irn::on_timeout(irn, qp_id, qp, self.cfg.retry_limit) {
                irn::Expired::Idle => {}
                irn::Expired::Repair => self.counters.timeouts += 1,
                irn::Expired::Failed => {
                    self.counters.timeouts += 1;
                    self.fail_qp(qp_id, crate::sim::GaveUp::RetryExceeded);
                    return;
                }
            }
        } else if qp.snd_una < qp.snd_nxt {
            self.counters.timeouts += 1;
            let qp = &mut self.qps[qp_id.idx()];
            if !retry::go_back(self.cfg.retry_limit, qp) {
                self.fail_qp(qp_id, crate::sim::GaveUp::RetryExceeded);
                return; // retry exceeded: the QP is in the error state
            }
            qp.snd_nxt = qp.snd_una;
        }
        if self.counters.timeouts != timeouts {
            self.count_flow_timeout(qp_id);
            if self.cfg.cc.windowed() {
                self.cc_on_loss(qp_id, lost, crate::cc::LossKind::Timeout);
            }
        }
        let qp = &mut self.qps[qp_id.idx()];
        // UET: the oldest packet in flight's deadline (`uet::on_timeout` set it), none
        // while nothing is in flight (the next send arms it).
        qp.rto_deadline = match self.mech.irn.as_deref() {
            _ if is_uet => uet::next_deadline(qp),
            Some(irn) => self.now + irn::rto(irn, qp, self.cfg.mtu),
            None => self.now + rto,
        };
        if qp.rto_deadline != Time::MAX {
            qp.rto_scheduled = true;
            self.queue.push(qp.rto_deadline, Event::Rto(qp_id, qp.gen));
        }
        let nic = qp.nic;
        self.mark_if_unsent(qp_id); // rewound
        self.nic_kick(nic);
    }

    /// A timeout of QP `qp_id` resent something: the plain flow of its oldest unacknowledged
    /// message counts it (`flows.timeouts`; the sender's state, as the record it goes into).
    #[cold]
    fn count_flow_timeout(&mut self, qp_id: QpId) {
        let Some(m) = self.qps[qp_id.idx()].messages.front() else { return };
        if !m.app.is_none() || m.flow.is_none() {
            return;
        }
        let f = m.flow.idx();
        if self.flow_timeouts.len() <= f {
            self.flow_timeouts.resize(self.flows.len().max(f + 1), 0);
        }
        self.flow_timeouts[f] += 1;
    }
}
