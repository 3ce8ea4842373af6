//! rdmalab: a packet-level simulator of lossless RDMA fabrics (RoCEv2), and the
//! mechanisms built on it (DRUM, multipath, CC attacks, Virtuoso, Blitz).
//!
//! Layers, bottom to top: `units`/`ids` → `engine` → `topology` → `fabric` → `rnic`/`cc`
//! → `workload` → `sim` (the world and its event loop) → `stats`/`formats`.
//! `drum` is a solver library used by host agents; it does not depend on the fabric.
#![warn(missing_debug_implementations)]

pub mod app;
pub mod cc;
pub mod drum;
pub mod engine;
pub mod error;
pub mod fabric;
pub mod formats;
pub mod hpcc_compat;
pub mod ids;
pub mod multipath;
pub mod rnic;
pub mod scenario;
pub mod sim;
pub mod stats;
pub mod topology;
pub mod units;
pub mod workload;

pub use error::{Error, Result};
pub use ids::*;
pub use units::{Rate, Time, TimingModel};
