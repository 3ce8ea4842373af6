//! Traffic classes (`[[fabric.classes]]`): per-class egress scheduling at switch ports
//! (strict priority or deficit weighted round robin), per-class PFC and per-class ECN
//! thresholds.
//!
//! Without a class table nothing here runs: a port's scheduler is the built-in one of
//! [`PortState::dequeue`](super::PortState::dequeue) (class 0 strict, then packet round
//! robin over 1..7). With one, every switch port carries a [`ClassSched`] and its dequeue
//! takes the out-of-line path below:
//!
//! 1. class 0 (ACKs with `ack_high_prio`, PFC frames) first, as always;
//! 2. then the strict classes, the lowest class number first;
//! 3. then DWRR over the other classes, after Shreedhar & Varghese, "Efficient fair
//!    queuing using deficit round robin" (SIGCOMM '95): when a class gets its turn its
//!    deficit grows by `weight × quantum`; it sends while its head packet fits in the
//!    deficit, each packet taking its wire bytes off; a class that empties loses its
//!    deficit; a paused class is skipped (and keeps its deficit while it holds packets).
//!    Turns go round the classes in class order. The quantum is the largest data packet
//!    on the wire (MTU payload plus headers), the paper's condition for O(1) work per
//!    packet: every turn sends at least one packet.

use super::ecn::EcnOverrides;
use super::NUM_PRIOS;

/// How a class is served at a switch egress port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// Before every DWRR class, and before strict classes of higher number.
    Strict,
    /// Deficit weighted round robin with this weight (at least 1).
    Dwrr(u32),
}

impl Scheduler {
    /// The name used in scenarios and tables.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Strict => "strict",
            Scheduler::Dwrr(_) => "dwrr",
        }
    }
}

/// Settings of one class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassConfig {
    /// Its egress scheduling.
    pub scheduler: Scheduler,
    /// PFC on for this class (off: the MMU drops at the threshold instead of pausing).
    pub pfc: bool,
    /// ECN thresholds replacing the fabric-wide ones on this class's queues.
    pub ecn: EcnOverrides,
}

/// The class table of a run (`SimConfig::classes`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassTable {
    /// Indexed by class; entry 0 describes the control class (strict, outside the MMU).
    pub classes: [ClassConfig; NUM_PRIOS],
}

impl ClassTable {
    /// Every class as a fabric without a table has it: DWRR weight 1 (the nearest to the
    /// built-in round robin), PFC as `lossless`, the fabric-wide ECN thresholds.
    pub fn uniform(lossless: bool) -> ClassTable {
        let c = ClassConfig { scheduler: Scheduler::Dwrr(1), pfc: lossless, ecn: EcnOverrides::default() };
        let mut classes = [c; NUM_PRIOS];
        classes[0] = ClassConfig { scheduler: Scheduler::Strict, pfc: false, ..c };
        ClassTable { classes }
    }

    /// Bit `q` set: class `q` is lossless (PFC on).
    pub fn pfc_mask(&self) -> u8 {
        self.mask(|c| c.pfc) & !1
    }

    /// Bit `q` set: class `q` is strict (class 0 included).
    pub fn strict_mask(&self) -> u8 {
        self.mask(|c| c.scheduler == Scheduler::Strict) | 1
    }

    fn mask(&self, f: impl Fn(&ClassConfig) -> bool) -> u8 {
        self.classes.iter().enumerate().filter(|(_, c)| f(c)).fold(0, |m, (q, _)| m | 1 << q)
    }

    /// A port's scheduler state for this table, with a DWRR quantum of `quantum` bytes.
    pub fn port_state(&self, quantum: u32) -> ClassSched {
        let mut grant = [0u64; NUM_PRIOS];
        for (q, c) in self.classes.iter().enumerate() {
            if let Scheduler::Dwrr(w) = c.scheduler {
                grant[q] = w as u64 * quantum.max(1) as u64;
            }
        }
        ClassSched { strict: self.strict_mask(), grant, deficit: [0; NUM_PRIOS], turn: 0, stats: Default::default() }
    }
}

/// What one port counted per class (summed into `Results::classes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounters {
    /// Bytes this egress port sent in the class.
    pub tx_bytes: u64,
    /// Packets this egress port sent in the class.
    pub tx_packets: u64,
    /// Packets of the class dropped at admission on this ingress port (lossy classes).
    pub drops: u64,
    /// PAUSE frames for the class sent out of this port.
    pub pauses: u64,
    /// Packets of the class ECN-marked at this egress port.
    pub ecn_marks: u64,
}

