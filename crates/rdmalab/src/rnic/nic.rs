//! The NIC's transmit arbitration.
//!
//! Like the reference's `RdmaEgressQueue`: ACK/NACKs the host generates go first, then
//! data by per-packet round robin over the QPs, starting after the last one served. A QP
//! is eligible when its priority is not paused, it has bytes left, its window has room and
//! its pacing time has come. When none is eligible the NIC sleeps until the earliest pacing
//! time (a paused or window-bound QP is woken by the RESUME or ACK that frees it).
//!
//! The round robin visits only the QPs that may have work: a bit per ring position, set when
//! a QP joins the ring, gets bytes posted, or is rewound ([`Nic::mark`]: a post, and an
//! ACK, NACK, timeout or reconnection that leaves it bytes to send), cleared when the
//! arbiter finds the QP with nothing unsent (then only those can give it work again).
//! Skipped positions are exactly QPs the full walk would skip, so the choice sequence is the
//! full walk's, and a host with 10,000 QPs of which 8 are busy pays for the 8.
//! The marks have a second level, a bit per word of marks (`rnic::marks`), so that
//! finding the next marked position does not read the empty words between.
//! Rings of up to 64 QPs are walked in full, which is cheaper there.
//!
//! Marked QPs that cannot send were the next cost: a host's hundreds of them, paused or
//! waiting for their pacing time, were each loaded at every choice (30 % of a Virtuoso row
//! on a failed link, where PFC pauses hosts).
//! The NIC keeps, per ring position, a time no later than that QP's `next_avail`: exact when
//! the walk last loaded it, kept valid as pacing moves later (a send, a context fetch, an RNR
//! wait) and cleared to zero where it may move earlier ([`Nic::pacing_moved`]: a re-timed gap,
//! a tenant clock). A position whose bound is past now and not before the earliest wake-up
//! the walk has already found can neither be chosen nor wake the NIC sooner, so it is passed
//! without loading the QP: the same choice and the same wake-up as the full walk. And while
//! every priority its QPs use is paused (a PFC pause of the host's port, between which the
//! NIC still sends ACKs and is kicked), the walk answers at once what it would have found QP
//! by QP: nothing may send, nothing to wake for.
//!
//! A finished QP leaves a large ring in batches: the walk over marks skips it (as the full
//! walk skips a QP with nothing to send), and the ring is compacted once an eighth of it has
//! finished, or before a slot is reused ([`Nic::forget_finished`]). Compacting after every
//! finish walked the whole ring each time: 9 % of a Virtuoso run whose hosts hold ~1,000
//! QPs each.

use std::collections::{HashMap, VecDeque};

use crate::fabric::{Packet, NUM_PRIOS};
use crate::ids::{NodeId, PortId, QpId};
use crate::rnic::marks::Marks;
use crate::rnic::{Completion, Qp, QpCache};
use crate::units::{Rate, Time};

/// What the arbiter decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send the next packet of this QP.
    Send(QpId),
    /// Nothing now; the earliest paced QP may send at this time.
    Wait(Time),
    /// Nothing to send until an ACK, RESUME or new WQE arrives.
    Idle,
}

/// Whether `qp` could send now but for its pacing: its class is not paused, it has bytes
/// left and its window has room. The tenant arbiter asks this; the per-QP loop in
/// [`Nic::select`] writes the same test out, because calling this there (or a negated twin)
/// cost the reference's S2 DCQCN run 0.7-1.6 M more instructions in the LTO build.
#[inline]
pub(crate) fn may_send(qp: &Qp, paused: &[bool; NUM_PRIOS]) -> bool {
    !paused[qp.pg as usize] && qp.has_data() && !qp.window_bound()
}

