//! The fabric: packets, ports with their links, switch buffers (shared-buffer MMU with PFC),
//! ECN marking and INT stamping. The per-event handlers that move packets between these
//! pieces live in `sim`; this module holds the state and the decisions.

pub mod classes;
pub mod deflection;
pub mod ecn;
pub mod int;
pub mod mmu;
pub mod packet;
pub mod pool;
pub mod port;
pub mod resequencer;
pub mod txclock;

pub use deflection::IofdConfig;
pub use ecn::{EcnConfig, EcnParams};
pub use int::{IntHeader, IntHop, IntSlab};
pub use mmu::{Admission, MmuConfig, SwitchMmu};
pub use packet::{Packet, PacketKind};
pub use pool::{PacketPool, PacketRef};
pub use port::PortState;
pub use txclock::TxClock;

/// Number of priority classes (queues) per port, as on the reference's switches.
pub const NUM_PRIOS: usize = 8;
