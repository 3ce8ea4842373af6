//! The NIC's transmit arbitration by tenant (`fabric.nic_arbitration = "tenant"`): the data
//! turns go round the tenants that have a QP ready to send, in cyclic order of tenant id,
//! and within a tenant round its QPs, each after the one the tenant sent from last. A
//! tenant's share of the NIC then no longer grows with its QP count: a tenant with 1 QP
//! beside one with 30 gets every other packet instead of one in 31. The reference's NIC
//! (and our default, `"qp"`) goes round the QPs alone.

use crate::fabric::NUM_PRIOS;
use crate::ids::QpId;
use crate::rnic::nic::{may_send, Pick};
use crate::rnic::Qp;
use crate::units::Time;

/// How a NIC shares its data turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NicArbitration {
    /// Per-packet round robin over the QPs (the reference's `RdmaEgressQueue`).
    #[default]
    Qp,
    /// Round robin over the tenants, then over each tenant's QPs.
    Tenant,
}

/// The tenant round robin's state on one NIC.
#[derive(Clone, Debug, Default)]
pub struct TenantRr {
    /// The tenant served last.
    last_tenant: u16,
    /// Per tenant id: the position in the NIC's QP list of the QP it sent from last
    /// (`usize::MAX`: none yet). Positions may go stale when finished QPs are dropped from
    /// the list; a tenant then resumes from about the same place, which costs no fairness
    /// between tenants.
    last_pos: Vec<usize>,
}

impl TenantRr {
    /// The next QP to send from among `list` (the NIC's QPs in arbitration order): two
    /// passes, one for the tenant and one for its QP.
    pub fn select(&mut self, list: &[QpId], qps: &[Qp], paused: &[bool; NUM_PRIOS], now: Time) -> Pick {
        let ready = |q: &Qp| may_send(q, paused);
        let mut wake = Time::MAX;
        let mut best: Option<u16> = None; // cyclic distance of the next tenant to serve
        for &id in list {
            let q = &qps[id.idx()];
            if !ready(q) {
                continue;
            }
            if q.next_avail > now {
                wake = wake.min(q.next_avail);
                continue;
            }
            let d = q.tenant.wrapping_sub(self.last_tenant).wrapping_sub(1);
            best = Some(best.map_or(d, |b| b.min(d)));
        }
        let Some(d) = best else {
            return if wake == Time::MAX { Pick::Idle } else { Pick::Wait(wake) };
        };
        let tenant = self.last_tenant.wrapping_add(1).wrapping_add(d);
        let t = tenant as usize;
        if self.last_pos.len() <= t {
            self.last_pos.resize(t + 1, usize::MAX);
        }
        let n = list.len();
        let start = if self.last_pos[t] == usize::MAX { n - 1 } else { self.last_pos[t] % n };
        let mut idx = start;
        for _ in 0..n {
            idx = if idx + 1 == n { 0 } else { idx + 1 };
            let q = &qps[list[idx].idx()];
            if q.tenant == tenant && ready(q) && q.next_avail <= now {
                self.last_tenant = tenant;
                self.last_pos[t] = idx;
                return Pick::Send(list[idx]);
            }
        }
        unreachable!("the first pass found a ready QP of tenant {tenant}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qp(tenant: u16) -> Qp {
        Qp { tenant, posted: 1_000_000, pg: 3, ..Qp::placeholder() }
    }

    fn picks(rr: &mut TenantRr, list: &[QpId], qps: &[Qp], n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| match rr.select(list, qps, &[false; NUM_PRIOS], Time::ZERO) {
                Pick::Send(q) => q.idx(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn one_qp_of_one_tenant_gets_every_other_turn_beside_three_of_another() {
        // Tenant 0 has QP 0; tenant 1 has QPs 1-3: turns alternate between the tenants, and
        // go round tenant 1's QPs.
        let qps = vec![qp(0), qp(1), qp(1), qp(1)];
        let list: Vec<QpId> = (0..4).map(QpId::new).collect();
        let mut rr = TenantRr::default();
        assert_eq!(picks(&mut rr, &list, &qps, 8), vec![1, 0, 2, 0, 3, 0, 1, 0]);
    }

    #[test]
    fn tenants_take_turns_in_id_order_and_a_waiting_one_is_skipped() {
        let mut qps = vec![qp(2), qp(0), qp(5), qp(0)];
        let list: Vec<QpId> = (0..4).map(QpId::new).collect();
        let mut rr = TenantRr::default();
        // After tenant 0 (the start): 2, 5, 0, 2, 5, 0 ...; tenant 0's two QPs alternate.
        assert_eq!(picks(&mut rr, &list, &qps, 6), vec![0, 2, 1, 0, 2, 3]);
        // Tenant 5 paced until later: the others share the turns, and with every QP
        // waiting the NIC sleeps until the earliest.
        qps[2].next_avail = Time::from_us(1);
        assert_eq!(picks(&mut rr, &list, &qps, 4), vec![0, 1, 0, 3]);
        for q in &mut qps {
            q.next_avail = Time::from_us(2);
        }
        qps[3].next_avail = Time::from_us(3);
        assert_eq!(rr.select(&list, &qps, &[false; NUM_PRIOS], Time::ZERO), Pick::Wait(Time::from_us(2)));
    }
}
