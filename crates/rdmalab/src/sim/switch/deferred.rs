//! The simulator's side of `mech::deferred_dequeues`: a switch port's next dequeue waits
//! without an event and runs, at its own time and key, when its switch is next touched,
//! when something reads every switch, or at its deadline.

use crate::ids::{PortId, SwitchId};
use crate::sim::{Event, Simulation};
use crate::units::Time;

impl Simulation {
    /// In the origin order, switch dequeues wait without events unless an egress mechanism,
    /// InfiniBand or PFC's pause timers act at a switch's send (a partition and a trace
    /// turn them off again: `make_partition`, `open_trace`).
    pub(in crate::sim) fn defer_switch_dequeues(&mut self) {
        let hooked = crate::sim::mech::special_egress(&self.cfg);
        if !self.cfg.deferred_dequeues || hooked || self.mech.ib.is_some() || self.mech.pfc_pause.is_some() {
            return;
        }
        let (switches, origin) = (self.mmus.len(), self.dequeues_origin());
        let d = crate::sim::mech::deferred_dequeues::DeferredDequeues::new(&self.ports, switches, origin);
        self.mech.deferred = Some(Box::new(d));
    }

    /// Switch port `port`, busy until its `tx_end` with packets queued, takes its next
    /// then: an event at its reserved key, or a dequeue that waits without one. Always
    /// inlined: a call of its own on every queued switch hop cost more than its body.
    #[inline(always)]
    pub(in crate::sim) fn schedule_switch_tx_done(&mut self, port: PortId) {
        let st = &self.ports[port.idx()];
        let (due, key) = st.tx_end;
        match self.mech.deferred.as_deref_mut() {
            Some(d) => d.defer(st.unit as usize, port, st.tx_end, &mut self.queue),
            None => self.queue.push_reserved(due, key, Event::TxDone(port)),
        }
    }

    /// Before a handler of switch `sw` at (`now`, the popped key), whose node is the queue's
    /// origin: its dequeues due before it, if any.
    #[inline(always)]
    pub(in crate::sim) fn catch_up_at_switch(&mut self, sw: usize) {
        if let Some(d) = self.mech.deferred.as_deref() {
            if d.may_be_due(sw, self.now) {
                self.catch_up_switch(sw, self.now, self.queue.popped_seq());
            }
        }
    }

    /// Runs the waiting dequeues of switch `sw` that come before (`now`, `key`), earliest
    /// first, each at its own time and key (the queue's origin must be the switch's node);
    /// the clock is left as it was. Returns when the last one ran (`Time::ZERO`: none ran).
    #[inline(never)]
    pub(in crate::sim) fn catch_up_switch(&mut self, sw: usize, now: Time, key: u64) -> Time {
        let (clock, real, popped) = (self.now, self.real_now, self.queue.popped_seq());
        let mut last = Time::ZERO;
        while let Some((t, k, port)) = self.mech.deferred.as_deref_mut().and_then(|d| d.take_before(sw, now, key)) {
            // Its deadline has not passed: whatever it pushes comes after the event being handled.
            debug_assert!(clock <= t + self.mech.deferred.as_deref().map_or(Time::ZERO, |d| d.margin(sw)));
            debug_assert_eq!(self.ports[port.idx()].tx_end, (t, k));
            (self.now, self.real_now) = (t, t);
            self.queue.set_popped_seq(k);
            self.ports[port.idx()].busy = false; // `on_tx_done` at a switch port
            self.switch_kick(port);
            last = t;
        }
        (self.now, self.real_now) = (clock, real);
        self.queue.set_popped_seq(popped);
        if let Some(d) = self.mech.deferred.as_deref_mut() {
            d.settle(sw);
        }
        last
    }

    /// Runs every switch's waiting dequeues that come before (`now`, `key`), for what reads
    /// every switch. Returns when the last one ran (`Time::ZERO`: none ran).
    #[cold]
    pub(in crate::sim) fn catch_up_switches(&mut self, now: Time, key: u64) -> Time {
        let origin = self.queue.origin();
        let (mut i, mut last) = (0, Time::ZERO);
        while let Some((d, &sw)) = self.mech.deferred.as_deref().and_then(|d| Some((d, d.switches_busy().get(i)?))) {
            let sw = sw as usize;
            if d.first_due(sw) > now {
                i += 1;
                continue;
            }
            self.queue.set_origin(d.node_of(sw).0);
            last = last.max(self.catch_up_switch(sw, now, key));
            // A switch left with nothing waiting leaves the list, another takes its place.
            let d = self.mech.deferred.as_deref().expect("deferred dequeues");
            if d.switches_busy().get(i) == Some(&(sw as u32)) {
                i += 1;
            }
        }
        self.queue.set_origin(origin);
        last
    }

    /// The clock moves to `last` if a dequeue run then came after every event so far (as
    /// its event would have moved it).
    #[inline]
    pub(in crate::sim) fn clock_after_dequeues(&mut self, last: Time) {
        self.now = self.now.max(last);
        self.real_now = self.real_now.max(last);
    }

    /// The deadline of switch `sw` (`Event::Dequeues`), popped at `t`: runs what waits
    /// there until then and arms the next deadline. The clock moves only as far as the
    /// dequeues run (a deadline is not an event of the modelled fabric).
    #[cold]
    pub(in crate::sim) fn on_dequeues_due(&mut self, t: Time, sw: SwitchId) {
        let Some(d) = self.mech.deferred.as_deref() else { return };
        self.queue.set_origin(d.node_of(sw.idx()).0);
        let last = self.catch_up_switch(sw.idx(), t, self.queue.popped_seq());
        self.clock_after_dequeues(last);
        if let Some(d) = self.mech.deferred.as_deref_mut() {
            d.deadline_ran(sw.idx(), t, &mut self.queue);
        }
    }

    /// Runs every dequeue that comes before (`now`, `key`) and moves the clock as their
    /// events would have; true if any ran.
    #[cold]
    pub(in crate::sim) fn dequeues_before(&mut self, now: Time, key: u64) -> bool {
        if self.mech.deferred.is_none() {
            return false;
        }
        let last = self.catch_up_switches(now, key);
        self.clock_after_dequeues(last);
        last != Time::ZERO
    }

    /// The earliest time a dequeue waits for (`Time::MAX`: none).
    #[cold]
    pub(in crate::sim) fn first_deferred_dequeue(&self) -> Time {
        let Some(d) = self.mech.deferred.as_deref() else { return Time::MAX };
        d.switches_busy().iter().map(|&sw| d.first_due(sw as usize)).min().unwrap_or(Time::MAX)
    }
}