/// One host's RNIC.
#[derive(Debug)]
pub struct Nic {
    /// The host.
    pub node: NodeId,
    /// Its (single) port.
    pub port: PortId,
    /// Line rate.
    pub rate: Rate,
    /// Active QPs in arbitration order (joined by [`Nic::attach`]).
    pub qps: Vec<QpId>,
    /// One bit per position in `qps`: that QP may have work (see the module's note).
    busy: Marks,
    /// Per position in `qps`, a time no later than that QP's `next_avail` (see
    /// [`Nic::pacing_moved`]): the walk over marks skips, without loading it, a QP that can
    /// neither send now nor wake the NIC sooner than one already seen.
    avail: Vec<Time>,
    /// Bit p: a QP of priority p was attached (a QP keeps its priority).
    prios: u8,
    /// Position in `qps` of the last QP served.
    pub rr_last: usize,
    /// Some QPs in `qps` are finished and should be dropped from the list.
    has_finished: bool,
    /// QPs finished since the last compaction (a hint for when to compact a large ring).
    finished_since: u32,
    /// ACK/NACKs waiting to leave (always before data).
    pub acks: VecDeque<Packet>,
    /// Time of the pending wake-up event (`Time::MAX` = none).
    pub wake_at: Time,
    /// QP-context cache, when modelled.
    pub cache: Option<QpCache>,
    /// Next source port per destination host (the reference's per-pair counter).
    pub next_sport: HashMap<NodeId, u16>,
    /// Completion queue (drained by applications or by the results collector).
    pub cq: VecDeque<Completion>,
    /// WQE engine (doorbell FIFO), with a host model (`[host]`); `None`: posting is immediate.
    pub engine: Option<crate::rnic::WqeEngine>,
    /// Serial context fetches: the arbiter waits for this QP's context until this time.
    pub stall: Option<(QpId, Time)>,
    /// `nic_arbitration = "tenant"`: data turns by tenant first (`rnic::tenant_rr`).
    pub by_tenant: Option<crate::rnic::TenantRr>,
}

impl Nic {
    /// A NIC with no QPs.
    pub fn new(node: NodeId, port: PortId, rate: Rate) -> Nic {
        Nic {
            node,
            port,
            rate,
            qps: Vec::new(),
            busy: Marks::default(),
            avail: Vec::new(),
            prios: 0,
            rr_last: 0,
            has_finished: false,
            finished_since: 0,
            acks: VecDeque::new(),
            wake_at: Time::MAX,
            cache: None,
            next_sport: HashMap::new(),
            cq: VecDeque::new(),
            engine: None,
            stall: None,
            by_tenant: None,
        }
    }

    /// The reference's source port for the next QP towards `dst`: 10000, 10001, ...
    pub fn allocate_sport(&mut self, dst: NodeId) -> u16 {
        let next = self.next_sport.entry(dst).or_insert(10000);
        let sport = *next;
        *next = next.wrapping_add(1);
        sport
    }

    /// Puts QP `id` at the end of the arbitration ring, marked as having work.
    pub fn attach(&mut self, id: QpId, qp: &mut Qp) {
        let slot = self.qps.len();
        self.qps.push(id);
        self.avail.push(Time::ZERO);
        self.prios |= 1 << (qp.pg as usize % NUM_PRIOS);
        self.busy.grow_to(self.qps.len());
        qp.nic_slot = slot as u32;
        self.busy.set(slot);
    }

    /// `qp` got bytes posted: the arbiter visits it again. (A QP no longer in the ring, its
    /// slot since taken by another, marks that one: a visit too many, never one too few.)
    #[inline]
    pub fn mark(&mut self, qp: &Qp) {
        let slot = qp.nic_slot as usize;
        if slot < self.qps.len() {
            self.busy.set(slot);
        }
    }

    /// `qp`'s `next_avail` may have moved earlier (a rate raised with the gap re-timed, a
    /// tenant clock re-timed): its lower bound falls to zero, which holds for any QP, so a
    /// stale slot does no harm. Moving it later (a send, a fetch, an RNR wait) keeps the bound.
    #[inline]
    pub fn pacing_moved(&mut self, qp: &Qp) {
        if let Some(at) = self.avail.get_mut(qp.nic_slot as usize) {
            *at = Time::ZERO;
        }
    }

