//! Typed indices into the simulator's arenas.
//!
//! Components never hold references to each other; they hold these ids, which index the
//! `Vec`s that own the components. The newtypes stop a port id from being used as a node id.

macro_rules! identifier {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
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
    /// lists them, so a flow names the generator that carries it by this id.
    AppId
);
identifier!(
    /// Where a WR's in-payload application header is stored (`app::Headers`): the packets
    /// of the WR carry this slot instead of the header.
    HeaderSlot
);

identifier!(
    /// A DRUM scheduler (seed 000): one per host whose applications it posts and polls for,
    /// numbered in the order the hosts' first applications appear (`sim::apps::drum`).
    AgentId
);

impl AgentId {
    /// No scheduler: in DRUM's in-band control, the coordinator's end of a connection.
    pub const NONE: AgentId = AgentId(u32::MAX);

    /// True for [`AgentId::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == u32::MAX
    }
}

impl AppId {
    /// No application: a plain flow's message, or a QP whose deliveries nobody hears of.
    pub const NONE: AppId = AppId(u32::MAX);

    /// True for [`AppId::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == u32::MAX
    }
}

impl HeaderSlot {
    /// No header: a packet that does not end a WR written by an application.
    pub const NONE: HeaderSlot = HeaderSlot(u32::MAX);

    /// True for [`HeaderSlot::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == u32::MAX
    }
}
