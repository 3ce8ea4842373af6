//! Optional mechanisms of the fabric and the RNIC, each off unless the scenario asks for it:
//! Blitz's DASR receiver, in-order flow deflection, the tenant defense, the retry limit, IRN's
//! loss recovery, link failures and DCQCN's byte counter.
//! A run without one pays at most a flag test per packet for it (see ARCHITECTURE.md,
//! "Hooks"). Each hook is a function handed the state it touches, not the simulation; what
//! only the simulator can carry out (a drop, a PFC frame, a switch admission, a completion)
//! stays with the simulator's own handlers.

pub(crate) mod conweave;
pub(crate) mod dasr;
pub(crate) mod dcqcn_bytes;
pub mod failures;
pub(crate) mod ib;
pub(crate) mod ibcc;
pub(crate) mod iofd;
pub(crate) mod irn;
pub(crate) mod port_buffers;
pub(crate) mod retry;
pub(crate) mod tenancy;
pub(crate) mod transport;