    /// A QP of this NIC finished: it leaves the ring before the next choice (a small ring, or
    /// the tenant arbiter's) or with the next batch (see the module's note).
    #[inline]
    pub fn note_finished(&mut self) {
        self.has_finished = true;
        self.finished_since += 1;
    }

    /// True when [`Nic::select`] at `until` (the end of the packet on the wire), and the
    /// transmitter around it, would do nothing, and nothing but a kick can change that: no
    /// ACK waiting, no serial fetch, no tenant arbiter, no finished QP that select would drop
    /// then (a large ring drops them in batches, and one below its batch is only skipped),
    /// and no marked QP that would send at `until` or set a wake-up then (every QP with
    /// bytes unsent is marked; see [`Nic::would_act`]). A window that depends on the rate
    /// (`var_win`) can open on a rate change that kicks nothing (a CC timer), so such a QP
    /// bound by its window is not quiet. A position whose pacing bound is past both is
    /// passed without loading its QP, as select passes it; past `MAX_LOADS` QPs loaded or
    /// `MAX_VISITS` positions visited it answers false (the event is kept).
    #[inline]
    pub fn quiet(&self, qps: &[Qp], paused: &[bool; NUM_PRIOS], until: Time) -> bool {
        const MAX_LOADS: usize = 8;
        const MAX_VISITS: usize = 256;
        if !self.acks.is_empty() || self.stall.is_some() || self.by_tenant.is_some() || self.drops_at_next_select() {
            return false;
        }
        let busy = |qp: &Qp| {
            self.would_act(qp, paused, until)
                || (qp.var_win && qp.window_bound() && !paused[qp.pg as usize] && qp.has_data())
        };
        let (mut at, mut loads) = (0, 0);
        for _ in 0..MAX_VISITS {
            let Some(idx) = self.busy.next(at, self.qps.len()) else { return true };
            at = idx + 1;
            let bound = self.avail[idx];
            if bound > until && bound >= self.wake_at {
                continue;
            }
            if loads == MAX_LOADS || busy(&qps[self.qps[idx].idx()]) {
                return false;
            }
            loads += 1;
        }
        self.busy.next(at, self.qps.len()).is_none()
    }

    /// Whether `qp` gives [`Nic::select`] at `until` something to do: it may send and is
    /// either due by then or due before the wake-up already armed (which select would move
    /// to it). A QP paced past both is passed over, and the armed wake-up comes first; the
    /// only thing that moves its pacing earlier without a kick, a re-timed gap, tells the
    /// NIC (`Simulation::set_member_rates`).
    #[inline]
    pub fn would_act(&self, qp: &Qp, paused: &[bool; NUM_PRIOS], until: Time) -> bool {
        may_send(qp, paused) && (qp.next_avail <= until || qp.next_avail < self.wake_at)
    }

    /// Whether [`Nic::select`] compacts the ring before it chooses (see there).
    #[inline]
    fn drops_at_next_select(&self) -> bool {
        self.has_finished
            && (self.qps.len() <= WALK_ALL_UP_TO
                || self.by_tenant.is_some()
                || self.finished_since as usize * 8 >= self.qps.len())
    }

    /// Chooses the next QP to send from, round robin after the last one served.
    pub fn select(&mut self, qps: &mut [Qp], paused: &[bool; NUM_PRIOS], now: Time) -> Pick {
        if self.drops_at_next_select() {
            self.drop_finished(qps);
        }
        if let Some(rr) = &mut self.by_tenant {
            return rr.select(&self.qps, qps, paused, now);
        }
        if self.qps.len() <= WALK_ALL_UP_TO {
            return self.walk_all(qps, paused, now);
        }
        self.walk_marked(qps, paused, now)
    }

