//! The validated scenario: everything a run consumes. The TOML and JSON parser
//! (`scenario`), the reference's config reader (`hpcc_compat`) and the Python bindings
//! build it; `sim` turns it into a `Simulation` (`Scenario::simulation`).

use super::SimConfig;
use crate::app::collective::Collective;
use crate::app::deps::TransferGraph;
use crate::app::host_model::HostModelSpec;
use crate::app::trace_nodes::JobRecords;
use crate::multipath::MpTraffic;
use crate::topology::Topology;
use crate::workload::attacks::HostApp;
use crate::workload::FlowSpec;

/// A scenario ready to simulate.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The network.
    pub topology: Topology,
    /// Flows sorted by start time.
    pub flows: Vec<FlowSpec>,
    /// Host applications that carry the flows whose `app` names them.
    pub apps: Vec<HostApp>,
    /// Tenant names by index (`default` first).
    pub tenants: Vec<String>,
    /// Settings.
    pub config: SimConfig,
    /// Multipath traffic, set up on the simulation by [`Scenario::simulation`].
    pub multipath: Vec<MpTraffic>,
    /// Closed-loop applications and their host model, set up by [`Scenario::simulation`].
    pub host_model: Option<HostModelSpec>,
    /// Collectives (`[[collective]]`), set up by [`Scenario::simulation`].
    pub collectives: Vec<Collective>,
    /// Dependency-driven jobs started at time 0 (an htsim connection matrix's triggered
    /// connections, `formats::htsim_cm::CmTraffic`; a SimAI workload's iteration,
    /// `formats::simai::iteration`), set up by [`Scenario::simulation`] after the collectives.
    pub jobs: Vec<TransferGraph>,
    /// What `jobs[i]` records beyond its transfers (a SimAI iteration's communications as
    /// collectives of their own, a Chakra trace's nodes; nothing for an htsim job):
    /// `job_parts[i]`, where given.
    pub job_parts: Vec<JobRecords>,
}

impl Scenario {
    /// A scenario of plain flows.
    pub fn new(topology: Topology, flows: Vec<FlowSpec>, config: SimConfig) -> Scenario {
        Scenario {
            topology,
            flows,
            apps: Vec::new(),
            tenants: vec![crate::tenancy::DEFAULT_TENANT.into()],
            config,
            multipath: Vec::new(),
            host_model: None,
            collectives: Vec::new(),
            jobs: Vec::new(),
            job_parts: Vec::new(),
        }
    }
}
