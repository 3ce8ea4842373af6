//! Readers and writers of the ns-3 HPCC simulator and htsim file formats, and SimAI's workload
//! text (`simai`, docs/collectives.md).
//!
//! Every reader takes the text and the path it came from (used in error messages only) and
//! has a `read_*` twin that opens the file. Readers never panic on bad input: each problem is
//! an [`Error::Input`](crate::Error::Input) naming the file, the line and the field. The
//! formats themselves are described in docs/formats.md, after the code that reads and writes
//! them: `simulation/scratch/third.cc` of the ns-3 HPCC simulator
//! (alibaba-edu/High-Precision-Congestion-Control) and, for htsim,
//! `sim/datacenter/connection_matrix.cpp`.

pub mod chakra;
pub mod fct;
pub mod hpcc_config;
pub mod hpcc_flow;
pub mod hpcc_m4;
pub mod hpcc_topology;
pub mod htsim_cm;
pub mod partition_map;
pub mod pfc;
pub mod simai;
pub(crate) mod tokens;
pub mod units_parse;
