//! Congestion control in the simulator: groups of QPs sharing a state (enforcement
//! granularity), feeding ACKs and timers to the algorithm, and handing its rate to the
//! QPs and their NIC's pacing.
//!
//! Groups are found when a QP opens (a map keyed by sender and destination, never touched
//! per packet) and left when a QP completes; the last QP out retires the group and its
//! timers (MODEL.md §2.5 step 3). A retired key is forgotten, so a later QP to the same
//! destination starts a fresh state at line rate, as a new QP does in the reference.
//!
//! In a shared group, sequence-gated algorithms (HPCC, TIMELY, DCTCP) see group-wide byte
//! counts (acknowledged and sent, summed over the members), so "once per RTT" means once
//! per group round trip. HPCC keeps one set of INT records per group: members on different
//! ECMP paths mix their hop records, so shared-group HPCC assumes a common path.
//!
//! Deliberate deviation: the reference still runs CC for the ACK that completes a flow
//! (and may then start DCQCN timers on the dead QP, MODEL.md §2.5); here a retired group
//! ignores it. FCTs are unaffected; only useless timer events disappear.

use super::{Event, Simulation};
use crate::cc::{AckEvent, CcConfig, CcGroup, Granularity, PathInfo};
use crate::fabric::packet::NO_INT;
use crate::fabric::Packet;
use crate::ids::{CcGroupId, NodeId, QpId};
use crate::units::{Rate, Time};

impl Simulation {
    /// Puts a new QP in its group (found or created) and gives it the group's rate.
    pub(super) fn join_group(&mut self, qp_id: QpId, path: PathInfo) -> CcGroupId {
        let key = self.group_key(qp_id);
        let existing = key.and_then(|k| self.group_of.get(&k).copied());
        let g = match existing {
            Some(g) => g,
            None => {
                let g = CcGroupId::new(self.groups.len());
                let line = self.qps[qp_id.idx()].max_rate;
                self.groups.push(CcGroup::new(&self.cfg.cc, line, path, self.cfg.granularity));
                if let Some(k) = key {
                    self.group_of.insert(k, g);
                }
                g
            }
        };
        self.groups[g.idx()].members.push(qp_id);
        self.qps[qp_id.idx()].cc_group = g;
        self.set_member_rates(g, false);
        g
    }

    /// Which group a QP belongs to under the configured granularity (`None`: its own).
    fn group_key(&self, qp_id: QpId) -> Option<(u32, u32)> {
        let qp = &self.qps[qp_id.idx()];
        match self.cfg.granularity {
            Granularity::PerQp => None,
            Granularity::PerDestination | Granularity::PerDestinationUnsplit => Some((qp.nic, qp.dip)),
            Granularity::PerPair => Some((qp.src.0, qp.dst.0)),
        }
    }

    /// A QP completed: it leaves its group; the last one out retires the group.
    pub(super) fn leave_group(&mut self, qp_id: QpId) {
        let key = self.group_key(qp_id);
        let qp = &self.qps[qp_id.idx()];
        let (g, done) = (qp.cc_group, qp.snd_una);
        let grp = &mut self.groups[g.idx()];
        if let Some(pos) = grp.members.iter().position(|&q| q == qp_id) {
            grp.members.remove(pos);
        }
        grp.retired_bytes += done;
        if grp.members.is_empty() {
            grp.alive = false;
            grp.timers.cancel_all();
            if let Some(k) = key {
                if self.group_of.get(&k) == Some(&g) {
                    self.group_of.remove(&k);
                }
            }
        } else if grp.split {
            self.set_member_rates(g, false);
        }
    }

    /// Feeds an ACK/NACK of `qp_id` to its group's algorithm and applies a new rate.
    pub(super) fn cc_on_ack(&mut self, qp_id: QpId, pkt: &Packet) {
        if matches!(self.cfg.cc, CcConfig::None) {
            return;
        }
        let g = self.qps[qp_id.idx()].cc_group;
        if !self.groups[g.idx()].alive {
            return;
        }
        let (seq, snd_nxt) =
            if self.groups[g.idx()].shared { self.group_seqs(g) } else { (pkt.seq, self.qps[qp_id.idx()].snd_nxt) };
        let ev = AckEvent {
            now: self.now,
            seq,
            snd_nxt,
            cnp: pkt.cnp,
            nack: pkt.kind == crate::fabric::PacketKind::Nack,
            int: (pkt.int_slot != NO_INT).then(|| self.int.get(pkt.int_slot)),
            mtu: self.cfg.mtu,
            int_multi: self.cfg.int_multi,
            share: Rate(pkt.share_kbps as u64 * 1000),
        };
        let grp = &mut self.groups[g.idx()];
        let old = grp.rate;
        grp.on_ack(&self.cfg.cc, &ev);
        let changed = grp.rate != old;
        self.flush_timers(g);
        if changed {
            self.set_member_rates(g, self.cfg.cc.retimes_pacing());
        }
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
    pub(super) fn on_cc_timer(&mut self, g: CcGroupId, kind: u8) {
        let kind = kind as usize;
        let grp = &mut self.groups[g.idx()];
        if !grp.alive || grp.timers.due[kind] != self.now {
            return; // cancelled or re-armed since this event was scheduled
        }
        grp.timers.due[kind] = Time::MAX;
        let old = grp.rate;
        grp.on_timer(&self.cfg.cc, kind, self.now);
        let changed = grp.rate != old;
        self.flush_timers(g);
        if changed {
            self.set_member_rates(g, self.cfg.cc.retimes_pacing());
        }
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
    /// `ChangeRate`, MODEL.md §2.3) the pending gap of the last packet sent is re-timed at
    /// the new rate and the NIC's wake-up moved earlier if needed; otherwise the new rate
    /// applies from the next packet.
    fn set_member_rates(&mut self, g: CcGroupId, retime: bool) {
        let rate = self.groups[g.idx()].member_rate().max(Rate(1));
        for i in 0..self.groups[g.idx()].members.len() {
            let q = self.groups[g.idx()].members[i];
            let qp = &mut self.qps[q.idx()];
            if retime && qp.rate != rate && qp.last_wire > 0 {
                let old_gap = self.cfg.timing.tx_time(qp.rate, qp.last_wire as u64);
                let new_gap = self.cfg.timing.tx_time(rate, qp.last_wire as u64);
                qp.next_avail = Time((qp.next_avail.0 + new_gap.0).saturating_sub(old_gap.0));
                let nic = &mut self.nics[qp.nic as usize];
                if nic.wake_at != Time::MAX && qp.next_avail < nic.wake_at {
                    let at = qp.next_avail.max(self.now);
                    nic.wake_at = at;
                    self.queue.push(at, Event::NicWake(qp.nic));
                }
            }
            qp.rate = rate;
        }
    }

    /// The receiver may flag this ACK as a CNP (always, unless `cnp_interval` paces CNPs
    /// per QP).
    pub(super) fn cnp_allowed(&mut self, qp: QpId) -> bool {
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
    pub(super) fn path_info(&self, src: NodeId, dst: NodeId) -> PathInfo {
        if !self.cfg.window.enabled && !self.cfg.cc.needs_int() {
            return PathInfo::default();
        }
        let (base_rtt, bdp) = if self.cfg.window.global {
            self.global_rtt_bdp
        } else {
            let path = self.routes.first_path(&self.topo, src, dst);
            let rtt = crate::stats::ideal::base_rtt(&self.topo, &path, self.cfg.mtu as u64);
            (rtt, super::setup::bdp_bytes(rtt, self.topo.nic_rate(src)))
        };
        PathInfo { base_rtt, bdp }
    }
}
