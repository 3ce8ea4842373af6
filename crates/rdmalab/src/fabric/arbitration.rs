//! Fair arbitration among input ports at a switch egress (`fabric.egress_arbitration`).
//!
//! The reference's egress queue is one FIFO per class: packets leave in arrival order, so an
//! input port that delivers more packets per unit time gets more of the egress. The CC-attack paper's
//! testbed switch (Mellanox SN2100) instead "shares the bandwidth fairly between the two
//! input ports" (§IV-A, the "16 No CC" bar of Fig. 3, and "per-port fair sharing on the
//! switch" behind Fig. 4). `input_fair` models that: each egress queue (per class) keeps one
//! FIFO per input port and serves the input ports that hold packets for it in deficit round
//! robin by bytes (Shreedhar & Varghese, SIGCOMM 1995), quantum one full data frame, so that
//! every turn sends at least one packet.
//!
//! Only the order of service changes: the packets stay parked in the pool, their buffer is
//! accounted at admission and release exactly as under FIFO, and the port's per-class byte
//! counts (ECN, INT, samples) count them as queued. The port's own queue of the class holds
//! at most one packet, the next one to leave, picked when the one before it left; DRR never
//! lets a newly backlogged input overtake the one whose turn it is, so picking one packet
//! early gives the same order as picking at the moment the link frees.

use std::collections::VecDeque;

use crate::fabric::{PacketRef, NUM_PRIOS};

/// How a switch egress queue orders the packets of its class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EgressArbitration {
    /// Arrival order (the reference simulator's switches).
    #[default]
    Fifo,
    /// Deficit round robin among input ports, by bytes (the CC-attack paper's SN2100).
    InputFair,
}

/// The input-port arbiter of one switch egress port: per class, one FIFO per input port
/// and the round robin over the inputs that hold packets. Class 0 (PFC frames the switch
/// makes, high-priority ACKs) is not arbitrated: it stays FIFO.
#[derive(Clone, Debug)]
pub struct InputArbiter {
    /// Bytes an input may send per turn: one full data frame.
    quantum: u32,
    /// Input ports of the switch (the FIFOs of a class are indexed by the input's position).
    inputs: usize,
    classes: [ClassArbiter; NUM_PRIOS],
}

/// The arbiter of one class; its FIFOs are made when the class first carries a packet, so
/// that a run pays memory only for the classes it uses.
#[derive(Clone, Debug, Default)]
struct ClassArbiter {
    inputs: Vec<InputFifo>,
    /// Inputs holding packets, in turn order; the front one is being served.
    active: VecDeque<u16>,
}

/// The packets of one input port waiting for one (egress, class), with their wire bytes.
#[derive(Clone, Debug, Default)]
struct InputFifo {
    packets: VecDeque<(PacketRef, u32)>,
    /// Bytes this input may still send in its current turn.
    deficit: u32,
}

impl InputArbiter {
    /// An empty arbiter for an egress of a switch with `inputs` ports, quantum `quantum`
    /// bytes (at least the largest frame, so that every turn sends a packet).
    pub fn new(inputs: usize, quantum: u32) -> InputArbiter {
        assert!(quantum > 0, "a DRR quantum of 0 never serves anything");
        InputArbiter { quantum, inputs, classes: Default::default() }
    }

    /// Whether class `q` is arbitrated (every class but the control class 0).
    #[inline]
    pub fn arbitrates(q: usize) -> bool {
        q != 0
    }

    /// Adds the packet parked at `r` (`wire` bytes) that came in through input `input`.
    pub fn push(&mut self, q: usize, input: u16, r: PacketRef, wire: u32) {
        let c = &mut self.classes[q];
        if c.inputs.is_empty() {
            c.inputs = vec![InputFifo::default(); self.inputs];
        }
        let f = &mut c.inputs[input as usize];
        if f.packets.is_empty() {
            // Newly backlogged: its turn comes after every input already waiting.
            f.deficit = self.quantum;
            c.active.push_back(input);
        }
        f.packets.push_back((r, wire));
    }

    /// The next packet of class `q` in deficit round robin order, taken out of the arbiter.
    pub fn pop(&mut self, q: usize) -> Option<PacketRef> {
        let c = &mut self.classes[q];
        loop {
            let input = *c.active.front()?;
            let f = &mut c.inputs[input as usize];
            let (r, wire) = *f.packets.front().expect("an active input holds packets");
            if f.deficit >= wire {
                f.deficit -= wire;
                f.packets.pop_front();
                if f.packets.is_empty() {
                    // An input that empties loses what is left of its turn (DRR's rule).
                    f.deficit = 0;
                    c.active.pop_front();
                }
                return Some(r);
            }
            // Its turn is over: to the back, with the next turn's quantum.
            f.deficit += self.quantum;
            c.active.rotate_left(1);
        }
    }

    /// The packets of class `q` the arbiter holds (not yet picked), input by input.
    pub fn held(&self, q: usize) -> impl Iterator<Item = PacketRef> + '_ {
        self.classes[q].inputs.iter().flat_map(|f| f.packets.iter().map(|&(r, _)| r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{Packet, PacketKind, PacketPool};

    /// Parks a packet whose `seq` names it.
    fn park(pool: &mut PacketPool, name: u64) -> PacketRef {
        let mut p = Packet::pfc(PacketKind::Pause, 1, 1000);
        p.kind = PacketKind::Data;
        p.seq = name;
        pool.park(p)
    }

    fn drain(a: &mut InputArbiter, q: usize, pool: &PacketPool) -> Vec<u64> {
        std::iter::from_fn(|| a.pop(q)).map(|r| pool.get(r).seq).collect()
    }

    #[test]
    fn equal_packets_alternate_between_inputs_whatever_their_arrival_order() {
        let mut pool = PacketPool::default();
        let mut a = InputArbiter::new(3, 1048);
        // Input 0 delivers four packets before input 2's two arrive.
        for i in 0..4 {
            a.push(1, 0, park(&mut pool, i), 1048);
        }
        a.push(1, 2, park(&mut pool, 10), 1048);
        a.push(1, 2, park(&mut pool, 11), 1048);
        assert_eq!(drain(&mut a, 1, &pool), vec![0, 10, 1, 11, 2, 3]);
    }

    #[test]
    fn bytes_not_packets_are_shared() {
        // Input 0 sends 1000-byte frames, input 1 250-byte ones: per round of 1000 bytes of
        // quantum, one large packet against four small ones.
        let mut pool = PacketPool::default();
        let mut a = InputArbiter::new(2, 1000);
        for i in 0..10 {
            a.push(3, 0, park(&mut pool, i), 1000);
        }
        for i in 100..140 {
            a.push(3, 1, park(&mut pool, i), 250);
        }
        let mut bytes = [0u64; 2];
        for _ in 0..25 {
            let name = pool.get(a.pop(3).unwrap()).seq;
            bytes[(name >= 100) as usize] += if name >= 100 { 250 } else { 1000 };
        }
        assert_eq!(bytes, [5000, 5000]);
        assert_eq!(a.held(3).count(), 25);
    }

    #[test]
    fn classes_are_arbitrated_apart() {
        let mut pool = PacketPool::default();
        let mut a = InputArbiter::new(2, 1000);
        a.push(1, 0, park(&mut pool, 1), 1000);
        a.push(2, 1, park(&mut pool, 2), 1000);
        assert_eq!(drain(&mut a, 2, &pool), vec![2]);
        assert_eq!(drain(&mut a, 1, &pool), vec![1]);
        assert!(a.classes[5].inputs.is_empty(), "an unused class has no FIFOs");
    }
}
