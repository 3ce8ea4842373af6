//! Typed indices into the simulator's arenas.
//!
//! Components never hold references to each other; they hold these ids, which index the
//! `Vec`s that own the components. The newtypes stop a port id from being used as a node id.

macro_rules! identifier {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// No such item: the sentinel where an id is optional (`u32::MAX`, never an
            /// arena slot).
            pub const NONE: $name = $name(u32::MAX);

            /// True for the `NONE` sentinel.
            #[inline]
            pub const fn is_none(self) -> bool {
                self.0 == u32::MAX
            }

            /// The index into the owning arena.
            #[inline]
            pub const fn idx(self) -> usize {
                self.0 as usize
            }
            /// Builds the id of arena slot `i`.
            #[inline]
            pub const fn new(i: usize) -> Self {
                $name(i as u32)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

identifier!(
    /// A node (host or switch); equal to the node id of the ns-3 topology file.
    NodeId
);
identifier!(
    /// A host's RNIC: its row in the simulator's NIC arena (`NONE` for a switch node).
    NicId
);
identifier!(
    /// A switch: its row in the simulator's switch arenas (MMUs, ECN RNGs, IOFD state;
    /// `NONE` for a host node).
    SwitchId
);
identifier!(
    /// A full-duplex link.
    LinkId
);
identifier!(
    /// One end of a link: the egress side of a node's interface.
    PortId
);
identifier!(
    /// A queue pair.
    QpId
);
/// A QP named across the whole fabric: its sending host and that host's slot for it. A
/// slot alone names a QP only within one partition of a parallel run (a QP opened while
/// running takes the next slot of its own partition), so state a switch keeps per QP is
/// keyed by this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QpKey(pub NodeId, pub QpId);

identifier!(
    /// A flow (one message of one QP, as the ns-3 flow file defines it) or a message.
    FlowId
);
identifier!(
    /// A congestion-control state shared by one or more QPs (enforcement granularity).
    CcGroupId
);
identifier!(
    /// A host application: its row in the simulator's one application table (`sim::apps`).
    /// The attack generators of a scenario take the first rows, in the order its traffic
    /// lists them, so a flow names the generator that carries it by this id. `NONE`: no
    /// application (a plain flow's message, or a QP whose deliveries nobody hears of).
    AppId
);
identifier!(
    /// Where a WR's in-payload application header is stored (`app::Headers`): the packets
    /// of the WR carry this slot instead of the header. `NONE`: no header (a packet that
    /// does not end a WR written by an application).
    HeaderSlot
);

identifier!(
    /// A DRUM scheduler (the DRUM paper): one per host whose applications it posts and polls for,
    /// numbered in the order the hosts' first applications appear (`sim::apps::drum`).
    /// `NONE`: no scheduler (in DRUM's in-band control, the coordinator's end of a connection).
    AgentId
);
