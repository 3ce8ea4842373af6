//! Congestion control in the simulator: feeding ACKs and timers to the algorithm of a QP's
//! group, and handing its rate to the QPs and their NIC's pacing. The groups themselves
//! (who shares a state, when it is made and retired) are `cc_groups.rs`.
//!
//! In a shared group, sequence-gated algorithms (HPCC, TIMELY, DCTCP) see group-wide byte
//! counts (acknowledged and sent, summed over the members), so "once per RTT" means once
//! per group round trip. HPCC keeps one set of INT records per group: members on different
//! ECMP paths mix their hop records, so shared-group HPCC assumes a common path.
//!
//! Deliberate deviation: the reference still runs CC for the ACK that completes a flow
//! (and may then start DCQCN timers on the dead QP, `RdmaHw::ReceiveAck`); here a retired group
//! ignores it. FCTs are unaffected; only useless timer events disappear.

use crate::cc::{AckEvent, CcConfig, CcState, Granularity, LossKind, PathInfo};
use crate::fabric::packet::NO_INT;
use crate::fabric::Packet;
use crate::ids::{CcGroupId, NodeId, QpId};
use crate::rnic::transport::Transport;
use crate::sim::mech::tenancy::{self, forget_int_baselines, swap_path_int, PathInt};
use crate::sim::mech::{dcqcn_checks, dcqcn_timers};
use crate::sim::{Event, Simulation};
use crate::tenancy::pacing::IntSample;
use crate::tenancy::Defense;
use crate::units::{Rate, Time};

impl Simulation {
    /// Feeds an ACK/NACK of `qp_id` to its group's algorithm and applies a new rate.
    pub(in crate::sim) fn cc_on_ack(&mut self, qp_id: QpId, pkt: &Packet) {
        if matches!(self.cfg.cc, CcConfig::None) {
            return;
        }
        let g = self.qps[qp_id.idx()].cc_group;
        if !self.groups[g.idx()].alive {
            return;
        }
        if self.dcqcn.hints() && self.qps[qp_id.idx()].in_flight == 0 {
            dcqcn_timers::hint_quiet(&mut self.groups[g.idx()]);
        }
        let (seq, snd_nxt) =
            if self.groups[g.idx()].shared { self.group_seqs(g) } else { (pkt.seq, self.qps[qp_id.idx()].snd_nxt) };
        if pkt.cnp {
            self.mech.ibcc.becns += self.cfg.cc.fecn().is_some() as u64;
        }
        let ev = AckEvent {
            now: self.now,
            seq,
            snd_nxt,
            cnp: pkt.cnp,
            nack: pkt.kind == crate::fabric::PacketKind::Nack,
            int: (pkt.int_slot != NO_INT).then(|| self.int.get(pkt.int_slot)),
            mtu: self.cfg.mtu,
            int_multi: self.cfg.int_multi,
            // `pkt` is an ACK/NACK here: its payload field is the DASR share (0 without Blitz).
            share: Rate(pkt.payload as u64 * 1000),
        };
        // A state spanning destinations (the tenant defense's, or `per_sl`'s: every QP of a
        // NIC and service level) must read each ACK's INT hops against its own path's last
        // records: compared with another path's switch counters, the 20-bit byte deltas are
        // noise, HPCC reads a huge utilisation and cuts its rate to the minimum.
        let tenant = self.cfg.defense == Defense::Tenant;
        let spans = tenant || self.cfg.granularity == Granularity::PerSl;
        let per_path = spans && self.groups[g.idx()].shared && self.cfg.cc.needs_int();
        let dst = self.qps[qp_id.idx()].dst;
        let grp = &mut self.groups[g.idx()];
        if let (true, true, Some(ih)) = (tenant, per_path, ev.int) {
            match grp.pacer_mut().classify(ih.sent_at) {
                IntSample::Use => {}
                IntSample::Rebase => forget_int_baselines(grp),
                IntSample::Skip => return,
            }
        }
        let swapped = match per_path {
            false => false,
            true => match swap_path_int(dst, grp, ev.int) {
                PathInt::Swapped => true,
                PathInt::Baseline { run } if run => false,
                PathInt::Baseline { .. } => return, // only this member's path baseline
            },
        };
        let old = grp.rate;
        let (windowed, mtu) = (self.cfg.cc.windowed(), self.cfg.mtu);
        let old_win = if windowed { grp.window(mtu) } else { 0 };
        let fresh = self.dcqcn.lazy_alpha && pkt.cnp && matches!(&grp.state, CcState::Dcqcn(s) if s.first_cnp);
        grp.on_ack(&self.cfg.cc, &ev);
        // A RoCE NACK names a hole (go-back-N's, or IRN's for each packet it holds): one
        // packet lost per hole, whatever the NACKs naming it (an RNR NAK is none). UET's
        // NACK names one trimmed packet, which `uet_on_ack` has already reported.
        if windowed && ev.nack && !pkt.last_of_msg && self.qps[qp_id.idx()].transport != Transport::Uet {
            grp.on_loss(&self.cfg.cc, mtu as u64, LossKind::Hole(seq), self.now, snd_nxt.saturating_sub(seq), mtu);
        }
        if self.dcqcn.virtual_checks() {
            let (checks, grids) = (self.mech.idle_checks.as_deref_mut(), &mut self.mech.dcqcn_grids);
            dcqcn_checks::after_ack(checks, grids, g, grp, &mut self.queue, pkt.cnp, fresh);
        }
        if swapped {
            swap_path_int(dst, grp, None);
        }
        let changed = grp.rate != old || (windowed && grp.window(mtu) != old_win);
        self.flush_timers(g);
        if changed {
            self.set_member_rates(g, self.cfg.cc.retimes_pacing());
        }
    }

