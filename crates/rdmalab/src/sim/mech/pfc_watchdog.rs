//! A switch's PFC watchdog (`[fabric.pfc_watchdog]`; docs/model/pfc.md, "PFC watchdog"): it
//! finds an egress queue that a PFC storm keeps paused and stops it from holding the fabric.
//!
//! The rule is SONiC's `pfcwd` (its design notes and `config pfcwd start`): a lossless queue
//! continuously paused by its link partner for `detection_time` is in a storm. The queue then
//! stops honouring PFC frames (they are counted, not applied) and, under the `drop` action,
//! discards what it holds and every packet bound for it until the storm ends; `alert` only
//! records the storm. A storm ends, and PFC is honoured again, once no PFC frame has arrived
//! for that queue during `restoration_time` (and, under `alert`, the queue is not paused). SONiC checks at polling instants
//! (`POLL_INTERVAL`); with `poll_interval` the detection waits for the first poll at or after
//! the deadline, without it the detection is exact.
//!
//! Hooks (reached only when `Mechanisms::pfc_watchdog` is `Some`):
//! - a PFC frame at a switch port (`sim/pfc.rs::on_pfc`): [`on_frame`] arms the detection
//!   timer when a queue becomes paused, and swallows the frames of a queue in a storm
//!   (`alert`: applies them);
//! - its timer (`Event::Mech`, `Timer::PfcWatchdog`): [`on_timer`] declares the storm or
//!   checks whether it has ended;
//! - the egress filter (`Mechanisms::egress_filter`, `drop` only): [`refuses`].
//!
//! The state is per (switch port, class) and lives with the port's switch; what changes the
//! port (un-pausing it, discarding its queue) goes out as actions.

use std::collections::HashMap;

use super::actions::{Action, SwitchView};
use super::Timer;
use crate::config::sim_config::{PfcWatchdogAction, PfcWatchdogConfig};
use crate::error::{Error, Result};
use crate::ids::PortId;
use crate::sim::{Event, SimConfig};
use crate::stats::table::{ColumnKind, Table, TableSchema};
use crate::stats::NamedCounts;
use crate::units::Time;

/// One storm: where, when its queue was paused, when the watchdog declared it and when it
/// ended.
#[derive(Clone, Copy, Debug)]
struct Storm {
    port: PortId,
    class: u8,
    node: u32,
    ifindex: u32,
    paused_at: Time,
    detected: Time,
    restored: Option<Time>,
    /// Packets discarded for it (`drop`): those queued at detection, then those refused.
    dropped: u64,
    /// PFC frames that arrived for the queue during the storm (not applied, but under `alert`).
    frames_in_storm: u64,
}

/// A watched queue's state.
#[derive(Clone, Copy, Debug, Default)]
struct Watch {
    /// Paused by a frame since this time (none: not paused, or in a storm).
    paused_at: Option<Time>,
    /// When the armed timer is due: a timer due at another time is stale.
    due: Time,
    /// Its storm (an index into `storms`), while one lasts.
    storm: Option<usize>,
    /// The last PFC frame for it during the storm.
    last_frame: Time,
}

/// Every watched queue of the switches of one simulation (or partition).
#[derive(Debug)]
pub(crate) struct PfcWatchdog {
    cfg: PfcWatchdogConfig,
    /// By `port * 8 + class`; a queue appears at its first PAUSE.
    watches: HashMap<u32, Watch>,
    storms: Vec<Storm>,
    /// Storms that have not ended: the egress filter looks nothing up while none does.
    active: u32,
}

/// `storms`: one row per storm (docs/model/pfc.md, "PFC watchdog").
pub(crate) const TABLE: TableSchema = TableSchema {
    name: "pfc_watchdog",
    columns: &[
        ("node", ColumnKind::U32),
        ("ifindex", ColumnKind::U32),
        ("class", ColumnKind::U16),
        ("paused_at_ps", ColumnKind::Ps),
        ("detected_ps", ColumnKind::Ps),
        ("restored_ns", ColumnKind::F64),
        ("dropped", ColumnKind::U64),
        ("frames_in_storm", ColumnKind::U64),
        ("port", ColumnKind::U32),
    ],
};

/// Refuses a watchdog that cannot act: on InfiniBand (credits, no PFC) or without PFC. A
/// scenario file or a Python scenario is refused earlier, at its line
/// (`scenario::fabric`); this is the check of a configuration built in code.
pub(super) fn check(cfg: &SimConfig) -> Result<()> {
    let Some(w) = &cfg.pfc_watchdog else { return Ok(()) };
    let f = "fabric.pfc_watchdog";
    if cfg.infiniband() {
        return Err(Error::scenario(f, "InfiniBand has no PFC (its links use credits)"));
    }
    if !cfg.any_pfc() {
        return Err(Error::scenario(f, "PFC is off (no class is lossless): nothing to watch"));
    }
    let zero = [
        ("detection_time", w.detection_time == Time::ZERO),
        ("restoration_time", w.restoration_time == Time::ZERO),
        ("poll_interval", w.poll_interval == Some(Time::ZERO)),
    ];
    if let Some((key, _)) = zero.iter().find(|(_, z)| *z) {
        return Err(Error::scenario(format!("{f}.{key}"), "must be positive"));
    }
    Ok(())
}

impl PfcWatchdog {
    pub(super) fn new(cfg: PfcWatchdogConfig) -> PfcWatchdog {
        PfcWatchdog { cfg, watches: HashMap::new(), storms: Vec::new(), active: 0 }
    }

    /// When a queue paused at `t` is found in a storm: `detection_time` later, or at the
    /// first poll at or after that.
    fn detect_at(&self, t: Time) -> Time {
        let deadline = t + self.cfg.detection_time;
        match self.cfg.poll_interval {
            None => deadline,
            Some(p) => Time(deadline.0.div_ceil(p.0) * p.0),
        }
    }
}

