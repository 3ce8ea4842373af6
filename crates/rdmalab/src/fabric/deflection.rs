//! Blitz's in-order flow deflection (IOFD, the Blitz poster's §2 ¶3): a switch feature, usable with
//! any congestion control. See `docs/blitz.md` for the rules marked † (ours: the poster
//! gives no hardware detail).
//!
//! A data packet is deflected iff the egress queue ECMP chose holds at least `threshold`
//! bytes of its class, the packet has been deflected fewer than `max_deflections` times,
//! and an alternative egress is below its threshold. Otherwise it queues (and is marked)
//! as without IOFD: the DCQCN fall-back for congestion with no free path.
//!
//! * Minimal paths: the least-loaded other equal-cost next hop (ECMP's up-down routes, so
//!   no new routing cycle).
//! * Non-minimal (`paths = "nonminimal"`): also other switch-facing ports (never the
//!   ingress) whose switch has a route to the destination not leading straight back. Such
//!   a packet leaves in the escape class (`escape_pg`) and is routed minimally from then on
//!   (Duato's escape channel, [2] of the seed) †. The last hop returns it to its own class
//!   before re-sequencing (host-facing queues always drain, so no cycle runs through them).
//! * A deflected flow keeps its new port while it has packets queued here † (a pin per QP
//!   and switch), so its packets stay in order within the switch.
//!
//! The last switch before the receiver puts each QP's packets back in order
//! ([`super::resequencer`]).
//!
//! State belongs to one switch each ([`SwitchIofd`]); the simulator's glue is `sim::iofd`.

use std::collections::HashMap;

use super::resequencer::Resequencer;
use crate::ids::{PortId, QpKey};
use crate::units::Time;

/// The deflection count lives in the low bits of `Packet::deflections`.
pub const COUNT_MASK: u8 = 0x07;
/// Bits 3..6: the class an escaped packet had before (0: never escaped); the last hop puts
/// it back, so that all of a QP's packets leave it through one queue, in order.
pub const CLASS_SHIFT: u8 = 3;
/// Mask of the saved class.
pub const CLASS_MASK: u8 = 0x38;
/// Flag on a packet queued here under a pin (its dequeue releases the pin).
pub const PINNED: u8 = 0x40;
/// At the last hop (where no pins exist) the same bit marks a packet the re-sequencer let
/// go: its departure frees MMU space that packets waiting there may need
/// (`sim::iofd::iofd_wake`); releasing its (absent) pin does nothing.
pub const WAKE: u8 = PINNED;
/// Flag on a packet deflected off the minimal paths: it leaves in the escape class.
pub const ESCAPE: u8 = 0x80;
/// Flags that ask for work when the packet leaves the switch.
pub const ON_DEQUEUE: u8 = PINNED | ESCAPE;
/// The largest `max_deflections` the count field holds.
pub const MAX_DEFLECTIONS: u8 = COUNT_MASK;

/// IOFD settings (`[fabric.iofd]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IofdConfig {
    /// Deflections allowed per packet (livelock bound) [max_deflections], 2.
    pub max_deflections: u8,
    /// Queue bytes at which a packet is deflected [threshold]; 0 = the egress port's ECN
    /// Kmin, so that a packet is deflected before it would be marked.
    pub threshold: u64,
    /// Also deflect to non-minimal ports [paths = "nonminimal"].
    pub nonminimal: bool,
    /// Class of packets deflected off the minimal paths [escape_pg], 5.
    pub escape_pg: u8,
    /// Bytes the last hop may hold for re-sequencing [resequence_kb × 1024], 1 MiB.
    pub resequence_bytes: u64,
    /// Lossy runs: a held packet older than this goes as is [resequence_timeout], 100 µs.
    pub resequence_timeout: Time,
    /// Re-sequence at the last hop (off only in tests, to show the reordering it removes).
    pub resequence: bool,
}

impl Default for IofdConfig {
    fn default() -> Self {
        IofdConfig {
            max_deflections: 2,
            threshold: 0,
            nonminimal: false,
            escape_pg: 5,
            resequence_bytes: 1024 * 1024,
            resequence_timeout: Time::from_us(100),
            resequence: true,
        }
    }
}

/// The fabric's IOFD state: settings, per-port thresholds and each switch's own state.
#[derive(Clone, Debug)]
pub struct Iofd {
    /// Settings.
    pub cfg: IofdConfig,
    /// Deflection threshold of every port, bytes (indexed by port id).
    pub thresholds: Vec<u64>,
    /// Per switch (indexed by switch index).
    pub switches: Vec<SwitchIofd>,
    /// Re-sequencing timeout, only in lossy runs.
    pub timeout: Option<Time>,
    /// What the switches did (reported as the run's `deflections`, `resequenced` and
    /// `reseq_escapes`).
    pub tally: IofdTally,
}

/// IOFD's counts over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IofdTally {
    /// Deflection decisions (a packet deflected at two switches counts twice).
    pub deflections: u64,
    /// Packets a last hop held and released in order.
    pub resequenced: u64,
    /// Packets a last hop let through out of order (buffer full, or lossy timeout).
    pub reseq_escapes: u64,
}

