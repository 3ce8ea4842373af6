//! The integration tests in one binary (one link, one build): a module per subject, named
//! as its file, and `fixtures` for the helpers they share. Run one subject with
//! `cargo test --release -p rdmalab --test it attacks::`.
//!
//! Two stay binaries of their own: `alloc.rs` installs a counting global allocator (here it
//! would count every concurrent test's allocations), and `hpcc_s1.rs` changes the working
//! directory of its process.

mod fixtures;

mod attacks;
mod blitz;
mod blitz_inputs;
mod blitz_stagger;
mod cc;
mod cc_window;
mod chakra;
mod chakra_dims;
mod chakra_system;
mod classes;
mod collectives;
mod conweave;
mod dcqcn_shortcuts;
mod deadlock;
mod deferred_dequeues;
mod drum;
mod drum_fabric;
mod drum_room;
mod drum_starvation;
mod event_order;
mod failures;
mod formats;
mod formats_fuzz;
mod host_vs_switch;
mod hpcc_m4;
mod htsim_triggers;
mod ibcc;
mod ibcc_presets;
mod infiniband;
mod iofd;
mod irn;
mod layers;
mod lb;
mod limits;
mod multipath;
mod nvlink;
mod parallel;
mod parallel_balance;
mod parallel_drawn;
mod parallel_observers;
mod parallel_outputs;
mod parallel_peak;
mod pfc_headroom;
mod pfc_watchdog;
mod rail;
mod rccc;
mod rnr;
mod rnr_stagger;
mod sampling;
mod scale;
mod send_queue;
mod sim;
mod simai;
mod streamed_records;
mod switch_models;
mod transport;
mod uet;
mod uet_spray;
mod virtuoso;
mod virtuoso_lossy;
