//! Which of a host's NICs sends to a destination: the hook of hosts with a port per
//! destination class (a GPU's NVLink beside its rail NIC, `topology::nvlink`).
//!
//! Every other host has one NIC, on its first port, and pays one test of a flag. A host
//! that sends by destination has a NIC per port (`setup.rs::build_nics`, numbered from
//! `nic_of[host]` in port order) and sends on the port of its routes' first next hop
//! toward the destination: paths never pass through a host, so a GPU of the same server
//! is reached over the NVLink switch, every other host over the rail. The QP is bound to
//! that NIC when it opens, and the receiver returns its ACKs on its own NIC toward the
//! sender, so both directions of a connection take the same links.

use crate::ids::{NicId, NodeId, PortId};
use crate::sim::Simulation;

impl Simulation {
    /// The NIC `src` sends to `dst` on.
    #[inline]
    pub(in crate::sim) fn egress_nic(&self, src: NodeId, dst: NodeId) -> NicId {
        let first = self.nic_of[src.idx()];
        if !self.topo.egress_by_destination {
            return first;
        }
        self.routed_nic(first, src, dst)
    }

    /// `egress_nic` on a host with a NIC per port: no allocation, a search of the host's
    /// few ports.
    #[cold]
    fn routed_nic(&self, first: NicId, src: NodeId, dst: NodeId) -> NicId {
        let hops = self.routes.next_hops(src, dst);
        // SimAI's routing keeps only the NVSwitch among equal-cost next hops of a GPU
        // (`CalculateRoute`'s `via_nvswitch`), so a GPU of a server whose GPUs share a ToR
        // still reaches the others over NVLink.
        let Some(&port) = hops.iter().find(|&&p| self.topo.to_nvswitch(p)).or(hops.first()) else { return first };
        let place = self.topo.nodes[src.idx()].ports.iter().position(|&p| p == port).unwrap_or(0);
        NicId(first.0 + place as u32)
    }

    /// The NIC of a new QP of SimAI's GPU that has several equal next hops toward `f.dst`
    /// of one kind (two ToRs of a dual-ToR topology, two NVSwitches of a server), `nic`
    /// otherwise: SimAI's `GetNicIdxOfQp` picks among them by the QP's hash
    /// (`v[qp->GetHash() % v.size()]`); rdmalab's ECMP hash of the QP stands for it.
    #[cold]
    pub(in crate::sim) fn spread_nic(&self, nic: NicId, f: &crate::workload::FlowSpec, sport: u16) -> NicId {
        let hops = self.routes.next_hops(f.src, f.dst);
        let nv = |p: &PortId| self.topo.to_nvswitch(*p);
        let via_nv = hops.iter().any(nv);
        let n = hops.iter().filter(|p| nv(p) == via_nv).count();
        if n < 2 {
            return nic;
        }
        let ips = (f.src_ip.unwrap_or(self.topo.nodes[f.src.idx()].ips[0]), self.topo.nodes[f.dst.idx()].ips[0]);
        let k = crate::topology::ecmp::ecmp_hash(ips.0, ips.1, sport, f.dport, f.src.0) as usize % n;
        let Some(&port) = hops.iter().filter(|p| nv(p) == via_nv).nth(k) else { return nic };
        let first = self.nic_of[f.src.idx()];
        let place = self.topo.nodes[f.src.idx()].ports.iter().position(|&p| p == port).unwrap_or(0);
        NicId(first.0 + place as u32)
    }

    /// Kicks every NIC of `host` (an application posted on QPs of either).
    #[inline]
    pub(in crate::sim) fn kick_host(&mut self, host: NodeId) {
        let first = self.nic_of[host.idx()];
        let count = if self.topo.egress_by_destination { self.topo.nodes[host.idx()].ports.len() } else { 1 };
        for k in 0..count as u32 {
            self.nic_kick(NicId(first.0 + k));
        }
    }
}
