//! PAUSE frames that carry a pause time (`[fabric.pfc_pause]`; docs/model/pfc.md, "PFC pause
//! time"), as IEEE 802.1Qbb's do: a PFC frame gives each priority a time in quanta of 512 bit
//! times; the paused transmitter resumes when that time runs out or at a frame with time 0
//! (a RESUME). A sender whose queue stays over XOFF sends its PAUSE again before the time runs
//! out (Intel's Ethernet MACs: the "pause threshold" of the IXF1104, the "XOFF request hold
//! quanta" of the 40G MAC IP), and a lost RESUME costs at most one pause time.
//!
//! Without it (the reference simulator's model) a PAUSE holds until its RESUME: on a lossy
//! link a lost RESUME pauses the port for good.
//!
//! Hooks (reached only when `Mechanisms::pfc_pause` is `Some`):
//! - a PFC frame sent (`sim/pfc.rs::send_pfc`): [`on_sent`] arms the sender's refresh after a
//!   PAUSE and forgets it after a RESUME;
//! - a PFC frame arriving (`sim/pfc.rs::on_pfc`): [`on_frame`] arms the expiry of the pause;
//! - its timers (`Event::Mech`, `Timer::PauseRefresh`, `Timer::PauseExpiry`): [`on_refresh`]
//!   sends the PAUSE again (`Action::Pfc`), [`on_expire`] resumes the transmitter
//!   (`Action::PauseExpired`).
//!
//! The state is per (port, class) and belongs to the port's node: the sender's refresh to the
//! port that sent the PAUSE, the expiry to the port it paused.

use std::collections::HashMap;

use super::actions::{Action, SwitchView};
use super::Timer;
use crate::config::sim_config::PfcPauseConfig;
use crate::ids::PortId;
use crate::sim::Event;
use crate::stats::NamedCounts;
use crate::units::{Rate, Time};

/// One (port, class): its pending timers' times (`Time::MAX`: none; a timer due at another
/// time is stale).
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Sender side: when this port sends its PAUSE again, while it holds its upstream paused.
    refresh_at: Time,
    /// Receiver side: when the pause this port's transmitter obeys runs out.
    expires_at: Time,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot { refresh_at: Time::MAX, expires_at: Time::MAX }
    }
}

/// Every port's pause timers of one simulation (or partition).
#[derive(Debug)]
pub(crate) struct PfcPause {
    cfg: PfcPauseConfig,
    /// By `port * 8 + class`; a slot appears at its port's first PFC frame.
    slots: HashMap<u32, Slot>,
    /// PAUSE frames sent again by a refresh.
    refreshes: u64,
    /// Pauses that ran out without a RESUME.
    expiries: u64,
}

fn key(port: PortId, class: u8) -> u32 {
    port.0 * 8 + class as u32
}

/// `quanta` of 512 bit times at `rate`.
pub(crate) fn quanta_time(quanta: u16, rate: Rate) -> Time {
    rate.tx_time(u64::from(quanta) * 64)
}

impl PfcPause {
    pub(crate) fn new(cfg: PfcPauseConfig) -> PfcPause {
        PfcPause { cfg, slots: HashMap::new(), refreshes: 0, expiries: 0 }
    }
}

/// A PFC frame for `class` left `port` (a link of `rate`): after a PAUSE its refresh is due
/// `refresh_quanta` later; after a RESUME none is.
pub(in crate::sim) fn on_sent(
    p: &mut PfcPause,
    now: Time,
    port: PortId,
    class: u8,
    pause: bool,
    rate: Rate,
    out: &mut Vec<Action>,
) {
    let after = quanta_time(p.cfg.refresh_quanta, rate);
    let slot = p.slots.entry(key(port, class)).or_default();
    arm(&mut slot.refresh_at, pause.then_some(now + after), Timer::PauseRefresh { port, class }, out);
}

