//! Building a `Simulation` from a validated `config::Scenario`: its flows and host
//! applications, then the multipath connections and closed loops it asks for.
//!
//! These are inherent methods of `config`'s types written here, so that `config` never
//! names `Simulation` and `sim` never needs the parser (`scenario`).

use std::collections::HashMap;

use super::Simulation;
use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::multipath::{MpConnId, MpTraffic, MpWr};
use crate::units::Time;

impl Simulation {
    /// A whole scenario: its topology, flows, host applications, tenant names and
    /// multipath connections (`Scenario::simulation`).
    pub fn from_scenario(s: Scenario) -> Result<Simulation> {
        s.simulation()
    }
}

impl Scenario {
    /// Builds the simulation: the flows, and the multipath connections with their messages.
    pub fn simulation(self) -> Result<Simulation> {
        let mut sim = Simulation::with_apps(self.topology, self.flows, &self.apps, self.tenants, self.config)?;
        for mp in &self.multipath {
            mp.set_up(&mut sim)?;
        }
        if let Some(h) = &self.host_model {
            sim.host_model_set_up(h)?;
        }
        for (i, c) in self.collectives.iter().enumerate() {
            sim.add_collective(c).map_err(|e| match e {
                Error::Scenario { field, msg } => Error::scenario(format!("collective[{i}].{field}"), msg),
                other => other,
            })?;
        }
        let mut parts = self.job_parts.into_iter();
        for (i, g) in self.jobs.into_iter().enumerate() {
            sim.add_recorded_transfers(g, Time::ZERO, parts.next().unwrap_or_default()).map_err(|e| match e {
                Error::Scenario { field, msg } => Error::scenario(format!("job[{i}].{field}"), msg),
                other => other,
            })?;
        }
        Ok(sim)
    }
}

impl MpTraffic {
    /// Opens one connection per distinct (src, dst) in order of first appearance, posts
    /// every message on its pair's connection, and disconnects them once all are posted.
    pub fn set_up(&self, sim: &mut Simulation) -> Result<()> {
        // In order of opening (disconnects follow it), and by pair: a list searched per
        // message cost messages × pairs (137 k × 16 k in a 128-host all-to-all).
        let mut conns: Vec<MpConnId> = Vec::new();
        let mut by_pair: HashMap<(NodeId, NodeId), MpConnId> = HashMap::new();
        for (i, &(src, dst, size, start)) in self.messages.iter().enumerate() {
            let conn = match by_pair.get(&(src, dst)) {
                Some(&c) => c,
                None => {
                    let c = sim.mp_connect(src, dst, &self.config)?;
                    by_pair.insert((src, dst), c);
                    conns.push(c);
                    c
                }
            };
            sim.mp_post_send(conn, MpWr { verb: self.verbs[i], size }, start)?;
        }
        for c in conns {
            sim.mp_disconnect(c)?;
        }
        Ok(())
    }
}
