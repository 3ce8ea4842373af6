//! rdmalab: a packet-level simulator of lossless RDMA fabrics (RoCEv2), and the
//! mechanisms built on it (DRUM, multipath, CC attacks, Virtuoso, Blitz).
//!
//! Layers, bottom to top (each uses only its own layer and those below; `tests/layers.rs`
//! holds the same list and fails on an import against it or on a cycle):
//! `units`/`ids`/`error` → `engine` → `topology` → `fabric` → `rnic`/`cc`/`tenancy`/`drum`
//! → `app` → `multipath`/`workload` → `stats` → `formats` → `config` (what a run is asked
//! to do: the validated `Scenario` and `SimConfig`) → `sim` (the world and its event loop)
//! → `scenario`/`hpcc_compat` (what builds a `config::Scenario` from a file).
//! `drum` is a solver library used by host agents; it does not depend on the fabric.
//! `sim` never imports `scenario`, and `config` imports neither.
#![warn(missing_debug_implementations, missing_docs, unreachable_pub)]

pub mod app;
pub mod cc;
pub mod config;
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
pub mod tenancy;
pub mod topology;
pub mod units;
pub mod workload;

pub use error::{Error, Result};
pub use ids::*;
pub use units::{Rate, Time, TimingModel};