fn key(port: PortId, class: u8) -> u32 {
    port.0 * 8 + class as u32
}

/// A PAUSE (`pause`) or RESUME for `class` arrived at switch port `at`: true when the watchdog
/// swallows it (the queue is in a storm); else it arms the detection timer at a new pause.
pub(in crate::sim) fn on_frame(
    w: &mut PfcWatchdog,
    now: Time,
    at: PortId,
    class: u8,
    pause: bool,
    out: &mut Vec<Action>,
) -> bool {
    let detect = w.detect_at(now);
    let watch = w.watches.entry(key(at, class)).or_default();
    if let Some(s) = watch.storm {
        watch.last_frame = now;
        w.storms[s].frames_in_storm += 1;
        if w.cfg.action != PfcWatchdogAction::Alert {
            return true; // the queue no longer honours PFC
        }
    }
    match (pause, watch.paused_at) {
        _ if watch.storm.is_some() => {} // `alert`: applied, not watched again
        (true, None) => {
            watch.paused_at = Some(now);
            watch.due = detect;
            out.push(Action::Timer(detect, Event::Mech(Timer::PfcWatchdog { port: at, class })));
        }
        (false, _) => watch.paused_at = None,
        (true, Some(_)) => {}
    }
    false
}

/// The queue's timer: a storm found (the queue still paused since the same PAUSE), or a
/// storm's end checked.
pub(in crate::sim) fn on_timer(
    w: &mut PfcWatchdog,
    view: &SwitchView<'_>,
    port: PortId,
    class: u8,
    out: &mut Vec<Action>,
) {
    let now = view.now;
    let restoration = w.cfg.restoration_time;
    let Some(watch) = w.watches.get_mut(&key(port, class)) else { return };
    if watch.due != now {
        return; // stale: the pause it was armed for ended
    }
    match (watch.storm, watch.paused_at) {
        (None, Some(paused_at)) => {
            let tp = &view.topo.ports[port.idx()];
            let queued = view.ports[port.idx()].queued(class as usize, view.packets).count() as u64;
            let drop = w.cfg.action == PfcWatchdogAction::Drop;
            watch.storm = Some(w.storms.len());
            watch.paused_at = None;
            watch.last_frame = now;
            watch.due = now + restoration;
            w.storms.push(Storm {
                port,
                class,
                node: tp.node.0,
                ifindex: tp.ifindex as u32,
                paused_at,
                detected: now,
                restored: None,
                dropped: if drop { queued } else { 0 },
                frames_in_storm: 0,
            });
            w.active += 1;
            if drop {
                out.push(Action::DiscardClass { port, class }); // before the port may send again
            }
            if w.cfg.action != PfcWatchdogAction::Alert {
                out.push(Action::Unpause { port, class });
            }
            out.push(Action::Timer(now + restoration, Event::Mech(Timer::PfcWatchdog { port, class })));
        }
        (Some(s), _) => {
            // Over once no frame came for `restoration_time` and the queue is not paused
            // (it can be only under `alert`, which applies the frames); else look again.
            let quiet_until = watch.last_frame + restoration;
            if now >= quiet_until && !view.ports[port.idx()].paused[class as usize] {
                w.storms[s].restored = Some(now);
                watch.storm = None;
                w.active -= 1;
                return;
            }
            watch.due = if now >= quiet_until { now + restoration } else { quiet_until };
            out.push(Action::Timer(watch.due, Event::Mech(Timer::PfcWatchdog { port, class })));
        }
        (None, None) => {}
    }
}

/// The egress filter (`drop`): true when a packet of `class` bound for `egress` meets a storm.
pub(in crate::sim) fn refuses(w: &mut PfcWatchdog, egress: PortId, class: u8) -> bool {
    if w.active == 0 {
        return false;
    }
    let Some(s) = w.watches.get(&key(egress, class)).and_then(|x| x.storm) else { return false };
    w.storms[s].dropped += 1;
    true
}

/// Its counters, only where it runs (listed after the counts every run reports).
pub(super) fn counters(w: Option<&PfcWatchdog>, c: &mut NamedCounts) {
    let Some(w) = w else { return };
    c.push_conditional("pfcwd_storms", w.storms.len() as u64);
    c.push_conditional(
        "pfcwd_restorations".to_string(),
        w.storms.iter().filter(|s| s.restored.is_some()).count() as u64,
    );
    c.push_conditional("pfcwd_drops", w.storms.iter().map(|s| s.dropped).sum());
}

/// Its table of storms, where it runs.
pub(super) fn tables(w: Option<&PfcWatchdog>, out: &mut Vec<Table>) {
    let Some(w) = w else { return };
    let col = |f: &dyn Fn(&Storm) -> u64| w.storms.iter().map(f).collect::<Vec<u64>>();
    let restored = w.storms.iter().map(|s| s.restored.map_or(f64::NAN, |t| t.0 as f64 / 1000.0)).collect();
    out.push(
        Table::new(TABLE.name, &["detected_ps", "port"])
            .u64("node", col(&|s| s.node as u64))
            .u64("ifindex", col(&|s| s.ifindex as u64))
            .u64("class", col(&|s| s.class as u64))
            .u64("paused_at_ps", col(&|s| s.paused_at.0))
            .u64("detected_ps", col(&|s| s.detected.0))
            .f64("restored_ns", restored)
            .u64("dropped", col(&|s| s.dropped))
            .u64("frames_in_storm", col(&|s| s.frames_in_storm))
            .u64("port", col(&|s| s.port.0 as u64)),
    );
}
