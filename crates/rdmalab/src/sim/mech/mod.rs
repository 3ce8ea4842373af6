//! Optional mechanisms of the fabric and the RNIC, each off unless the scenario asks for it:
//! Blitz's DASR receiver, in-order flow deflection, the retry limit and link failures.
//! A run without one pays at most a flag test per packet for it (see ARCHITECTURE.md,
//! "Hooks").

pub(crate) mod dasr;
pub mod failures;
pub(crate) mod ib;
pub(crate) mod ibcc;
pub(crate) mod iofd;
pub(crate) mod port_buffers;
pub(crate) mod retry;
pub(crate) mod tenancy;