impl Iofd {
    /// Payload bytes held by every re-sequencer.
    pub fn held_payload(&self) -> u64 {
        self.switches.iter().map(|s| s.reseq.held_payload()).sum()
    }
    /// Packets held by every re-sequencer.
    pub fn held_packets(&self) -> usize {
        self.switches.iter().map(|s| s.reseq.held_packets()).sum()
    }
}

/// Where a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The ECMP port (no deflection).
    Ecmp,
    /// Another port; `escape`: off the minimal paths.
    Deflect {
        /// The port.
        port: PortId,
        /// Leaves in the escape class.
        escape: bool,
    },
}

/// A flow's port at one switch while it has packets queued there.
#[derive(Clone, Copy, Debug)]
struct Pin {
    port: PortId,
    queued: u32,
    escape: bool,
}

/// One switch's IOFD state: pins and the re-sequencing buffer.
#[derive(Clone, Debug, Default)]
pub struct SwitchIofd {
    pins: HashMap<QpKey, Pin>,
    /// The last-hop re-sequencer (used only for packets to this switch's hosts).
    pub reseq: Resequencer,
    /// A retry of the re-sequencer's waiting line is scheduled (`sim::iofd`).
    pub retry_pending: bool,
}

/// What the decision needs to know about one candidate port.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// The port.
    pub port: PortId,
    /// Bytes queued in the packet's class.
    pub queued: u64,
    /// Its deflection threshold.
    pub threshold: u64,
}

impl Load {
    fn free(&self) -> bool {
        self.queued < self.threshold
    }
}

/// The least-loaded free port among `cands`, lowest port id on ties (deterministic).
pub fn least_loaded(cands: impl Iterator<Item = Load>) -> Option<Load> {
    cands.filter(Load::free).min_by_key(|l| (l.queued, l.port))
}

impl SwitchIofd {
    /// The pinned port of `qp`, if it has packets queued under a pin here.
    pub fn pin(&self, qp: QpKey) -> Option<(PortId, bool)> {
        self.pins.get(&qp).map(|p| (p.port, p.escape))
    }

    /// One more packet of `qp` queued at `port` under a pin (creating it).
    pub fn hold_pin(&mut self, qp: QpKey, port: PortId, escape: bool) {
        let pin = self.pins.entry(qp).or_insert(Pin { port, queued: 0, escape });
        pin.port = port;
        pin.escape = escape;
        pin.queued += 1;
    }

    /// A pinned packet of `qp` left (or was dropped); the last one removes the pin.
    pub fn release_pin(&mut self, qp: QpKey) {
        if let Some(pin) = self.pins.get_mut(&qp) {
            pin.queued -= 1;
            if pin.queued == 0 {
                self.pins.remove(&qp);
            }
        }
    }

    /// Pins still held (zero once every queue here is empty).
    pub fn pins_held(&self) -> usize {
        self.pins.len()
    }
}

/// The decision for a packet whose ECMP port is `ecmp`, deflected `count` times so far:
/// the least-loaded free equal-cost port, else (non-minimal) the least-loaded free other
/// port, else ECMP.
pub fn choose(
    ecmp: Load,
    count: u8,
    max: u8,
    minimal: impl Iterator<Item = Load>,
    nonminimal: impl Iterator<Item = Load>,
) -> Choice {
    if ecmp.free() || count >= max {
        return Choice::Ecmp;
    }
    if let Some(l) = least_loaded(minimal.filter(|l| l.port != ecmp.port)) {
        return Choice::Deflect { port: l.port, escape: false };
    }
    match least_loaded(nonminimal) {
        Some(l) => Choice::Deflect { port: l.port, escape: true },
        None => Choice::Ecmp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{NodeId, QpId};

    fn load(port: u32, queued: u64) -> Load {
        Load { port: PortId(port), queued, threshold: 100 }
    }

    #[test]
    fn deflects_only_from_a_full_queue_to_a_free_one() {
        let none = std::iter::empty::<Load>;
        let mins = || [load(1, 150), load(2, 40), load(3, 20)].into_iter();
        assert_eq!(choose(load(1, 99), 0, 2, mins(), none()), Choice::Ecmp, "below threshold");
        assert_eq!(choose(load(1, 150), 0, 2, mins(), none()), Choice::Deflect { port: PortId(3), escape: false });
        assert_eq!(choose(load(1, 150), 2, 2, mins(), none()), Choice::Ecmp, "out of deflections");
        let full = || [load(1, 150), load(2, 100)].into_iter();
        assert_eq!(choose(load(1, 150), 0, 2, full(), none()), Choice::Ecmp, "no free alternative: fall back");
        let far = [load(7, 10)].into_iter();
        assert_eq!(choose(load(1, 150), 1, 2, full(), far), Choice::Deflect { port: PortId(7), escape: true });
    }

    #[test]
    fn pins_count_queued_packets() {
        let mut s = SwitchIofd::default();
        let q = QpKey(NodeId(0), QpId(3));
        s.hold_pin(q, PortId(9), false);
        s.hold_pin(q, PortId(9), false);
        assert_eq!(s.pin(q), Some((PortId(9), false)));
        s.release_pin(q);
        assert_eq!(s.pins_held(), 1);
        s.release_pin(q);
        assert_eq!(s.pin(q), None);
    }
}
