//! The fabric: packets, ports with their links, switch buffers (shared-buffer MMU with PFC),
//! ECN marking and INT stamping. The per-event handlers that move packets between these
//! pieces live in `sim`; this module holds the state and the decisions.

pub mod arbitration;
pub mod buffer_model;
pub mod classes;
pub mod deflection;
pub mod ecn;
pub mod fecn;
pub mod ib;
pub mod int;
pub mod lb;
pub mod mmu;
pub mod packet;
pub mod pool;
pub mod port;
pub mod resequencer;
pub mod transport;
pub mod txclock;
pub mod wire;

pub use arbitration::EgressArbitration;
pub use buffer_model::BufferModel;
pub use deflection::IofdConfig;
pub use ecn::{EcnConfig, EcnParams};
pub use ib::LinkLayer;
pub use int::{IntHeader, IntHop, IntSlab};
pub use mmu::{Admission, MmuConfig, MmuRule, SwitchMmu};
pub use packet::{Packet, PacketKind};
pub use pool::{PacketPool, PacketQueue, PacketRef};
pub use port::{PortCounters, PortState};
pub use txclock::TxClock;
pub use wire::Wire;

/// Asks the CPU to bring the cache line of `*p` closer: a hint with no effect on results.
/// Used where the event loop knows which packet and wire entry the next arrival on a link
/// will read, a packet time before it runs (the read would otherwise wait on a miss).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    // SAFETY: PREFETCHT0 never faults and reads nothing architecturally; any address is valid.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = p;
}

/// Number of priority classes (queues) per port, as on the reference's switches.
pub const NUM_PRIOS: usize = 8;
