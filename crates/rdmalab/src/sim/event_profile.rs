//! Events by kind, for finding what a long run spends its time on (cargo feature
//! `event-profile`, off by default: a build without it has neither the field nor the count,
//! so the event loop of every ordinary run is unchanged). Read with
//! `Simulation::events_by_kind`; `examples/event_profile.rs` prints it for a scenario.

use super::{Event, Simulation};

/// The kinds, in `Event`'s order.
const NAMES: [&str; 19] = [
    "FlowArrival",
    "TxDone",
    "Arrive",
    "NicWake",
    "Rto",
    "Sample",
    "CcTimer",
    "GroupLinger",
    "LinkDown",
    "LinkUp",
    "Reroute",
    "QlenMonitor",
    "App",
    "WqeDone",
    "IofdRetry",
    "CloseQp",
    "ReorderFlush",
    "Mech",
    "Dequeues",
];

/// Events run so far, by kind.
#[derive(Debug, Default)]
pub(super) struct EventProfile {
    counts: [u64; NAMES.len()],
}

impl EventProfile {
    pub(super) fn count(&mut self, ev: &Event) {
        self.counts[kind(ev)] += 1;
    }
}

fn kind(ev: &Event) -> usize {
    match ev {
        Event::FlowArrival => 0,
        Event::TxDone(_) => 1,
        Event::Arrive(_) => 2,
        Event::NicWake(_) => 3,
        Event::Rto(..) => 4,
        Event::Sample => 5,
        Event::CcTimer(..) => 6,
        Event::GroupLinger(_) => 7,
        Event::LinkDown(_) => 8,
        Event::LinkUp(_) => 9,
        Event::Reroute => 10,
        Event::QlenMonitor => 11,
        Event::App(..) => 12,
        Event::WqeDone(_) => 13,
        Event::IofdRetry(_) => 14,
        Event::CloseQp(_) => 15,
        Event::ReorderFlush(..) => 16,
        Event::Mech(_) => 17,
        Event::Dequeues(_) => 18,
    }
}

impl Simulation {
    /// (kind, events run) for every kind that ran at least once, in `Event`'s order.
    pub fn events_by_kind(&self) -> Vec<(&'static str, u64)> {
        NAMES.iter().zip(self.profile.counts).filter(|(_, n)| *n > 0).map(|(k, n)| (*k, n)).collect()
    }
}
