//! Groups of QPs sharing a congestion-control state (enforcement granularity).
//!
//! Groups are found when a QP opens (a map keyed by sender and destination, never touched
//! per packet) and left when a QP completes; the last QP out retires the group and its
//! timers (as the reference's `RdmaHw::QpComplete` cancels a QP's). A retired key is
//! forgotten, so a later QP to the same destination starts a fresh state at line rate, as a
//! new QP does in the reference. With `cc_state_linger` a shared group instead outlives its
//! last QP that long, timers running (DCQCN recovers while idle), and a QP joining meanwhile
//! inherits it. Retired group slots are reused, so memory follows the groups alive at once.

use crate::cc::{CcGroup, Granularity, PathInfo};
use crate::ids::{CcGroupId, NodeId, QpId};
use crate::sim::mech::tenancy;
use crate::sim::mech::{dcqcn_checks, dcqcn_timers};
use crate::sim::{Event, Simulation};
use crate::tenancy::Defense;
use crate::units::Time;

/// A shared group's key: (sending NIC or host, destination address or host or tenant).
pub(in crate::sim) type GroupKey = (u32, u32);
/// Marks the second half of a key as a tenant (addresses and host ids never reach it).
const TENANT_KEY: u32 = 0x8000_0000;

impl Simulation {
    /// Puts a new QP in its group (found, lingering, or created) and gives it the group's
    /// rate.
    pub(in crate::sim) fn join_group(&mut self, qp_id: QpId, path: PathInfo) -> CcGroupId {
        let key = self.group_key(qp_id);
        let existing = key.and_then(|k| self.group_of.get(&k).copied());
        let g = match existing {
            Some(g) => g,
            None => {
                let line = self.qps[qp_id.idx()].max_rate;
                let mut fresh = CcGroup::new(&self.cfg.cc, line, path, self.cfg.granularity, key);
                fresh.owner = self.qps[qp_id.idx()].src.0;
                if let crate::cc::CcState::Swift(s) = &mut fresh.state {
                    let (src, dst) = (self.qps[qp_id.idx()].src, self.qps[qp_id.idx()].dst);
                    // Switches on the path (the paper's hop count, read from the TTL).
                    s.hops = self.routes.first_path(&self.topo, src, dst).len().saturating_sub(1) as u32;
                }
                dcqcn_timers::on_new_group(self.dcqcn, &mut fresh);
                if self.cfg.defense == Defense::Tenant {
                    // A tenant's state is shared and split; a line-rate start is private.
                    (fresh.shared, fresh.split) = (key.is_some(), key.is_some());
                }
                let g = match self.free_groups.pop() {
                    Some(g) => {
                        self.groups[g.idx()] = fresh.reusing(std::mem::take(&mut self.groups[g.idx()].members));
                        g
                    }
                    None => {
                        self.groups.push(fresh);
                        CcGroupId::new(self.groups.len() - 1)
                    }
                };
                if let Some(k) = key {
                    self.group_of.insert(k, g);
                }
                g
            }
        };
        let grp = &mut self.groups[g.idx()];
        grp.linger_until = Time::MAX; // a lingering group is in use again
        grp.members.push(qp_id);
        self.qps[qp_id.idx()].cc_group = g;
        if tenancy::tenant_paced(&self.cfg, &self.groups[g.idx()]) {
            // A newcomer waits for the tenant's clock like the members already there.
            let qp = &mut self.qps[qp_id.idx()];
            qp.next_avail = qp.next_avail.max(self.groups[g.idx()].pacer().next);
        }
        self.set_member_rates(g, false);
        g
    }

    /// Which group a QP belongs to (`None`: its own): its tenant's on its NIC under the
    /// tenant defense (unless it is on a line-rate start), else as the granularity says.
    fn group_key(&self, qp_id: QpId) -> Option<GroupKey> {
        let qp = &self.qps[qp_id.idx()];
        if self.cfg.defense == Defense::Tenant {
            return (qp.exempt_until == 0).then_some((qp.nic.0, TENANT_KEY | qp.tenant as u32));
        }
        match self.cfg.granularity {
            Granularity::PerQp => None,
            Granularity::PerDestination | Granularity::PerDestinationUnsplit => Some((qp.nic.0, qp.dip)),
            Granularity::PerPair => Some((qp.src.0, qp.dst.0)),
            Granularity::PerSl => Some((qp.nic.0, qp.pg as u32)),
        }
    }

    /// How long a shared group outlives its last QP.
    fn linger(&self) -> Time {
        match self.cfg.defense {
            Defense::None => self.cfg.cc_state_linger,
            Defense::Tenant => self.cfg.cc_state_linger.max(self.cfg.defense_params.linger),
        }
    }

    /// A QP completed: it leaves its group. The last one out retires a private group at
    /// once and a shared one after the linger time (`on_group_linger`).
    pub(in crate::sim) fn leave_group(&mut self, qp_id: QpId) {
        let linger = self.linger();
        let qp = &self.qps[qp_id.idx()];
        let (g, done) = (qp.cc_group, qp.snd_una);
        let grp = &mut self.groups[g.idx()];
        if let Some(pos) = grp.members.iter().position(|&q| q == qp_id) {
            grp.members.remove(pos);
        }
        grp.retired_bytes += done;
        if !grp.members.is_empty() {
            if grp.split {
                self.set_member_rates(g, false);
            }
        } else if grp.key.is_some() && linger > Time::ZERO {
            grp.linger_until = self.now + linger;
            self.queue.push(grp.linger_until, Event::GroupLinger(g));
        } else {
            self.retire_group(g);
        }
    }

    /// Moves a QP to the group its key now names (its line-rate start is over).
    pub(in crate::sim) fn rejoin_group(&mut self, qp_id: QpId) {
        self.leave_group(qp_id);
        let (src, dst) = (self.qps[qp_id.idx()].src, self.qps[qp_id.idx()].dst);
        let path = self.path_info(src, dst);
        self.join_group(qp_id, path);
    }

    /// The linger time of a group ran out: retire it if no QP joined since.
    pub(in crate::sim) fn on_group_linger(&mut self, g: CcGroupId) {
        let grp = &self.groups[g.idx()];
        if grp.alive && grp.members.is_empty() && grp.linger_until == self.now {
            self.retire_group(g);
        }
    }

    /// Forgets a group: its timers die, its key is free, its slot is reused.
    fn retire_group(&mut self, g: CcGroupId) {
        let grp = &mut self.groups[g.idx()];
        grp.alive = false;
        grp.timers.cancel_all();
        if self.dcqcn.any() {
            dcqcn_checks::forget(self.mech.idle_checks.as_deref_mut(), &mut self.mech.dcqcn_grids, grp);
        }
        if let Some(k) = grp.key {
            if self.group_of.get(&k) == Some(&g) {
                self.group_of.remove(&k);
            }
        }
        self.free_groups.push(g);
    }

    /// Base RTT and BDP of the first path from `src` to `dst` (at `src`'s NIC rate).
    pub(in crate::sim) fn path_rtt_bdp(&self, src: NodeId, dst: NodeId) -> (Time, u64) {
        let path = self.routes.first_path(&self.topo, src, dst);
        let rtt = crate::stats::ideal::base_rtt(&self.topo, &path, self.cfg.mtu as u64);
        (rtt, crate::sim::setup::bdp_bytes(rtt, self.topo.nic_rate(src)))
    }
}