    /// A loss signal for the window algorithms (Swift, NSCC): `bytes` of `qp_id` lost, as a
    /// retransmission timeout says (`LossKind::Timeout`, from `host/mod.rs::on_rto`) or a
    /// NACK of one packet (`LossKind::Packet`: a transport whose NACK names each lost or
    /// trimmed packet calls this once per NACK). RoCE's NACKs reach the algorithm through
    /// `cc_on_ack`. The caller kicks the NIC.
    pub(in crate::sim) fn cc_on_loss(&mut self, qp_id: QpId, bytes: u64, kind: LossKind) {
        if !self.cfg.cc.windowed() {
            return;
        }
        let g = self.qps[qp_id.idx()].cc_group;
        if g.is_none() || g.0 == super::RELEASED || !self.groups[g.idx()].alive {
            return;
        }
        let (una, nxt) = if self.groups[g.idx()].shared {
            self.group_seqs(g)
        } else {
            (self.qps[qp_id.idx()].snd_una, self.qps[qp_id.idx()].snd_nxt)
        };
        let (now, mtu) = (self.now, self.cfg.mtu);
        self.groups[g.idx()].on_loss(&self.cfg.cc, bytes, kind, now, nxt.saturating_sub(una), mtu);
        self.set_member_rates(g, false);
    }

    /// Group-wide (acknowledged, sent) byte counts, monotonic across members leaving.
    fn group_seqs(&self, g: CcGroupId) -> (u64, u64) {
        let grp = &self.groups[g.idx()];
        let (mut una, mut nxt) = (grp.retired_bytes, grp.retired_bytes);
        for &q in &grp.members {
            una += self.qps[q.idx()].snd_una;
            nxt += self.qps[q.idx()].snd_nxt;
        }
        (una, nxt)
    }

    /// A CC timer event: runs the handler if the timer is still armed for now.
    pub(in crate::sim) fn on_cc_timer(&mut self, g: CcGroupId, kind: u8) {
        let kind = kind as usize;
        let grp = &mut self.groups[g.idx()];
        if !grp.alive || grp.timers.due[kind] != self.now {
            return; // cancelled or re-armed since this event was scheduled
        }
        grp.timers.due[kind] = Time::MAX;
        let old = grp.rate;
        let found_cnp = matches!(&grp.state, CcState::Dcqcn(s) if s.decrease_cnp);
        grp.on_timer(&self.cfg.cc, kind, self.now);
        let changed = grp.rate != old;
        let (grp, qps, queue) = (&mut self.groups[g.idx()], &self.qps, &mut self.queue);
        let grids = &mut self.mech.dcqcn_grids;
        match kind {
            crate::cc::dcqcn::ALPHA_TIMER if self.dcqcn.parks_alpha => dcqcn_timers::after_alpha_tick(grp, qps, grids),
            crate::cc::dcqcn::DECREASE_TIMER if self.dcqcn.parks_decrease && !found_cnp => {
                dcqcn_timers::after_idle_check(grp, qps, grids, || queue.reserve_seq())
            }
            _ => {}
        }
        if self.dcqcn.virtual_checks() && kind == crate::cc::dcqcn::DECREASE_TIMER {
            dcqcn_checks::after_check(self.mech.idle_checks.as_deref_mut(), g, grp, queue);
        }
        self.flush_timers(g);
        if changed {
            self.set_member_rates(g, self.cfg.cc.retimes_pacing());
        }
    }

    /// A drop left `qp` with nothing in the network: its group's DCQCN timers look whether
    /// they may park, as after such an ACK (`cc_on_ack`), rather than tick on until it sends.
    pub(in crate::sim) fn hint_quiet_after_drop(&mut self, qp: QpId) {
        let q = &self.qps[qp.idx()];
        if !self.dcqcn.hints() || q.in_flight != 0 || q.cc_group.is_none() || q.cc_group.0 == super::RELEASED {
            return;
        }
        let g = q.cc_group;
        dcqcn_timers::hint_quiet(&mut self.groups[g.idx()]);
        if let Some(c) = self.mech.idle_checks.as_deref_mut() {
            let (now, key) = (self.now, self.queue.popped_seq());
            dcqcn_checks::hint_after_drop(c, g, &mut self.groups[g.idx()], &mut self.queue, now, key);
        }
    }

