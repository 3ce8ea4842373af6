//! How a UET sender picks each packet's entropy value (EV), the value switches hash in place
//! of the source port (`fabric.path_selection`): one connection's state and its rules. The
//! EVs of a connection are `entropies` values from its own source port on (wrapping), so that
//! two connections of one host spray over different values, as UEC's random upper bits do.
//!
//! - `ev_spray`: every packet draws one of the values at random ([`fresh_ev`]).
//! - `ev_cycle`: the sender visits every value once per round, in an order that changes each
//!   round: the round's order is the index XOR a mask drawn for the round, over the next power
//!   of two, indices past `entropies` skipped. With `entropies` a power of two this is the
//!   oblivious rule of htsim's UEC model (`htsim/sim/uec_mp.cpp`, `UecMpOblivious::nextEntropy`,
//!   lines 30-44: the index counts through the paths and wraps, XORed with a random value
//!   redrawn at each wrap).
//! - `reps`: REPS reuses the EVs whose ACKs came back unmarked, oldest first, and draws a fresh
//!   one when none is left. With `reps_freeze` a timeout freezes it, as htsim's REPS does
//!   (`uec_mp.cpp`, `UecMpReps::processEv` and `nextEntropy`, lines 152-196; the ring in
//!   `buffer_reps.cpp`): for that long the sender goes round the last `reps_buffer` good EVs,
//!   reusing each as often as it comes up, while good EVs still join them; the first feedback
//!   after the freeze empties the buffer, and the next [`EXPLORE_AFTER_FREEZE`] packets draw
//!   fresh EVs, during which a timeout does not freeze it again.
//!
//! - `ev_bitmap`: the cycle of `ev_cycle`, passing over the EVs with a penalty, as htsim's
//!   bitmap mode does (`uec_mp.cpp`, `UecMpBitmap`, lines 47-135): an ACK with a CE mark adds
//!   1 to its EV's penalty, a NACK 4 (at most [`MAX_PENALTY`]), and each pick that passes over
//!   EVs takes a point off the first of them.
//!
//! Every draw is a hash of the connection and a counter, so that a run picks the same EVs on
//! any thread count with no random stream to share.

use std::collections::VecDeque;

use crate::units::Time;

/// How a UET sender picks the entropy value (EV) of each packet, which switches hash in
/// place of the flow's source port (`fabric.path_selection`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Spray {
    /// One EV for the connection (its source port): one ECMP path, as RoCE.
    #[default]
    Off,
    /// A fresh EV for every packet, drawn at random, oblivious of congestion.
    EvSpray,
    /// Every EV once per round, in an order redrawn each round, oblivious of congestion
    /// (htsim's oblivious spraying; `rnic::uet_ev`).
    EvCycle,
    /// The cycle, passing over EVs penalised by CE marks and trims (htsim's bitmap mode).
    Bitmap,
    /// REPS: reuse the EVs whose ACKs came back without a congestion mark, else a fresh one.
    Reps,
}

/// The settings that pick each packet's EV (`rnic::uet::UetConfig::ev`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvConfig {
    /// How EVs are picked.
    pub spray: Spray,
    /// Distinct EVs per connection.
    pub entropies: u32,
    /// REPS's buffers, per connection.
    pub reps_buffer: u32,
    /// REPS: how long a timeout freezes it (`None`: never).
    pub reps_freeze: Option<Time>,
}

/// The `k`-th fresh entropy value of the connection `(sip, dip, sport)`: one of `entropies`
/// values from `sport` on (wrapping), picked by a hash of the connection and `k`, so that a
/// run draws the same values on any thread count with no random stream to share.
pub fn fresh_ev(sip: u32, dip: u32, sport: u16, k: u64, entropies: u32) -> u16 {
    let mut z =
        ((sip as u64) << 32 | dip as u64) ^ (sport as u64).rotate_left(48) ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
    // generators", 2014).
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    sport.wrapping_add((z % entropies as u64) as u16)
}

/// Fresh EVs drawn after a freeze ends before recycling starts again (htsim's REPS:
/// `explore_counter = 16`, `uec_mp.cpp` line 167).
pub const EXPLORE_AFTER_FREEZE: u16 = 16;

/// `ev_bitmap`: the largest penalty an EV holds (htsim's `_max_penalty = 15`, `uec_mp.cpp`
/// line 55).
pub const MAX_PENALTY: u8 = 15;

/// The connection an EV is for: its addresses and its own source port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conn {
    /// Source address.
    pub sip: u32,
    /// Destination address.
    pub dip: u32,
    /// The connection's own source port, the first of its EVs.
    pub sport: u16,
}

