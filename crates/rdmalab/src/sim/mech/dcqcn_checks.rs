//! DCQCN's decrease checks that find no CNP, taken without events, in the
//! partition-independent order (`--threads N`).
//!
//! A group that has seen a CNP checks every 4 µs whether another came, for as long as it
//! has packets in the network. On a loaded fabric nearly all checks find none (cell 5 of
//! `lb-host-vs-switch`, Virtuoso's row: 62 M checks, 2 M cuts) and do nothing but re-arm:
//! the one thing such a check leaves behind is the tie key of the next, which in the origin
//! order is its host's counter at the check's place among that host's handlers. So once a
//! check finds no CNP, its successors wait in their host's *cycle* instead of the event
//! queue, and each takes its key from the host's counter when the host next uses it
//! ([`IdleChecks::catch_up`]: before any handler of the host, and before a flow arrival
//! admits at it). The key sequence is the one the events would have drawn, so every tie
//! the host's later events meet comes out as before.
//!
//! A cycle turns like a clock hand: the check taken is due again one interval later with
//! the host's newest key, which puts it behind every other (the cycle holds only checks due
//! within one interval of the last one taken), so the front is always the earliest. A
//! check becomes an event again, with the time and key it would have had, when it may do
//! something: a CNP reached its group (it will cut), or a hint says the group may have gone
//! quiet (it may park, `dcqcn_timers`). When nothing else is queued the earliest becomes an
//! event too, so that a run whose checks go on (a PFC deadlock, unacknowledged transports)
//! ends as the events would have ended it. The `dcqcn_shortcuts` tests compare whole
//! results with and without this.

use crate::cc::dcqcn::DECREASE_TIMER;
use crate::cc::{CcGroup, CcState};
use crate::engine::EventQueue;
use crate::ids::CcGroupId;
use crate::sim::mech::dcqcn_grids::TimerGrids;
use crate::sim::Event;
use crate::units::Time;

/// No entry.
const NONE: u32 = u32::MAX;

/// A decrease check without an event: when it is due and the key its event would have.
#[derive(Clone, Copy, Debug)]
struct Entry {
    due: Time,
    key: u64,
    group: CcGroupId,
    /// The host's cycle, in (due, key) order, circular.
    next: u32,
    prev: u32,
}

/// Every host's cycle of checks without events. All of a host's state is its own: its
/// cycle is touched only by its handlers and by drops of its packets (`hint_after_drop`).
#[derive(Debug)]
pub(crate) struct IdleChecks {
    /// DCQCN's decrease interval: a check taken is due again this much later.
    interval: Time,
    /// Per node: when its earliest check is due (`Time::MAX`: none), the one load a
    /// handler pays.
    head_due: Vec<Time>,
    /// Per node: its earliest check (`NONE`: none).
    head: Vec<u32>,
    /// The checks of every cycle, with free slots reused.
    entries: Vec<Entry>,
    free: Vec<u32>,
    /// Nodes whose cycle is not empty, and each node's place in that list (`NONE`: none),
    /// so that an empty queue looks only at them.
    busy: Vec<u32>,
    busy_at: Vec<u32>,
}

impl IdleChecks {
    /// Empty cycles for `nodes` nodes, checks `interval` apart.
    pub(crate) fn new(nodes: usize, interval: Time) -> IdleChecks {
        IdleChecks {
            interval,
            head_due: vec![Time::MAX; nodes],
            head: vec![NONE; nodes],
            entries: Vec::new(),
            free: Vec::new(),
            busy: Vec::new(),
            busy_at: vec![NONE; nodes],
        }
    }

    /// True if a check of `node` may be due before an event at `now`.
    #[inline(always)]
    pub(crate) fn may_be_due(&self, node: u32, now: Time) -> bool {
        now >= self.head_due[node as usize]
    }

