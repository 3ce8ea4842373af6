//! Probes and levers for tests of a mechanism's state that no output table carries.

use crate::ids::NodeId;
use crate::sim::mech::ib;
use crate::sim::Simulation;

impl Simulation {
    /// Test lever: the input buffer of `host`'s port stops draining (its RNIC returns no
    /// more credits), as a receiver that stopped consuming (InfiniBand runs only).
    #[doc(hidden)]
    pub fn ib_hold_credits(&mut self, host: NodeId) {
        let port = self.topo.nodes[host.idx()].ports[0];
        if let Some(links) = self.mech.ib.as_deref_mut() {
            ib::hold_credits(links, port);
        }
    }

    /// Packets that found no room in an input buffer, and the most bytes one input VL
    /// buffer held (`None` on RoCE). Checks of the credit loop for tests.
    #[doc(hidden)]
    pub fn ib_buffer_check(&self) -> Option<(u64, u64)> {
        self.mech.ib.as_deref().map(|l| (l.overruns(), l.max_held_bytes()))
    }
}