    /// A member of group `g` sends with nothing of the group in the network: its parked DCQCN
    /// timers come back (`mech::dcqcn_timers::on_quiet_send`), a decrease check with its own
    /// tie key.
    pub(in crate::sim) fn unpark_dcqcn_timers(&mut self, g: CcGroupId) {
        if g.is_none() {
            return;
        }
        let back =
            dcqcn_timers::on_quiet_send(&self.cfg.cc, &mut self.groups[g.idx()], self.now, &mut self.mech.dcqcn_grids);
        if let Some((due, key)) = back {
            self.queue.push_reserved(due, key, Event::CcTimer(g, crate::cc::dcqcn::DECREASE_TIMER as u8));
        }
        self.flush_timers(g);
    }

    /// Schedules an event for every timer the algorithm armed.
    fn flush_timers(&mut self, g: CcGroupId) {
        let timers = &mut self.groups[g.idx()].timers;
        let mut dirty = timers.take_dirty();
        while dirty != 0 {
            let k = dirty.trailing_zeros() as usize;
            dirty &= dirty - 1;
            let at = timers.due[k];
            if at != Time::MAX {
                self.queue.push(at, Event::CcTimer(g, k as u8));
            }
        }
    }

    /// Gives every member its share of the group rate. With `retime` (HPCC's
    /// `RdmaHw::ChangeRate`) the pending gap of the last packet sent is re-timed at
    /// the new rate and the NIC's wake-up moved earlier if needed; otherwise the new rate
    /// applies from the next packet.
    pub(in crate::sim) fn set_member_rates(&mut self, g: CcGroupId, retime: bool) {
        let retime = if retime && tenancy::tenant_paced(&self.cfg, &self.groups[g.idx()]) {
            let (grp, now, timing) = (&mut self.groups[g.idx()], self.now, self.cfg.timing);
            tenancy::retime_tenant_state(timing, now, grp, &mut self.qps, &mut self.nics, &mut self.queue);
            false
        } else {
            retime
        };
        let rate = self.groups[g.idx()].member_rate().max(Rate(1));
        let window = self.cfg.cc.windowed().then(|| self.groups[g.idx()].window(self.cfg.mtu));
        for i in 0..self.groups[g.idx()].members.len() {
            let q = self.groups[g.idx()].members[i];
            let qp = &mut self.qps[q.idx()];
            if let Some(w) = window {
                // A UET QP tracks `window_packets` PSNs (`mech::uet::on_open`): no window goes
                // past them; its window bounds the packets in flight (`mech::uet::set_window`).
                if qp.transport == Transport::Uet {
                    let w = w.min(self.cfg.uet.window_packets as u64 * self.cfg.mtu as u64);
                    crate::sim::mech::uet::set_window(&mut self.mech.uet, q, qp, w, self.cfg.mtu);
                    qp.var_win = false;
                } else {
                    (qp.win, qp.var_win) = (w, false); // the algorithm's window, not the rate's
                }
            }
            let mut earlier = false;
            if retime && qp.rate != rate && qp.last_wire > 0 {
                let old_gap = self.cfg.timing.tx_time(qp.rate, qp.last_wire as u64);
                let new_gap = self.cfg.timing.tx_time(rate, qp.last_wire as u64);
                qp.next_avail = Time((qp.next_avail.0 + new_gap.0).saturating_sub(old_gap.0));
                let nic = &mut self.nics[qp.nic.idx()];
                nic.pacing_moved(qp);
                if nic.wake_at != Time::MAX && qp.next_avail < nic.wake_at {
                    let at = qp.next_avail.max(self.now);
                    nic.wake_at = at;
                    self.queue.push(at, Event::NicWake(qp.nic));
                }
                earlier = new_gap < old_gap;
            }
            qp.rate = rate;
            if earlier && self.host_tx_skips {
                // A TxDone skipped while this QP was paced past it (`Nic::quiet`) may now
                // find it due: it goes back in its place.
                let nic = qp.nic;
                self.nic_changed(nic);
            }
        }
    }

    /// The receiver may flag this ACK as a CNP (always, unless `cnp_interval` paces CNPs
    /// per QP).
    pub(in crate::sim) fn cnp_allowed(&mut self, qp: QpId) -> bool {
        let Some(interval) = self.cfg.cnp_interval else {
            return true;
        };
        let rx = &mut self.qps[qp.idx()].rx;
        if self.now < rx.cnp_quiet_until {
            return false;
        }
        rx.cnp_quiet_until = self.now + interval;
        true
    }

    /// The base RTT and BDP a QP from `src` to `dst` uses (global when GLOBAL_T), needed
    /// by windows and by HPCC's T and W.
    pub(in crate::sim) fn path_info(&self, src: NodeId, dst: NodeId) -> PathInfo {
        if !self.cfg.window.enabled && !self.cfg.cc.needs_int() && !self.cfg.cc.windowed() {
            return PathInfo::default();
        }
        let (base_rtt, bdp) = if self.cfg.window.global {
            self.global_rtt_bdp
        } else {
            let path = self.routes.first_path(&self.topo, src, dst);
            let rtt = crate::stats::ideal::base_rtt(&self.topo, &path, self.cfg.mtu as u64);
            (rtt, crate::sim::setup::bdp_bytes(rtt, self.topo.nic_rate(src)))
        };
        PathInfo { base_rtt, bdp }
    }
}