    /// `select` on a small ring: every QP in turn, after the last one served.
    #[inline]
    fn walk_all(&mut self, qps: &[Qp], paused: &[bool; NUM_PRIOS], now: Time) -> Pick {
        let n = self.qps.len();
        let mut wake = Time::MAX;
        // Walk the ring once, starting after the last QP served (no division per step).
        let mut idx = if n == 0 { 0 } else { self.rr_last % n };
        for _ in 0..n {
            idx = if idx + 1 == n { 0 } else { idx + 1 };
            let qp = &qps[self.qps[idx].idx()];
            if !qp.has_data() {
                self.busy.clear(idx); // as on a large ring: `quiet` then passes it
                continue;
            }
            if paused[qp.pg as usize] || qp.window_bound() {
                continue; // the rest of `may_send`, written out (see there)
            }
            if qp.next_avail <= now {
                self.rr_last = idx;
                return Pick::Send(self.qps[idx]);
            }
            wake = wake.min(qp.next_avail);
        }
        pick_or_wait(wake)
    }

    /// `select` on a large ring: the same turn order through the marked positions only,
    /// unmarking a QP found finished or with nothing unsent.
    #[cold]
    #[inline(never)]
    fn walk_marked(&mut self, qps: &[Qp], paused: &[bool; NUM_PRIOS], now: Time) -> Pick {
        if (0..NUM_PRIOS).all(|p| self.prios >> p & 1 == 0 || paused[p]) {
            // Every QP's class is paused (a PFC pause of the host's port): none may send,
            // and none sets a wake-up. The walk would find as much, QP by QP.
            return Pick::Idle;
        }
        let n = self.qps.len();
        let mut wake = Time::MAX;
        let last = self.rr_last % n;
        let first = if last + 1 == n { 0 } else { last + 1 };
        for (from, to) in [(first, n), (0, first)] {
            let mut at = from;
            while let Some(idx) = self.busy.next(at, to) {
                at = idx + 1;
                let bound = self.avail[idx];
                if bound > now && bound >= wake {
                    continue; // paced past now and past an earlier wake-up: nothing it can change
                }
                let qp = &qps[self.qps[idx].idx()];
                self.avail[idx] = qp.next_avail;
                if qp.finished || !may_send(qp, paused) {
                    if qp.finished || !qp.has_data() {
                        // Only a post or a rewind (which mark it) gives it bytes to send.
                        self.busy.clear(idx);
                    }
                    continue;
                }
                if qp.next_avail <= now {
                    self.rr_last = idx;
                    return Pick::Send(self.qps[idx]);
                }
                wake = wake.min(qp.next_avail);
            }
        }
        pick_or_wait(wake)
    }

    /// Removes finished QPs now if any are listed (before their slots are reused).
    pub fn forget_finished(&mut self, qps: &mut [Qp]) {
        if self.has_finished {
            self.drop_finished(qps);
        }
    }

    /// Removes finished QPs, keeping the round-robin position: the last QP served keeps its
    /// turn if it stays, else its successor in the list serves next. The QPs kept move down
    /// with their marks.
    fn drop_finished(&mut self, qps: &mut [Qp]) {
        let last = self.rr_last;
        let mut kept_before = 0; // QPs kept at positions before `last`
        let mut last_kept = false;
        let mut pos = 0;
        let mut kept = 0;
        let (busy, avail) = (&mut self.busy, &mut self.avail);
        self.qps.retain(|q| {
            let keep = !qps[q.idx()].finished;
            if keep && pos < last {
                kept_before += 1;
            }
            if pos == last {
                last_kept = keep;
            }
            if keep {
                let marked = busy.get(pos);
                busy.put(kept, marked);
                avail[kept] = avail[pos];
                qps[q.idx()].nic_slot = kept as u32;
                kept += 1;
            }
            pos += 1;
            keep
        });
        busy.truncate(kept);
        avail.truncate(kept);
        let len = self.qps.len();
        self.rr_last = match len {
            0 => 0,
            _ if last_kept => kept_before,
            // The successor now sits at `kept_before`; serve it next.
            _ => (kept_before + len - 1) % len,
        };
        self.has_finished = false;
        self.finished_since = 0;
    }
}

