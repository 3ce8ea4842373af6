//! What a mechanism's hook asks the simulator to carry out. A hook is a free function over a
//! view of the state it reads (`SwitchView`) and its own state; what changes anything else
//! (a switch's buffer, a port's queue, the event queue, an application) it appends here, and
//! the carry-out (`sim/switch/carry_out.rs`) applies the list in the order it was written.
//! A run whose hooks never fire never touches the list.

use crate::fabric::{Packet, PacketRef, PortState, SwitchMmu, TxClock};
use crate::ids::PortId;
use crate::sim::Event;
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;

/// One step a hook asks for.
#[derive(Clone, Copy, Debug)]
pub(in crate::sim) enum Action {
    /// The one admission at ingress `at` (`switch::admit`: the shared MMU or the port's
    /// buffer, a PAUSE when a threshold is crossed, a drop when full), then `egress`'s queue
    /// (`queue`, or the class the packet was admitted in). A failed egress loses it.
    Enqueue { at: PortId, egress: PortId, r: PacketRef, queue: Option<u8> },
    /// `Enqueue` for a packet a mechanism held outside the buffer (ConWeave under
    /// `conweave_admit_on_release`, as the ns-3 artifact does); a refusal counts as ConWeave's
    /// `release_drops`. Such a run is not lossless (`Mechanisms::keeps_lossless`).
    AdmitReleased { at: PortId, egress: PortId, r: PacketRef },
    /// A packet admitted earlier (and held by the mechanism) into `egress`'s queue `class`,
    /// without a second admission; the port's scheduler is left to a `Kick`.
    Requeue { egress: PortId, class: u8, r: PacketRef, wire: u32 },
    /// The one admission at `at` for `egress`, then back to ConWeave's reorder queue `queue`
    /// instead of an egress queue (`mech::conweave::held`).
    Hold { at: PortId, egress: PortId, r: PacketRef, queue: u32 },
    /// Start `port`'s transmitter if it is idle (a switch's scheduler or the RNIC's).
    Kick(PortId),
    /// An event at a time (a mechanism's timer).
    Timer(Time, Event),
    /// A link-level frame out of `port` ahead of data: a switch's queue 0, the front of an
    /// RNIC's ACK queue (InfiniBand's credit updates). Nothing crosses a failed link.
    Frame { port: PortId, frame: Packet },
    /// A failed link's end: the packets on the wire leaving this port never arrive.
    LoseWire(PortId),
    /// A failed link's end at a switch: the packets queued for it are discarded (their
    /// buffer released, which may resume upstream).
    DiscardQueued(PortId),
    /// The host gives up QP's messages: its destination has no route any more.
    AbandonQp(crate::ids::QpId),
    /// Offer IOFD's waiting line at switch `sw` to its buffer, head first (`mech::iofd::wake`).
    WakeIofd { sw: usize },
    /// A switch drops, on purpose, the packets queued in `port`'s egress queue `class`:
    /// their buffer is released (which may resume upstream) and they count among
    /// `Mechanisms::deliberate_drops`, which the lossless check exempts.
    DiscardClass { port: PortId, class: u8 },
    /// `port`'s transmitter stops honouring a PAUSE for `class` now (no frame arrived),
    /// then is kicked.
    Unpause { port: PortId, class: u8 },
    /// `port` sends a PAUSE for `class` (again: a refresh), counted as any PAUSE.
    Pfc { port: PortId, class: u8 },
    /// The pause `port`'s transmitter obeys for `class` ran out: it resumes as at a RESUME
    /// (the deadlock watch told, the port kicked), with no frame recorded.
    PauseExpired { port: PortId, class: u8 },
}

/// What a switch-side hook reads of the fabric at its switch: split borrows of the
/// simulation's arenas, built inline by the caller (`Simulation::switch_view`).
pub(in crate::sim) struct SwitchView<'a> {
    /// The time of the event being handled.
    pub now: Time,
    /// Every port's state (queues, which face hosts, which are down).
    pub ports: &'a [PortState],
    /// The packet pool: a hook may park a packet it hands to an action, and read or mark
    /// the packets it is given.
    pub packets: &'a mut crate::fabric::PacketPool,
    /// The routing tables (equal-cost next hops).
    pub routes: &'a Routes,
    /// The graph (a port's peer, a node's ports).
    pub topo: &'a Topology,
    /// Every switch's shared buffer (read only: admission is the carry-out's).
    pub mmus: &'a [SwitchMmu],
    /// Transmission times per rate and size.
    pub clock: &'a TxClock,
}
