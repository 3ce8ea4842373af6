//! `[drum] select = "least_served"`: who holds a DRUM scheduler's dedicated QPs when the
//! top-k rule's static set would leave most applications behind one shared QP
//! (docs/drum-fabric.md §6.11).
//!
//! The NIC serves its QPs round robin, packet by packet, so with k dedicated QPs and one
//! shared QP backlogged the shared one gets 1/(k+1) of the link whatever the rates x̂ say,
//! and its FIFO serves its applications one WQE after another. Here the scheduler decides
//! who gets a QP instead: each application carries a service tag, the bytes released for
//! it over its normalised rate x̂_j / mean x̂ (start-time fair queueing's tag, Goyal et al.,
//! SIGCOMM 1996), and the k slots go to the applications with the smallest tags. A holder
//! whose tag is more than a `quantum` (one window of bytes) above the least-served
//! waiter's is due: the agent releases nothing more onto its QP, and once that QP has
//! drained the slot passes to the waiter, a QP-context handover (counted in `handovers`).
//! Handing a slot on only when drained matters: displacing holders with WQEs in flight let
//! them be re-chosen ahead of the successors waiting for their drain, and those starved.
//! Definition 2 allows "any prioritizing mechanism such as FIFO or smallest job first";
//! this is the least-served one.
//!
//! An application that becomes backlogged starts at the smallest tag of those already
//! backlogged, so idling earns no credit; a holder idle for a whole control period gives
//! its slot up (`evict_idle`). Pure bookkeeping, no allocation after `new`.

/// Service tags and the slot rule of one scheduler.
#[derive(Clone, Debug)]
pub struct LeastServed {
    /// Bytes released over the normalised rate, per application.
    tag: Vec<f64>,
    /// x̂_j / mean x̂ (1 until the first control period).
    weight: Vec<f64>,
    /// The smallest tag among the backlogged applications when last seen: where an
    /// application that was idle restarts.
    floor: f64,
    /// How far below a holder's tag a waiter must be to take its slot (bytes).
    quantum: f64,
    /// Slots handed from one application to another.
    pub handovers: u64,
}

impl LeastServed {
    /// Tags for `m` applications, a handover after `quantum` bytes of difference.
    pub fn new(m: usize, quantum: u64) -> LeastServed {
        LeastServed { tag: vec![0.0; m], weight: vec![1.0; m], floor: 0.0, quantum: quantum as f64, handovers: 0 }
    }

    /// The rates x̂ of the new period become the weights (normalised to mean 1, so that a
    /// tag is in bytes and `quantum` compares with it).
    pub fn set_weights(&mut self, xs: &[f64]) {
        let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
        for (w, &x) in self.weight.iter_mut().zip(xs) {
            *w = (x / mean).max(1e-12);
        }
    }

    /// Application `j` becomes backlogged: it restarts no lower than the floor.
    pub fn wake(&mut self, j: usize) {
        self.tag[j] = self.tag[j].max(self.floor);
    }

    /// A WQE of `bytes` of application `j` was released.
    pub fn served(&mut self, j: usize, bytes: u64) {
        self.tag[j] += bytes as f64 / self.weight[j];
    }

    /// Updates `want` (the slot holders, at most `k`): waiters (backlogged, not holding)
    /// take free slots smallest tag first, then the slots of holders whose QP has drained
    /// (`drained`) and whose tag exceeds theirs by more than the quantum (the largest tag
    /// first; ties: the lowest index). A holder's slot is handed on only once its posted
    /// WQEs have completed, so a handover never waits for a drain.
    pub fn reselect(
        &mut self,
        want: &mut [bool],
        backlogged: impl Fn(usize) -> bool,
        k: usize,
        drained: impl Fn(usize) -> bool,
    ) {
        self.raise_floor(&backlogged);
        let mut held = want.iter().filter(|&&w| w).count();
        // Each pass moves one waiter in; at most every application once.
        for _ in 0..want.len() {
            let Some(w) = self.smallest(|j| backlogged(j) && !want[j]) else { return };
            if held < k {
                want[w] = true;
                held += 1;
                continue;
            }
            let limit = self.tag[w] + self.quantum;
            let victim = (0..want.len())
                .filter(|&h| want[h] && self.tag[h] > limit && drained(h))
                .min_by(|&a, &b| self.tag[b].total_cmp(&self.tag[a]));
            let Some(h) = victim else { return };
            want[h] = false;
            want[w] = true;
            self.handovers += 1;
        }
    }

