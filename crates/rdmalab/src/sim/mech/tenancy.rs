//! The tenant defense's hooks in the sender (the CC-attack paper's defense, ours: docs/attacks.md):
//! under `defense = "tenant"` a tenant's QPs on one NIC share one CC state and one pacing
//! clock (`tenancy::pacing`), and a new QP may take a private line-rate start from its
//! (NIC, tenant) budget. Reached from `host_cc` only when the defense is on; each hook is
//! handed the state it touches, never the simulation.

use crate::cc::{CcGroup, CcState};
use crate::engine::EventQueue;
use crate::fabric::IntHeader;
use crate::ids::NodeId;
use crate::rnic::{Nic, Qp};
use crate::sim::Event;
use crate::sim::SimConfig;
use crate::tenancy::{Defense, DefenseParams, StartBudget};
use crate::units::{Rate, Time, TimingModel};

/// Hook "CC group rate applied" (HPCC's `ChangeRate` for a tenant state `grp`): the
/// pending gap of its last packet is re-timed at the new rate, for every member, and the
/// NIC woken earlier if needed (pushed on `queue`).
pub(in crate::sim) fn retime_tenant_state(
    timing: TimingModel,
    now: Time,
    grp: &mut CcGroup,
    qps: &mut [Qp],
    nics: &mut [Nic],
    queue: &mut EventQueue<Event>,
) {
    let Some(&first) = grp.members.first() else { return };
    if grp.pacer().wire == 0 {
        return; // nothing sent yet
    }
    let gap = timing.tx_time(grp.rate.max(Rate(1)), grp.pacer().wire as u64);
    let next = grp.pacer_mut().retime(gap);
    for &m in &grp.members {
        qps[m.idx()].next_avail = next;
        nics[qps[m.idx()].nic.idx()].pacing_moved(&qps[m.idx()]);
    }
    let nic_idx = qps[first.idx()].nic;
    let nic = &mut nics[nic_idx.idx()];
    if nic.wake_at != Time::MAX && next < nic.wake_at {
        let at = next.max(now);
        nic.wake_at = at;
        queue.push(at, Event::NicWake(nic_idx));
    }
}

/// Hook "sender, QP opened" (under a defense): a new QP whose first `min(size, bdp)` bytes
/// fit in its (NIC, tenant) budget (`budgets`: its NIC's, by tenant; `nic_rate`: that NIC's
/// line rate) sends them on a private line-rate state (`join_group` then keys it alone).
pub(in crate::sim) fn grant_line_rate_start(
    p: &DefenseParams,
    now: Time,
    nic_rate: Rate,
    budgets: &mut Vec<StartBudget>,
    qp: &mut Qp,
    bdp: u64,
    first_size: u64,
) {
    let want = first_size.min(bdp).max(1);
    let refill = crate::cc::scale(nic_rate, p.start_fraction);
    let tenant = qp.tenant as usize;
    if tenant >= budgets.len() {
        budgets.resize(tenant + 1, StartBudget::default());
    }
    if budgets[tenant].try_take(now, want, refill, p.burst_bdps * bdp) {
        qp.exempt_until = want;
    }
}

/// Hook "sender, line-rate start over": the QP sent the bytes of its line-rate start; the
/// caller moves it to its tenant's state (`Simulation::rejoin_group`).
#[cold]
pub(in crate::sim) fn end_line_rate_start(qp: &mut Qp) {
    qp.exempt_until = 0;
}

/// The first ACK of a tenant's HPCC state for a packet sent after a pause (no member had
/// data, `tenancy::pacing`): a sample from it would span the pause, measure only the
/// others' traffic and read it as room for the tenant's rate (a staggered tenant idle
/// between chunks raised its rate at the start of every chunk, e.g. u = 0.88: 84 -> 91
/// Gb/s). It only records the hops again, as a new QP's first ACK does; rate, EWMA and
/// stage stay.
pub(in crate::sim) fn forget_int_baselines(grp: &mut CcGroup) {
    if let CcState::Hpcc(state) = &mut grp.state {
        state.last_update_seq = 0;
        grp.paths.clear();
    }
}

/// What `swap_path_int` did.
pub(in crate::sim) enum PathInt {
    /// The member's records are now the group's (swap again after `on_ack`).
    Swapped,
    /// The member had none: `int` is stored as its baseline; `run` if the group itself
    /// still needs its first ACK.
    Baseline { run: bool },
}

/// A tenant's HPCC state spans destinations, so it keeps the last INT records per
/// destination: utilisation is computed between two stamps of the same links (members to
/// one destination are taken to share its path, as in the dumbbell and as ECMP does for
/// most of a fat tree's hops). The destination's records are swapped with the group's
/// around `on_ack`.
pub(in crate::sim) fn swap_path_int(dst: NodeId, grp: &mut CcGroup, int: Option<&IntHeader>) -> PathInt {
    let CcState::Hpcc(state) = &mut grp.state else { return PathInt::Baseline { run: true } };
    match grp.paths.iter_mut().find(|(d, _)| *d == dst) {
        Some((_, hops)) => {
            std::mem::swap(&mut state.hops, hops);
            PathInt::Swapped
        }
        None => {
            if let Some(ih) = int {
                grp.paths.push((dst, ih.hops));
            }
            PathInt::Baseline { run: state.last_update_seq == 0 }
        }
    }
}

/// Whether `grp` is a tenant state whose members share one pacing clock
/// (`tenancy::pacing`): the tenant defense's shared states, when rates pace at all.
pub(in crate::sim) fn tenant_paced(cfg: &SimConfig, grp: &CcGroup) -> bool {
    cfg.defense == Defense::Tenant && cfg.rate_bound && grp.key.is_some()
}

/// Hook "sender, per data packet sent" (under `defense != none`): the QP's group `grp` sent
/// a packet of `wire` bytes. If it is a tenant state, every member waits that packet's time
/// at the state's rate (one clock per tenant state instead of one per QP at rate / n), and
/// the state notes whether it still has data (a pause, see `forget_int_baselines`).
pub(in crate::sim) fn on_packet_sent(
    cfg: &SimConfig,
    now: Time,
    grp: &mut CcGroup,
    qps: &mut [Qp],
    nics: &mut [Nic],
    wire: u32,
) {
    if !tenant_paced(cfg, grp) {
        return; // a line-rate start keeps its own clock
    }
    let more = grp.members.iter().any(|&m| qps[m.idx()].has_data());
    let gap = cfg.timing.tx_time(grp.rate.max(Rate(1)), wire as u64);
    let next = grp.pacer_mut().sent(now, wire, gap, more);
    for &m in &grp.members {
        qps[m.idx()].next_avail = next; // earlier for some members: their NIC is told
        nics[qps[m.idx()].nic.idx()].pacing_moved(&qps[m.idx()]);
    }
}