/// What an ACK, a NACK or a timeout says of the path an EV took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feedback {
    /// An ACK of a packet that was not CE-marked.
    Good,
    /// An ACK of a CE-marked packet.
    Marked,
    /// A NACK: a switch trimmed the packet.
    Trimmed,
    /// The retransmission timer fired (it names no EV).
    Timeout,
}

/// One sender's EV state (its slot's, reset when the slot is reused). Bounded: at most
/// `reps_buffer` EVs in each buffer.
#[derive(Clone, Debug, Default)]
pub struct EvPicker {
    /// REPS: EVs whose ACKs came back unmarked and not yet reused, oldest first.
    pub evs: VecDeque<u16>,
    /// EVs drawn so far: the next fresh EV's index (`ev_spray`, REPS) or the position in
    /// the rounds (`ev_cycle`).
    pub drawn: u64,
    /// REPS with freezing: the last good EVs heard, reused or not (what a freeze goes round).
    kept: VecDeque<u16>,
    /// REPS: frozen until this time (`None`: not frozen).
    frozen_until: Option<Time>,
    /// REPS: the next of `kept` to send while frozen.
    cursor: usize,
    /// REPS: fresh EVs still to draw after a freeze.
    explore: u16,
    /// `ev_bitmap`: each EV's penalty, by offset past the connection's port (sized at the
    /// first pick: one byte per EV).
    penalty: Vec<u8>,
}

impl EvPicker {
    /// A fresh connection, keeping the buffers' capacity.
    pub fn reset(&mut self) {
        self.evs.clear();
        self.kept.clear();
        self.drawn = 0;
        self.frozen_until = None;
        self.cursor = 0;
        self.explore = 0;
        self.penalty.clear();
    }

    /// True while a REPS freeze lasts.
    pub fn frozen(&self) -> bool {
        self.frozen_until.is_some()
    }

    /// The EV of the next packet of connection `c` (`Spray::Off` is the caller's: the
    /// connection's own port).
    pub fn next(&mut self, cfg: &EvConfig, c: Conn) -> u16 {
        match cfg.spray {
            Spray::EvCycle => self.cycled(c, cfg.entropies),
            Spray::Bitmap => self.bitmap(c, cfg.entropies),
            Spray::Reps => self.reps(c, cfg.entropies),
            Spray::EvSpray | Spray::Off => self.fresh(c, cfg.entropies),
        }
    }

    fn fresh(&mut self, c: Conn, entropies: u32) -> u16 {
        self.drawn += 1;
        fresh_ev(c.sip, c.dip, c.sport, self.drawn - 1, entropies)
    }

    /// `ev_cycle`: position `drawn` is index `drawn mod span` of round `drawn / span`, where
    /// `span` is `entropies` rounded up to a power of two; the index XOR the round's mask is
    /// the EV's offset, and an offset past `entropies` is passed over. Each round therefore
    /// sends every offset once (XOR with a constant is a bijection of `0..span`).
    fn cycled(&mut self, c: Conn, entropies: u32) -> u16 {
        c.sport.wrapping_add(self.cycle_offset(c, entropies) as u16)
    }

    /// The next offset of the cycle (`ev_cycle`).
    fn cycle_offset(&mut self, c: Conn, entropies: u32) -> usize {
        let span = entropies.next_power_of_two() as u64;
        loop {
            let (round, index) = (self.drawn / span, self.drawn % span);
            self.drawn += 1;
            let mask = fresh_ev(c.sip, c.dip, c.sport, round, span as u32).wrapping_sub(c.sport) as u64;
            let offset = index ^ mask;
            if offset < entropies as u64 {
                return offset as usize;
            }
        }
    }

    /// `ev_bitmap`: the cycle, passing over an EV with a penalty; the first EV a pick passes
    /// over loses a point, and after a whole round passed over the pick takes the next EV
    /// whatever its penalty (htsim's `UecMpBitmap::nextEntropy`, `uec_mp.cpp` lines 98-135).
    fn bitmap(&mut self, c: Conn, entropies: u32) -> u16 {
        let e = entropies as usize;
        if self.penalty.len() != e {
            self.penalty.clear();
            self.penalty.resize(e, 0);
        }
        let mut offset = self.cycle_offset(c, entropies);
        let mut passed = 0;
        while self.penalty[offset] > 0 && passed < e {
            if passed == 0 {
                self.penalty[offset] -= 1;
            }
            passed += 1;
            offset = self.cycle_offset(c, entropies);
        }
        c.sport.wrapping_add(offset as u16)
    }

    fn reps(&mut self, c: Conn, entropies: u32) -> u16 {
        if self.explore > 0 {
            self.explore -= 1;
            return self.fresh(c, entropies);
        }
        if self.frozen() {
            if self.kept.is_empty() {
                return self.fresh(c, entropies);
            }
            let ev = self.kept[self.cursor % self.kept.len()];
            self.cursor = (self.cursor + 1) % self.kept.len();
            return ev;
        }
        match self.evs.pop_front() {
            Some(ev) => ev,
            None => self.fresh(c, entropies),
        }
    }

