//! DCQCN's timers where they need not be events. Every group that has seen a
//! CNP ticks alpha each microsecond and checks for a cut every four, to the end of the run:
//! with Virtuoso's ~1,000 QPs a host, each its own group, those ticks were most of a run's
//! events. Three shortcuts, each changing no result (`docs/model/time-and-events.md`, "DCQCN's timers on
//! a quiet QP"; the `dcqcn_shortcuts` test runs with them and without):
//!
//! - in the reference's FIFO order, a group with nothing in the network parks its alpha
//!   timer (`DcqcnState::park_alpha`), and a send runs the ticks it missed;
//! - in the partition-independent order (`--threads N`), alpha ticks are never events: they
//!   run when a CNP or a cut next touches alpha (`DcqcnState::can_tick_lazily`);
//! - in either, a quiet group's decrease check parks with the tie key its event would have
//!   taken, and a send pushes it back (`DcqcnState::park_decrease`);
//! - in the partition-independent order, a busy group's checks that find no CNP are not
//!   events either (`mech::dcqcn_checks`).
//!
//! The state is the sending host's (its CC groups and QPs); the simulator calls these from
//! `sim/host/cc.rs` and `sim/host/tx.rs`.

use crate::cc::dcqcn::{DcqcnState, DECREASE_TIMER};
use crate::cc::{CcConfig, CcGroup, CcState};
use crate::config::SimConfig;
use crate::rnic::Qp;
use crate::sim::mech::dcqcn_grids::TimerGrids;
use crate::units::Time;

/// Which of the shortcuts a run takes (all off: every tick is an event).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DcqcnShortcuts {
    /// The alpha timer parks in a group with nothing in the network (FIFO order).
    pub parks_alpha: bool,
    /// Alpha ticks are never events (the origin order).
    pub lazy_alpha: bool,
    /// The decrease check of a quiet group parks.
    pub parks_decrease: bool,
}

impl DcqcnShortcuts {
    /// Decrease checks that find no CNP wait in their host's cycle (`mech::dcqcn_checks`):
    /// wherever alpha ticks are lazy, i.e. in the origin order.
    #[inline]
    pub(crate) fn virtual_checks(&self) -> bool {
        self.lazy_alpha
    }

    /// Whether any timer may run without events (then `mech::dcqcn_grids` keeps its times).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.parks_alpha || self.lazy_alpha || self.parks_decrease
    }
}

impl DcqcnShortcuts {
    /// The shortcuts valid for `cfg` where no ACK comes back sooner than `min_ack` after its
    /// packet is sent and no round trip is shorter than `min_rtt`; `origin_order`: the run
    /// uses the partition-independent event order.
    pub(crate) fn choose(cfg: &SimConfig, min_ack: Time, min_rtt: Time, origin_order: bool) -> DcqcnShortcuts {
        let CcConfig::Dcqcn(p) = &cfg.cc else { return DcqcnShortcuts::default() };
        if !cfg.dcqcn_shortcuts {
            return DcqcnShortcuts::default();
        }
        let lazy_alpha = origin_order && DcqcnState::can_tick_lazily(p);
        let parks_alpha = !lazy_alpha && DcqcnState::can_park(p, min_ack);
        let parks_decrease = (lazy_alpha || parks_alpha) && DcqcnState::can_park_decrease(p, min_rtt);
        DcqcnShortcuts { parks_alpha, lazy_alpha, parks_decrease }
    }

    /// Whether the simulator keeps the hints the parking reads: an ACK or a drop that leaves
    /// a QP with nothing in the network, a send from such a QP.
    #[inline]
    pub(crate) fn hints(&self) -> bool {
        self.parks_alpha || self.parks_decrease
    }
}

/// A new group's DCQCN state takes lazy ticks if the run does.
pub(crate) fn on_new_group(s: DcqcnShortcuts, group: &mut CcGroup) {
    if let (true, CcState::Dcqcn(st)) = (s.lazy_alpha, &mut group.state) {
        st.tick_lazily();
    }
}

/// A member of `group` has nothing in the network any more (after an ACK or a drop): the
/// group's next alpha tick (or, with lazy ticks, its next decrease check) looks whether it
/// is quiet.
#[inline]
pub(crate) fn hint_quiet(group: &mut CcGroup) {
    if let CcState::Dcqcn(s) = &mut group.state {
        s.maybe_quiet = true;
    }
}

/// True once after a hint, if no member of `group` has a packet (or its ACK) in the network.
/// Members are loaded only after a hint, so a busy group's timer costs no load of its QPs.
fn quiet_now(s: &mut DcqcnState, members: &[crate::ids::QpId], qps: &[Qp]) -> bool {
    std::mem::take(&mut s.maybe_quiet) && members.iter().all(|q| qps[q.idx()].in_flight == 0)
}

/// An alpha tick just re-armed the timer (FIFO order): it parks if the group is quiet, as
/// then no CNP can come before a member sends again (`DcqcnState::park_alpha`).
pub(crate) fn after_alpha_tick(group: &mut CcGroup, qps: &[Qp], grids: &mut TimerGrids) {
    let CcState::Dcqcn(s) = &mut group.state else { return };
    if quiet_now(s, &group.members, qps) {
        s.park_alpha(&mut group.timers);
        grids.alpha_leaves_queue(s.parked);
    }
}

/// A decrease check that found no CNP just re-armed itself: in a quiet group (its alpha
/// timer parked, or with lazy ticks the members looked at after a hint) the next check
/// parks with the tie key `key()` gives now, the one its event would have taken.
pub(crate) fn after_idle_check(group: &mut CcGroup, qps: &[Qp], grids: &mut TimerGrids, key: impl FnOnce() -> u64) {
    let CcState::Dcqcn(s) = &mut group.state else { return };
    let quiet = if s.lazy_alpha { quiet_now(s, &group.members, qps) } else { s.parked != Time::MAX };
    if quiet {
        s.park_decrease(&mut group.timers, key());
        grids.checks_leave_queue(s.decrease_parked);
    }
}

/// `group` is retired: its timers without events end with it.
pub(crate) fn on_retire(group: &CcGroup, grids: &mut TimerGrids) {
    let CcState::Dcqcn(s) = &group.state else { return };
    if s.parked != Time::MAX && (!s.lazy_alpha || !s.first_cnp) {
        grids.alpha_returns(s.parked);
    }
    if s.decrease_parked != Time::MAX {
        grids.checks_return(s.decrease_parked);
    }
}

/// A member of `group` sends with nothing of the group in the network, at `now`: parked
/// alpha ticks run and the timer is armed again; a parked decrease check comes back. Returns
/// the check's event to push with its own reserved key (time, key), if it was not yet due.
pub(crate) fn on_quiet_send(
    cc: &CcConfig,
    group: &mut CcGroup,
    now: Time,
    grids: &mut TimerGrids,
) -> Option<(Time, u64)> {
    let (CcConfig::Dcqcn(p), CcState::Dcqcn(s)) = (cc, &mut group.state) else { return None };
    if !group.alive || (s.parked == Time::MAX && s.decrease_parked == Time::MAX) {
        return None;
    }
    if s.parked != Time::MAX && !s.lazy_alpha {
        grids.alpha_returns(s.parked);
    }
    if s.decrease_parked != Time::MAX {
        grids.checks_return(s.decrease_parked);
    }
    s.unpark_alpha(p, &mut group.timers, now);
    let key = s.unpark_decrease(p, &mut group.timers, now)?;
    Some((group.timers.due[DECREASE_TIMER], key))
}