/// A PFC frame for `class` arrived at `port` (a link of `rate`): a PAUSE holds its
/// transmitter `quanta` from now (a later PAUSE moves the end); a RESUME ends it.
pub(in crate::sim) fn on_frame(
    p: &mut PfcPause,
    now: Time,
    port: PortId,
    class: u8,
    pause: bool,
    rate: Rate,
    out: &mut Vec<Action>,
) {
    let after = quanta_time(p.cfg.quanta, rate);
    let slot = p.slots.entry(key(port, class)).or_default();
    arm(&mut slot.expires_at, pause.then_some(now + after), Timer::PauseExpiry { port, class }, out);
}

/// Sets a slot's pending time to `at` and schedules `timer` then, or (`None`: a RESUME)
/// leaves none pending; a timer already scheduled for another time is then stale.
fn arm(due: &mut Time, at: Option<Time>, timer: Timer, out: &mut Vec<Action>) {
    *due = at.unwrap_or(Time::MAX);
    if let Some(at) = at {
        out.push(Action::Timer(at, Event::Mech(timer)));
    }
}

/// The refresh timer of (`port`, `class`): unless a RESUME or a later PAUSE superseded it,
/// the PAUSE goes out again (and `on_sent` arms the next refresh).
pub(super) fn on_refresh(p: &mut PfcPause, view: &SwitchView<'_>, port: PortId, class: u8, out: &mut Vec<Action>) {
    if p.slots.get(&key(port, class)).is_some_and(|s| s.refresh_at == view.now) {
        p.refreshes += 1;
        out.push(Action::Pfc { port, class });
    }
}

/// The expiry timer of (`port`, `class`): unless a RESUME or a later PAUSE superseded it, the
/// transmitter resumes as if its RESUME had arrived.
pub(super) fn on_expire(p: &mut PfcPause, view: &SwitchView<'_>, port: PortId, class: u8, out: &mut Vec<Action>) {
    let Some(slot) = p.slots.get_mut(&key(port, class)) else { return };
    if slot.expires_at != view.now {
        return;
    }
    slot.expires_at = Time::MAX;
    if view.ports[port.idx()].paused[class as usize] {
        p.expiries += 1;
        out.push(Action::PauseExpired { port, class });
    }
}

/// Its counts, where it runs.
pub(super) fn counters(p: Option<&PfcPause>, c: &mut NamedCounts) {
    let Some(p) = p else { return };
    c.push_conditional("pfc_pause_refreshes", p.refreshes);
    c.push_conditional("pfc_pause_expiries", p.expiries);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantum_is_512_bit_times() {
        // 65,535 quanta at 100 Gb/s: 65,535 x 512 / 1e11 s = 335.5392 us; at 25 Gb/s, 4x.
        assert_eq!(quanta_time(u16::MAX, Rate::gbps(100)), Time(335_539_200));
        assert_eq!(quanta_time(u16::MAX, Rate::gbps(25)), Time(4 * 335_539_200));
        assert_eq!(quanta_time(1, Rate::gbps(100)), Time(5_120));
    }

    #[test]
    fn a_resume_or_a_later_pause_makes_a_pending_timer_stale() {
        let cfg = PfcPauseConfig { quanta: 1000, refresh_quanta: 500 };
        let (mut p, mut out) = (PfcPause::new(cfg), Vec::new());
        let (port, rate) = (PortId(3), Rate::gbps(100));
        on_frame(&mut p, Time(0), port, 2, true, rate, &mut out);
        on_frame(&mut p, Time(1_000), port, 2, true, rate, &mut out);
        let due: Vec<Time> =
            out.iter().filter_map(|a| if let Action::Timer(t, _) = a { Some(*t) } else { None }).collect();
        assert_eq!(due, vec![Time(5_120_000), Time(5_121_000)]);
        assert_eq!(p.slots[&key(port, 2)].expires_at, Time(5_121_000)); // the first is stale
        on_frame(&mut p, Time(2_000), port, 2, false, rate, &mut out);
        assert_eq!(p.slots[&key(port, 2)].expires_at, Time::MAX);
        on_sent(&mut p, Time(0), port, 2, true, rate, &mut out);
        assert_eq!(p.slots[&key(port, 2)].refresh_at, Time(2_560_000));
        on_sent(&mut p, Time(10), port, 2, false, rate, &mut out);
        assert_eq!(p.slots[&key(port, 2)].refresh_at, Time::MAX);
    }
}