    /// Takes every check of `node` that comes before the event (`now`, `key`): each draws
    /// the key of its next from the host's counter (the queue's, its origin set to `node`)
    /// and is due again an interval later. Returns when the last one taken was due (`Time::ZERO`: none).
    #[cold]
    pub(in crate::sim) fn catch_up(&mut self, node: u32, now: Time, key: u64, queue: &mut EventQueue<Event>) -> Time {
        let n = node as usize;
        let (mut i, mut last) = (self.head[n], Time::ZERO);
        while i != NONE {
            let e = &mut self.entries[i as usize];
            if (e.due, e.key) >= (now, key) {
                break;
            }
            last = e.due;
            e.due += self.interval;
            e.key = queue.reserve_seq();
            i = e.next; // the cycle turns: the check taken is now the last
        }
        self.head[n] = i;
        self.head_due[n] = if i == NONE { Time::MAX } else { self.entries[i as usize].due };
        last
    }

    /// The earliest time at or after `from` when a waiting check is due (`Time::MAX`: none
    /// waits). A check not yet taken recurs every interval from its due time. (For the
    /// watch, which runs seldom: it visits every waiting check.)
    pub(in crate::sim) fn first_due_from(&self, from: Time) -> Time {
        let d = self.interval.0;
        let mut first = Time::MAX;
        for &n in &self.busy {
            let head = self.head[n as usize];
            let mut i = head;
            loop {
                let e = &self.entries[i as usize];
                let at = if e.due >= from { e.due } else { Time(e.due.0 + (from.0 - e.due.0).div_ceil(d) * d) };
                first = first.min(at);
                i = e.next;
                if i == head {
                    break;
                }
            }
        }
        first
    }

    /// When the earliest waiting check is due (`Time::MAX`: none waits), once every cycle is
    /// caught up ([`catch_up_all`]): then each cycle's front is its earliest.
    pub(in crate::sim) fn earliest_due(&self) -> Time {
        self.busy.iter().map(|&n| self.head_due[n as usize]).min().unwrap_or(Time::MAX)
    }

    /// Puts group `g`'s next check, due at `due` with key `key` (the newest `node` has
    /// given), at the back of `node`'s cycle; returns its slot.
    fn insert(&mut self, node: u32, due: Time, key: u64, g: CcGroupId) -> u32 {
        let n = node as usize;
        let entry = Entry { due, key, group: g, next: NONE, prev: NONE };
        let i = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = entry;
                i
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as u32
            }
        };
        let head = self.head[n];
        if head == NONE {
            (self.entries[i as usize].next, self.entries[i as usize].prev) = (i, i);
            self.head[n] = i;
            self.head_due[n] = due;
            self.busy_at[n] = self.busy.len() as u32;
            self.busy.push(node);
        } else {
            let tail = self.entries[head as usize].prev;
            debug_assert!((self.entries[tail as usize].due, self.entries[tail as usize].key) < (due, key));
            (self.entries[i as usize].next, self.entries[i as usize].prev) = (head, tail);
            self.entries[tail as usize].next = i;
            self.entries[head as usize].prev = i;
        }
        i
    }

    /// Takes the check in slot `i` out of `node`'s cycle: its due time and key.
    fn remove(&mut self, node: u32, i: u32) -> (Time, u64) {
        let n = node as usize;
        let Entry { due, key, next, prev, .. } = self.entries[i as usize];
        self.free.push(i);
        if next == i {
            self.head[n] = NONE;
            self.head_due[n] = Time::MAX;
            let at = std::mem::replace(&mut self.busy_at[n], NONE) as usize;
            self.busy.swap_remove(at);
            if let Some(&moved) = self.busy.get(at) {
                self.busy_at[moved as usize] = at as u32;
            }
            return (due, key);
        }
        self.entries[prev as usize].next = next;
        self.entries[next as usize].prev = prev;
        if self.head[n] == i {
            self.head[n] = next;
            self.head_due[n] = self.entries[next as usize].due;
        }
        (due, key)
    }

    /// The node whose front check is the earliest of all, if any cycle holds one.
    fn earliest(&self) -> Option<u32> {
        let front = |&n: &u32| {
            let e = &self.entries[self.head[n as usize] as usize];
            (e.due, e.key)
        };
        self.busy.iter().copied().min_by_key(|n| front(n))
    }
}

/// The slot of group `group`'s check in its host's cycle, if it waits there.
fn slot(group: &CcGroup) -> Option<u32> {
    match &group.state {
        CcState::Dcqcn(s) if s.virtual_slot != NONE => Some(s.virtual_slot),
        _ => None,
    }
}