    /// Feedback at time `now` on a packet that carried `ev` (ignored for a timeout) of the
    /// connection whose own port is `sport`. REPS and the bitmap listen.
    pub fn feedback(&mut self, cfg: &EvConfig, sport: u16, ev: u16, what: Feedback, now: Time) {
        if cfg.spray == Spray::Bitmap {
            self.penalise(ev.wrapping_sub(sport) as usize, what);
            return;
        }
        if cfg.spray != Spray::Reps {
            return;
        }
        let cap = cfg.reps_buffer as usize;
        if let Some(freeze) = cfg.reps_freeze {
            if what == Feedback::Timeout && !self.frozen() && self.explore == 0 {
                self.frozen_until = Some(now + freeze);
                self.cursor = 0;
            }
            if self.frozen_until.is_some_and(|end| now > end) {
                self.frozen_until = None;
                self.evs.clear();
                self.kept.clear();
                self.cursor = 0;
                self.explore = EXPLORE_AFTER_FREEZE;
            }
            if what == Feedback::Good {
                push_capped(&mut self.kept, ev, cap);
            }
        }
        if what == Feedback::Good {
            push_capped(&mut self.evs, ev, cap);
        }
    }
}

impl EvPicker {
    /// `ev_bitmap`: the penalty an ACK or a NACK adds to the EV at `offset`: 1 for a CE mark,
    /// 4 for a trim, capped at [`MAX_PENALTY`] (htsim's `UecMpBitmap::processEv`, `uec_mp.cpp`
    /// lines 75-96). A timeout names no EV and adds nothing.
    fn penalise(&mut self, offset: usize, what: Feedback) {
        let add = match what {
            Feedback::Marked => 1,
            Feedback::Trimmed => 4,
            Feedback::Good | Feedback::Timeout => return,
        };
        if let Some(p) = self.penalty.get_mut(offset) {
            *p = (*p + add).min(MAX_PENALTY);
        }
    }
}