/// Rings up to this many QPs are walked in full: one word of marks would save the few
/// loads it skips, and the walk costs fewer instructions than the scan of marks on the
/// reference's runs (S2 DCQCN: 11.7 M more with the scan).
const WALK_ALL_UP_TO: usize = 64;

/// What a walk that served no QP found: the earliest pacing time of a QP that may send, or
/// nothing until an ACK, RESUME or post.
#[inline]
fn pick_or_wait(wake: Time) -> Pick {
    if wake == Time::MAX {
        Pick::Idle
    } else {
        Pick::Wait(wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FlowId;
    use proptest::prelude::*;

    /// The walk over every QP of the ring that `select` replaced (its choice sequence is the
    /// reference): from after `rr_last`, the first QP that may send and whose time has come;
    /// else the earliest time of one that may send.
    fn full_walk(ring: &[QpId], rr_last: &mut usize, qps: &[Qp], paused: &[bool; NUM_PRIOS], now: Time) -> Pick {
        let n = ring.len();
        let mut wake = Time::MAX;
        let mut idx = if n == 0 { 0 } else { *rr_last % n };
        for _ in 0..n {
            idx = if idx + 1 == n { 0 } else { idx + 1 };
            let qp = &qps[ring[idx].idx()];
            if !may_send(qp, paused) {
                continue;
            }
            if qp.next_avail <= now {
                *rr_last = idx;
                return Pick::Send(ring[idx]);
            }
            wake = wake.min(qp.next_avail);
        }
        if wake == Time::MAX {
            Pick::Idle
        } else {
            Pick::Wait(wake)
        }
    }

    /// One step of a host's life: post to a QP, acknowledge a QP's bytes, rewind one to its
    /// cumulative ACK, hold one back in time, finish one, pause or resume class 3, or let
    /// the NIC choose (and send a 1 KB packet of what it chose).
    #[derive(Clone, Debug)]
    enum Step {
        Post(usize, u64),
        Ack(usize),
        Rewind(usize),
        Pace(usize, u64),
        Finish(usize),
        Pause(bool),
        /// A wake-up armed this many microseconds from now (the NIC's `wake_at`), or none.
        Wake(Option<u64>),
        Choose,
    }

    fn step(n: usize) -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..n, 1..5_000u64).prop_map(|(q, b)| Step::Post(q, b)),
            (0..n).prop_map(Step::Ack),
            (0..n).prop_map(Step::Rewind),
            (0..n, 0..3u64).prop_map(|(q, t)| Step::Pace(q, t)),
            (0..n).prop_map(Step::Finish),
            any::<bool>().prop_map(Step::Pause),
            proptest::option::of(0..3u64).prop_map(Step::Wake),
            Just(Step::Choose),
            Just(Step::Choose),
            Just(Step::Choose),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The arbiter that visits only marked QPs chooses what the full walk
        /// chooses, step by step, through posts, ACKs, rewinds, pacing (later after a send,
        /// which the NIC is not told of; earlier or later by `Pace`, which it is), pauses,
        /// windows, wake-ups and QPs leaving the ring. And §4: where `quiet` says so, the
        /// choice sends nothing, arms no earlier wake-up and leaves the ring as it was. On
        /// a ring walked in full (40 QPs) and on one walked by its marks (150).
        #[test]
        fn visiting_marked_qps_chooses_as_the_full_walk(
            (n, steps) in prop_oneof![Just(40usize), Just(150usize)]
                .prop_flat_map(|n| (Just(n), proptest::collection::vec(step(n), 1..400)))
        ) {
            let mut qps: Vec<Qp> = (0..n).map(|i| Qp { pg: 3, win: if i % 3 == 0 { 3_000 } else { 0 }, finished: false, ..Qp::placeholder() }).collect();
            let mut nic = Nic::new(NodeId(0), PortId(0), Rate::gbps(100));
            for (i, qp) in qps.iter_mut().enumerate() {
                nic.attach(QpId::new(i), qp);
            }
            let (mut ring, mut rr_last) = (nic.qps.clone(), 0usize);
            let mut paused = [false; NUM_PRIOS];
            let mut now = Time::ZERO;
            for s in steps {
                match s {
                    Step::Post(q, b) => {
                        qps[q].post(FlowId(0), b, now);
                        nic.mark(&qps[q]);
                    }
                    Step::Ack(q) => qps[q].snd_una = qps[q].snd_nxt,
                    Step::Rewind(q) => {
                        // As the simulator does: a rewind that leaves bytes to send marks.
                        qps[q].snd_nxt = qps[q].snd_una;
                        if qps[q].has_data() {
                            nic.mark(&qps[q]);
                        }
                    }
                    Step::Pace(q, t) => {
                        qps[q].next_avail = now + Time::from_us(t);
                        nic.pacing_moved(&qps[q]); // it may move earlier
                    }
                    Step::Finish(q) => {
                        // As the simulator does: both lists drop it at the next choice.
                        qps[q].finished = true;
                        nic.note_finished();
                        let last = rr_last;
                        let (mut kept_before, mut last_kept, mut pos) = (0, false, 0);
                        ring.retain(|id| {
                            let keep = !qps[id.idx()].finished;
                            kept_before += usize::from(keep && pos < last);
                            last_kept |= pos == last && keep;
                            pos += 1;
                            keep
                        });
                        let len = ring.len();
                        rr_last = match len {
                            0 => 0,
                            _ if last_kept => kept_before,
                            _ => (kept_before + len - 1) % len,
                        };
                    }
                    Step::Pause(p) => paused[3] = p,
                    Step::Wake(t) => nic.wake_at = t.map_or(Time::MAX, |t| now + Time::from_us(t)),
                    Step::Choose => {
                        now += Time::from_ns(500);
                        let want = full_walk(&ring, &mut rr_last, &qps, &paused, now);
                        // Asked at a send for the end of that packet, here: a quiet NIC's
                        // choice then changes nothing (its TxDone is skipped).
                        let (quiet, ring_before, rr_before) = (nic.quiet(&qps, &paused, now), nic.qps.clone(), nic.rr_last);
                        let got = nic.select(&mut qps, &paused, now);
                        prop_assert_eq!(got, want);
                        if quiet {
                            let arms = matches!(got, Pick::Wait(t) if t < nic.wake_at);
                            prop_assert!(!arms && !matches!(got, Pick::Send(_)), "quiet, then {:?} (wake-up at {:?})", got, nic.wake_at);
                            prop_assert_eq!((&nic.qps, nic.rr_last), (&ring_before, rr_before));
                        }
                        if let Pick::Wait(t) = got {
                            nic.wake_at = nic.wake_at.min(t);
                        }
                        // Finished QPs may stay in a large ring until the next batch.
                        let listed: Vec<QpId> = nic.qps.iter().copied().filter(|q| !qps[q.idx()].finished).collect();
                        prop_assert_eq!(&listed, &ring);
                        if let Pick::Send(q) = got {
                            let qp = &mut qps[q.idx()];
                            qp.snd_nxt = (qp.snd_nxt + 1_000).min(qp.posted);
                            // Its pacing moves later, as a send's does: the NIC is not told.
                            qp.next_avail = now + Time::from_ns(1_000 * (q.idx() % 5) as u64);
                        }
                    }
                }
            }
        }
    }
}