/// Takes group `group`'s check out of its host's cycle, if it waits there: its due time
/// and key.
fn take_out(checks: &mut IdleChecks, group: &mut CcGroup) -> Option<(Time, u64)> {
    let CcState::Dcqcn(s) = &mut group.state else { return None };
    if s.virtual_slot == NONE {
        return None;
    }
    let slot = std::mem::replace(&mut s.virtual_slot, NONE);
    Some(checks.remove(group.owner, slot))
}

/// A check of group `g` just ran and armed the next. Unless a hint is pending (the next
/// may park, so it stays an event), the next waits in the owner's cycle with the key its
/// event would take now, drawn in the same place (before the other timers' pushes).
#[inline(never)]
pub(in crate::sim) fn after_check(
    checks: Option<&mut IdleChecks>,
    g: CcGroupId,
    group: &mut CcGroup,
    queue: &mut EventQueue<Event>,
) {
    let (Some(checks), CcState::Dcqcn(s), due) = (checks, &mut group.state, group.timers.due[DECREASE_TIMER]) else {
        return;
    };
    if due == Time::MAX || s.maybe_quiet {
        return;
    }
    debug_assert_eq!(s.virtual_slot, NONE);
    group.timers.due[DECREASE_TIMER] = Time::MAX;
    group.timers.dirty &= !(1 << DECREASE_TIMER);
    s.virtual_slot = checks.insert(group.owner, due, queue.reserve_seq(), g);
}

/// Group `g`'s check, if it waits in a cycle, becomes an event again with the time and key
/// it would have had (a CNP or a quiet hint came: it may act). The owner's cycle must be
/// caught up to now (the caller is the owner's handler, or `hint_after_drop`).
pub(in crate::sim) fn wake(checks: &mut IdleChecks, g: CcGroupId, group: &mut CcGroup, queue: &mut EventQueue<Event>) {
    let Some((due, key)) = take_out(checks, group) else { return };
    group.timers.due[DECREASE_TIMER] = due;
    queue.push_reserved(due, key, Event::CcTimer(g, DECREASE_TIMER as u8));
}

/// Group `g` is retired: its check, if it waits in a cycle, is gone with its timers.
#[inline(never)]
pub(in crate::sim) fn forget(checks: Option<&mut IdleChecks>, grids: &mut TimerGrids, group: &mut CcGroup) {
    crate::sim::mech::dcqcn_timers::on_retire(group, grids);
    if let Some(checks) = checks {
        take_out(checks, group);
    }
}

/// A drop left a member of group `g` with nothing in the network, in a handler at another
/// node (the event (`now`, `key`)): the owner's cycle is caught up under the owner's counter,
/// as its own next handler would, and the check wakes.
pub(in crate::sim) fn hint_after_drop(
    checks: &mut IdleChecks,
    g: CcGroupId,
    group: &mut CcGroup,
    queue: &mut EventQueue<Event>,
    now: Time,
    key: u64,
) {
    if slot(group).is_none() {
        return;
    }
    let before = queue.origin();
    queue.set_origin(group.owner);
    checks.catch_up(group.owner, now, key, queue);
    queue.set_origin(before);
    wake(checks, g, group, queue);
}

/// An ACK reached group `g` (its owner's cycle caught up): a CNP, or a hint that the group
/// may be quiet, wakes its check; the group's first CNP (`fresh`: it had seen none) starts
/// its alpha ticks, which are never events in this order.
#[inline(never)]
pub(in crate::sim) fn after_ack(
    checks: Option<&mut IdleChecks>,
    grids: &mut TimerGrids,
    g: CcGroupId,
    group: &mut CcGroup,
    queue: &mut EventQueue<Event>,
    cnp: bool,
    fresh: bool,
) {
    let CcState::Dcqcn(s) = &group.state else { return };
    if fresh && s.lazy_alpha && !s.first_cnp {
        grids.alpha_leaves_queue(s.parked);
    }
    if let (Some(checks), true) = (checks, s.virtual_slot != NONE && (cnp || s.maybe_quiet)) {
        wake(checks, g, group, queue);
    }
}

