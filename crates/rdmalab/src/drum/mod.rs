//! DRUM: RDMA resource scheduling as network utility maximisation (the DRUM paper), as a solver
//! library that host agents call every control period (warm-started).
//!
//! The paper's model is non-convex and unbounded as printed; this module implements the
//! sound formulation of `docs/drum.md`:
//! - [`problem`]: the convex model (P), its validation and the optimal top-k active set;
//! - [`admm`]: scaled ADMM with per-(host, app) duals, parallel over hosts;
//! - [`rows`] / [`roots`]: the safeguarded Newton kernels of the block updates;
//! - [`dual`]: the dual-decomposition (subgradient) baseline on the same model;
//! - [`exact`]: one host's exact optimum from its KKT system (a DRUM agent's solve);
//! - [`kkt`]: an independent optimality certificate;
//! - [`network`]: the network-wide model (receiver-side CQ load, fabric links) solved by
//!   sharing ADMM between host agents and a coordinator;
//! - [`links`]: fabric link capacities and shares from a topology's routing (ECMP);
//! - [`instance`]: instances generated as in the paper's simulations.

pub mod admm;
pub mod dual;
pub mod exact;
pub mod instance;
pub mod kkt;
pub mod links;
pub mod network;
pub mod problem;
pub mod roots;
pub mod rows;

pub use admm::{solve_admm, Admm, AdmmResult, AdmmSettings, AdmmState, IterRecord};
pub use dual::{solve_dual, DualRecord, DualResult, DualSettings};
pub use instance::{paper_instance, Instance};
pub use kkt::{certify, KktReport};
pub use links::{Fabric, LinkRoutes, PairLinks, RouteOptions, Spread};
pub use network::{Agent, AgentReport, Coordinator, NetworkProblem, NetworkResult};
pub use problem::{ActiveSet, CapacityForm, Problem};