    /// The tag above which a holder is due to hand its slot on: a quantum above the
    /// least-served waiter's (infinite without waiters). A due holder gets nothing more onto
    /// its QP, so that it drains and `reselect` can hand its slot on.
    pub fn due_above(&self, want: &[bool], backlogged: impl Fn(usize) -> bool) -> f64 {
        self.smallest(|i| backlogged(i) && !want[i]).map_or(f64::INFINITY, |w| self.tag[w] + self.quantum)
    }

    /// Holder `j` is due (its tag is above `limit`, from `due_above`).
    pub fn due(&self, j: usize, limit: f64) -> bool {
        self.tag[j] > limit
    }

    /// A control period ended: holders that released nothing in it and have nothing
    /// queued give their slot up (else a finished application would keep it for ever).
    pub fn evict_idle(&self, want: &mut [bool], idle: impl Fn(usize) -> bool) {
        for (j, w) in want.iter_mut().enumerate() {
            *w &= !idle(j);
        }
    }

    fn raise_floor(&mut self, backlogged: &impl Fn(usize) -> bool) {
        if let Some(j) = self.smallest(backlogged) {
            self.floor = self.floor.max(self.tag[j]);
        }
    }

    /// The application with the smallest tag among `which` (ties: the lowest index).
    fn smallest(&self, which: impl Fn(usize) -> bool) -> Option<usize> {
        (0..self.tag.len()).filter(|&j| which(j)).min_by(|&a, &b| self.tag[a].total_cmp(&self.tag[b]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three applications, one slot: the holder keeps it until it has been served a
    /// quantum more than the waiter, then hands it to the least served.
    #[test]
    fn a_slot_passes_to_the_least_served_after_a_quantum() {
        let mut s = LeastServed::new(3, 1000);
        let mut want = [true, false, false];
        let all = |_| true;
        s.reselect(&mut want, all, 1, |_| true);
        assert_eq!(want, [true, false, false], "equal tags: the holder keeps its slot");
        s.served(0, 1000);
        s.reselect(&mut want, all, 1, |_| true);
        assert_eq!(want, [true, false, false], "one quantum ahead is not enough");
        s.served(0, 1);
        s.reselect(&mut want, all, 1, |_| true);
        assert_eq!(want, [false, true, false], "more than a quantum: the lowest-index waiter takes it");
        assert_eq!(s.handovers, 1);
        s.served(1, 5000);
        s.reselect(&mut want, all, 1, |_| true);
        assert_eq!(want, [false, false, true], "app 2 has waited with tag 0 since the start");
    }

    /// Weights: an application with twice the rate is served twice the bytes before it
    /// gives its slot up; one that idled restarts at the floor, with no credit.
    #[test]
    fn weights_scale_the_share_and_idling_banks_nothing() {
        let mut s = LeastServed::new(2, 0);
        s.set_weights(&[2.0, 1.0]);
        s.served(0, 2000);
        s.served(1, 1000);
        assert!((s.tag[0] - s.tag[1]).abs() < 1e-9, "twice the rate, twice the bytes for the same tag");
        let mut want = [true, false];
        s.served(1, 10_000);
        // App 0 idles (not backlogged) while app 1 is served; it rejoins at the floor.
        s.reselect(&mut want, |j| j == 1, 1, |_| true);
        s.wake(0);
        assert_eq!(s.tag[0], s.tag[1], "restarts at the smallest backlogged tag");
    }

    /// Free slots fill smallest tag first; a holder whose QP still holds WQEs keeps its
    /// slot (it is only due), one drained gives it up; an idle holder gives its slot up at
    /// the period's end.
    #[test]
    fn free_slots_fill_first_and_only_a_drained_holder_hands_on() {
        let mut s = LeastServed::new(4, 0);
        s.served(0, 10);
        s.served(1, 20);
        let mut want = [false; 4];
        s.reselect(&mut want, |_| true, 2, |_| true);
        assert_eq!(want, [false, false, true, true]);
        s.served(2, 100);
        s.served(3, 50);
        let limit = s.due_above(&want, |_| true);
        assert_eq!(limit, 10.0, "the least-served waiter is app 0, quantum 0");
        assert!(s.due(2, limit) && s.due(3, limit));
        s.reselect(&mut want, |_| true, 2, |j| j == 3);
        assert_eq!(want, [true, false, true, false], "app 3 drained: its slot goes to app 0; app 2 keeps its");
        s.reselect(&mut want, |_| true, 2, |_| true);
        assert_eq!(want, [true, true, false, false]);
        assert_eq!(s.handovers, 2);
        s.evict_idle(&mut want, |j| j == 1);
        assert_eq!(want, [true, false, false, false]);
    }
}