/// Takes every waiting check due before (`now`, `key`), each at its host's counter: right
/// when no handler of any host comes before that point any more (the queue is empty, a
/// window or the run ends there). Returns when the last one taken was due (`Time::ZERO`:
/// none), for the run's clock: one simulation would have run that event last.
pub(in crate::sim) fn catch_up_all(
    checks: &mut IdleChecks,
    queue: &mut EventQueue<Event>,
    now: Time,
    key: u64,
) -> Time {
    if checks.busy.is_empty() {
        return Time::ZERO;
    }
    let (before, mut last) = (queue.origin(), Time::ZERO);
    for k in 0..checks.busy.len() {
        let node = checks.busy[k];
        queue.set_origin(node);
        last = last.max(checks.catch_up(node, now, key, queue));
    }
    queue.set_origin(before);
    last
}

/// Nothing else is queued (the last event was (`now`, `key`)): the checks due before it
/// are taken, and the earliest left becomes an event, as the queue would have held it.
/// False if no cycle holds a check.
pub(in crate::sim) fn when_queue_empty(
    checks: &mut IdleChecks,
    groups: &mut [CcGroup],
    queue: &mut EventQueue<Event>,
    now: Time,
    key: u64,
) -> bool {
    if checks.busy.is_empty() {
        return false;
    }
    catch_up_all(checks, queue, now, key);
    let node = checks.earliest().expect("a cycle holds a check");
    let g = checks.entries[checks.head[node as usize] as usize].group;
    wake(checks, g, &mut groups[g.idx()], queue);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes the checks of `node` before (`now`, `key`), their keys from `queue`'s counter.
    fn take(c: &mut IdleChecks, node: u32, now: u64, key: u64, queue: &mut EventQueue<Event>) -> Time {
        c.catch_up(node, Time(now), key, queue)
    }

    #[test]
    fn a_cycle_turns_in_due_order_and_keeps_its_hosts_apart() {
        let mut c = IdleChecks::new(3, Time(4_000));
        let g = CcGroupId::new;
        let a = c.insert(1, Time(4_001), 10, g(0));
        c.insert(1, Time(5_500), 11, g(1));
        c.insert(2, Time(4_500), 12, g(2));
        assert_eq!((c.head_due[0], c.head_due[1], c.head_due[2]), (Time::MAX, Time(4_001), Time(4_500)));
        assert!(!c.may_be_due(1, Time(4_000)) && c.may_be_due(1, Time(4_001)));
        // An event at 4,001 with a key below the check's comes first: nothing is taken.
        let mut queue = EventQueue::new();
        (0..101).for_each(|_| {
            queue.reserve_seq();
        });
        assert_eq!(take(&mut c, 1, 4_001, 9, &mut queue), Time::ZERO);
        // Past both of node 1's checks and two turns of the first: it is taken at 4,001
        // (key 101) and 8,001 (key 103), the second at 5,500 (key 102); host 2's waits.
        assert_eq!(take(&mut c, 1, 9_000, 0, &mut queue), Time(8_001));
        assert_eq!(queue.reserve_seq(), 104);
        let front = c.entries[c.head[1] as usize];
        assert_eq!((front.due, front.key, front.group), (Time(9_500), 102, g(1)));
        assert_eq!(c.entries[a as usize].due, Time(12_001));
        assert_eq!(c.entries[a as usize].key, 103);
        assert_eq!(c.head_due[2], Time(4_500));
        // From 10,000: node 1's 12,001, before its 13,500 and host 2's 12,500 (not yet taken,
        // it recurs from 4,500).
        assert_eq!(c.first_due_from(Time(10_000)), Time(12_001));
        assert_eq!(c.first_due_from(Time(12_002)), Time(12_500));
        // The earliest front of all is host 2's; removing the last of a cycle empties it.
        assert_eq!(c.earliest(), Some(2));
        let second = c.head[1];
        assert_eq!(c.remove(1, second), (Time(9_500), 102));
        assert_eq!((c.head[1], c.head_due[1]), (a, Time(12_001)));
        c.remove(1, a);
        assert_eq!((c.head[1], c.head_due[1], c.busy.as_slice()), (NONE, Time::MAX, &[2][..]));
        // Freed slots are reused.
        assert_eq!(c.insert(0, Time(1), 1, g(3)), a);
    }
}