/// The class scheduler of one switch port.
#[derive(Clone, Debug)]
pub struct ClassSched {
    /// Strict classes as a bit mask (class 0 always).
    strict: u8,
    /// Deficit added when a DWRR class gets its turn (`weight × quantum`); 0 for strict ones.
    grant: [u64; NUM_PRIOS],
    /// Bytes each DWRR class may still send in its current or next turn.
    deficit: [u64; NUM_PRIOS],
    /// The DWRR class whose turn it is (0: none yet).
    turn: u8,
    /// Counters by class.
    pub stats: [ClassCounters; NUM_PRIOS],
}

impl ClassSched {
    /// The class to serve among `ready` (classes with packets and not paused; class 0 is
    /// never paused), given each class's head packet size. `ready` must not be empty.
    pub fn pick(&mut self, ready: u8, head_wire: impl Fn(usize) -> u32) -> usize {
        let strict = ready & self.strict;
        if strict != 0 {
            return strict.trailing_zeros() as usize;
        }
        let t = self.turn as usize;
        if ready & (1 << t) != 0 && head_wire(t) as u64 <= self.deficit[t] {
            return t; // the current turn goes on
        }
        // The next class after the current one in class order gets a turn; with a grant of
        // at least one full packet the first one taken always fits.
        let mut q = t;
        loop {
            let after = ready & !((2u16 << q) - 1) as u8;
            q = if after != 0 { after.trailing_zeros() } else { ready.trailing_zeros() } as usize;
            self.deficit[q] += self.grant[q];
            self.turn = q as u8;
            if head_wire(q) as u64 <= self.deficit[q] {
                return q;
            }
        }
    }

    /// Every queue of the port was emptied at once (its link failed): no deficit stays.
    pub fn all_emptied(&mut self) {
        self.deficit = [0; NUM_PRIOS];
    }

    /// A packet of `wire` bytes left class `q`; `emptied`: the class has no more.
    pub fn sent(&mut self, q: usize, wire: u32, emptied: bool) {
        let s = &mut self.stats[q];
        s.tx_bytes += wire as u64;
        s.tx_packets += 1;
        if self.strict & (1 << q) == 0 {
            self.deficit[q] = if emptied { 0 } else { self.deficit[q] - wire as u64 };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(weights: &[(usize, Scheduler)], quantum: u32) -> ClassSched {
        let mut t = ClassTable::uniform(true);
        for &(q, s) in weights {
            t.classes[q].scheduler = s;
        }
        t.port_state(quantum)
    }

    /// Always-backlogged classes of fixed packet sizes: bytes sent per class.
    fn serve(s: &mut ClassSched, ready: u8, size: impl Fn(usize) -> u32, packets: usize) -> [u64; NUM_PRIOS] {
        let mut bytes = [0u64; NUM_PRIOS];
        for _ in 0..packets {
            let q = s.pick(ready, &size);
            bytes[q] += size(q) as u64;
            s.sent(q, size(q), false);
        }
        bytes
    }

    #[test]
    fn dwrr_bytes_follow_the_weights_whatever_the_packet_sizes() {
        // Weights 1:3 with packets of 1048 and 300 bytes: byte shares 1:3, not packet shares.
        let mut s = sched(&[(1, Scheduler::Dwrr(1)), (2, Scheduler::Dwrr(3))], 1048);
        let size = |q: usize| if q == 1 { 1048 } else { 300 };
        let b = serve(&mut s, 0b110, size, 40_000);
        let ratio = b[2] as f64 / b[1] as f64;
        assert!((ratio - 3.0).abs() < 0.01, "ratio {ratio}");
    }

    #[test]
    fn strict_class_goes_first_and_lower_number_wins() {
        let mut s = sched(&[(2, Scheduler::Strict), (5, Scheduler::Strict)], 1000);
        assert_eq!(s.pick(0b0010_0110, |_| 100), 2);
        assert_eq!(s.pick(0b0010_0010, |_| 100), 5);
        assert_eq!(s.pick(0b0000_0010, |_| 100), 1);
        assert_eq!(s.pick(0b0010_0011, |_| 100), 0);
    }

    #[test]
    fn an_emptied_class_loses_its_deficit() {
        let mut s = sched(&[(1, Scheduler::Dwrr(4))], 1000);
        assert_eq!(s.pick(0b10, |_| 100), 1);
        assert_eq!(s.deficit[1], 4000);
        s.sent(1, 100, true);
        assert_eq!(s.deficit[1], 0);
    }

    #[test]
    fn a_grant_smaller_than_a_packet_still_sends() {
        // Quantum below the packet size (not what the simulation sets): turns accumulate.
        let mut s = sched(&[(1, Scheduler::Dwrr(1)), (2, Scheduler::Dwrr(1))], 100);
        let b = serve(&mut s, 0b110, |_| 1000, 1000);
        assert_eq!(b[1], b[2]);
    }
}