/// Appends `ev`, forgetting the oldest when `cap` are kept.
fn push_capped(q: &mut VecDeque<u16>, ev: u16, cap: usize) {
    if q.len() >= cap {
        q.pop_front();
    }
    q.push_back(ev);
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Conn = Conn { sip: 1, dip: 2, sport: 5000 };

    fn cfg(spray: Spray, entropies: u32) -> EvConfig {
        EvConfig { spray, entropies, reps_buffer: 3, reps_freeze: None }
    }

    /// Each round of `entropies` packets sends every EV once, whatever `entropies` (a power
    /// of two or not); the rounds' orders differ.
    #[test]
    fn cycling_sends_every_entropy_once_per_round() {
        for e in [1u32, 3, 4, 6, 64, 100, 256] {
            let (c, mut p) = (cfg(Spray::EvCycle, e), EvPicker::default());
            let mut orders = Vec::new();
            for _ in 0..8 {
                let round: Vec<u16> = (0..e).map(|_| p.next(&c, C)).collect();
                let mut sorted = round.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..e).map(|i| 5000 + i as u16).collect::<Vec<_>>(), "{e}");
                orders.push(round);
            }
            if e >= 4 {
                orders.dedup();
                assert!(orders.len() > 1, "{e}: every round in the same order");
            }
        }
    }

    /// Random draws do not balance: over 4 EVs, 4,000 draws leave some EV more than one
    /// packet from another (the check the cycle passes can fail).
    #[test]
    fn random_draws_do_not_balance_as_the_cycle_does() {
        let count = |spray| {
            let (c, mut p) = (cfg(spray, 4), EvPicker::default());
            let mut n = [0u32; 4];
            for _ in 0..4001 {
                n[(p.next(&c, C) - 5000) as usize] += 1;
            }
            n.iter().max().unwrap() - n.iter().min().unwrap()
        };
        assert_eq!(count(Spray::EvCycle), 1);
        assert!(count(Spray::EvSpray) > 1);
    }

    fn good(p: &mut EvPicker, c: &EvConfig, evs: &[u16]) {
        for &ev in evs {
            p.feedback(c, 5000, ev, Feedback::Good, Time::ZERO);
        }
    }

    /// Without freezing, a timeout changes nothing: REPS reuses what it holds, then draws.
    #[test]
    fn reps_without_freezing_ignores_timeouts() {
        let (c, mut p) = (cfg(Spray::Reps, 256), EvPicker::default());
        good(&mut p, &c, &[7, 8]);
        p.feedback(&c, 5000, 0, Feedback::Timeout, Time::from_us(1));
        assert_eq!((p.next(&c, C), p.next(&c, C)), (7, 8));
        assert_eq!(p.next(&c, C), fresh_ev(1, 2, 5000, 0, 256));
        assert!(!p.frozen());
    }

    /// A timeout freezes REPS for `reps_freeze`: the sender goes round the last
    /// `reps_buffer` good EVs (reused or not) and nothing else, good EVs still join them;
    /// the first feedback after the freeze empties the buffers and the next 16 packets draw
    /// fresh EVs, during which a timeout does not freeze again.
    #[test]
    fn a_timeout_freezes_reps_on_its_last_good_entropies() {
        let mut c = cfg(Spray::Reps, 256);
        c.reps_freeze = Some(Time::from_us(100));
        let mut p = EvPicker::default();
        good(&mut p, &c, &[6, 7, 8, 9]); // 6 forgotten: three are kept
        assert_eq!((p.next(&c, C), p.next(&c, C)), (7, 8), "not frozen: each used once");
        let t = Time::from_us(10);
        p.feedback(&c, 5000, 0, Feedback::Timeout, t);
        assert!(p.frozen());
        let round: Vec<u16> = (0..7).map(|_| p.next(&c, C)).collect();
        assert_eq!(round, [7, 8, 9, 7, 8, 9, 7], "frozen: round the kept EVs, used ones included");
        p.feedback(&c, 5000, 0, Feedback::Trimmed, t + Time::from_us(50));
        p.feedback(&c, 5000, 0, Feedback::Marked, t + Time::from_us(50));
        p.feedback(&c, 5000, 0, Feedback::Timeout, t + Time::from_us(60)); // already frozen
        p.feedback(&c, 5000, 10, Feedback::Good, t + Time::from_us(60));
        let round: Vec<u16> = (0..3).map(|_| p.next(&c, C)).collect();
        assert_eq!(round, [9, 10, 8], "10 replaced 7, the oldest; the cursor went on");
        p.feedback(&c, 5000, 0, Feedback::Marked, t + Time::from_us(100));
        assert!(p.frozen(), "the freeze lasts its whole length");
        p.feedback(&c, 5000, 11, Feedback::Good, t + Time::from_us(101));
        assert!(!p.frozen());
        let fresh: Vec<u16> = (0..EXPLORE_AFTER_FREEZE).map(|_| p.next(&c, C)).collect();
        assert_eq!(fresh, (0..16).map(|k| fresh_ev(1, 2, 5000, k, 256)).collect::<Vec<_>>(), "explore");
        p.feedback(&c, 5000, 12, Feedback::Good, t + Time::from_us(102));
        let next: Vec<u16> = (0..3).map(|_| p.next(&c, C)).collect();
        assert_eq!(next[..2], [11, 12], "emptied at the thaw, 9 and 10 gone; 11, heard then, stays");
        assert_eq!(next[2], fresh_ev(1, 2, 5000, 16, 256));
        // A timeout while exploring does not freeze.
        let mut q = EvPicker { explore: 2, ..EvPicker::default() };
        q.feedback(&c, 5000, 0, Feedback::Timeout, t);
        assert!(!q.frozen());
    }

    /// A trimmed packet's EV sits out the next four rounds of the cycle (four picks pass over
    /// it, each taking a point off): 400 picks on 4 EVs take 404 positions of the cycle, 101
    /// rounds, so it is sent 97 times and each other EV 101 times. A CE mark costs it one
    /// round (403 picks: 100 and 101); an unmarked ACK and a timeout nothing (404 picks, 101
    /// each).
    #[test]
    fn the_bitmap_passes_over_a_penalised_entropy_for_as_many_rounds_as_its_penalty() {
        for (what, penalty) in
            [(Feedback::Trimmed, 4), (Feedback::Marked, 1), (Feedback::Good, 0), (Feedback::Timeout, 0)]
        {
            let (c, mut p) = (cfg(Spray::Bitmap, 4), EvPicker::default());
            let first = p.next(&c, C); // sizes the bitmap
            p.feedback(&c, 5000, 5002, what, Time::ZERO);
            let mut n = [0u32; 4];
            n[(first - 5000) as usize] += 1;
            for _ in 1..404 - penalty {
                n[(p.next(&c, C) - 5000) as usize] += 1;
            }
            let expected: Vec<u32> = (0..4).map(|i| if i == 2 { 101 - penalty } else { 101 }).collect();
            assert_eq!(n.to_vec(), expected, "{what:?}");
        }
        // Penalties add up to at most 15.
        let (c, mut p) = (cfg(Spray::Bitmap, 4), EvPicker::default());
        p.next(&c, C);
        for _ in 0..5 {
            p.feedback(&c, 5000, 5001, Feedback::Trimmed, Time::ZERO);
        }
        assert_eq!(p.penalty[1], MAX_PENALTY);
    }
}
