//! Fabric link capacities of the network-wide model from a topology and its routing
//! (docs/drum.md §6): which directed links the traffic of each
//! (source host, destination host) pair crosses, with what share.
//!
//! Directed links are egress ports ([`PortId`]): link `l` of the topology is the two
//! directions `2l` and `2l + 1`, each with the link's rate. Hosts are numbered by rank,
//! the i-th host of the topology in ascending node id (the routing tables' numbering; the
//! builders put hosts first, so rank = node id there). DRUM host `i` is topology host `i`.
//!
//! **ECMP.** [`Spread::Split`] (the default) divides a pair's traffic evenly over the
//! equal-cost next hops at every switch. That is the expected load of the simulator's
//! per-flow hash ECMP over many flows, and it is a fixed fraction per link, so the link
//! constraints stay linear in the rates (`Σ bytes_per_wqe · share · x ≤ cap`): the model
//! stays convex and the sharing ADMM applies unchanged. On Clos fabrics (leaf–spine, fat
//! tree) every path then carries the same share. Hosts, like the simulator's, send on
//! their first next hop only. [`Spread::First`] puts the whole pair on the first shortest
//! path, the deterministic path the simulator uses for its ideal FCT and base RTT.

use super::network::Coupling;
use crate::error::{Error, Result};
use crate::ids::{NodeId, PortId};
use crate::topology::routing::{NeighborOrder, Routes};
use crate::topology::Topology;

/// How a pair's traffic is spread over equal-cost paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Spread {
    /// Even split over the ECMP next hops at every switch.
    #[default]
    Split,
    /// All traffic on the first shortest path.
    First,
}

impl Spread {
    /// From `"split"` or `"first"`.
    pub fn parse(s: &str) -> Result<Spread> {
        match s {
            "split" => Ok(Spread::Split),
            "first" => Ok(Spread::First),
            _ => Err(Error::drum("ecmp", format!("{s:?} is not one of \"split\", \"first\""))),
        }
    }
}

/// Per host pair, the directed links its traffic crosses and the share on each
/// (compressed rows: pair `p` owns entries `ptr[p]..ptr[p + 1]`, ports ascending).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairLinks {
    /// Row starts, one more than pairs.
    pub ptr: Vec<usize>,
    /// Directed link (egress port) of each entry.
    pub port: Vec<PortId>,
    /// Fraction of the pair's traffic on that link, in (0, 1].
    pub share: Vec<f64>,
}

impl PairLinks {
    /// The entries of pair `p`.
    pub fn of(&self, p: usize) -> impl Iterator<Item = (PortId, f64)> + '_ {
        (self.ptr[p]..self.ptr[p + 1]).map(move |t| (self.port[t], self.share[t]))
    }
}

/// A topology with its routing tables, addressed by host rank.
#[derive(Debug)]
pub struct Fabric<'t> {
    topo: &'t Topology,
    routes: Routes,
    hosts: Vec<NodeId>,
}

impl<'t> Fabric<'t> {
    /// Computes the routing tables of `topo` (ascending neighbour order, the native one).
    pub fn new(topo: &'t Topology) -> Result<Fabric<'t>> {
        let routes = Routes::compute(topo, NeighborOrder::Ascending)?;
        Ok(Fabric { topo, routes, hosts: topo.hosts().collect() })
    }

    /// Number of hosts.
    pub fn n_hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Rate of a directed link in bits per second.
    pub fn rate_bps(&self, p: PortId) -> f64 {
        self.topo.port_rate(p).0 as f64
    }

    /// Whether a directed link joins two switches (a fabric link, not a host NIC link).
    pub fn is_fabric(&self, p: PortId) -> bool {
        let port = &self.topo.ports[p.idx()];
        !self.topo.is_host(port.node) && !self.topo.is_host(port.peer_node)
    }

    /// `(from, to)` node ids of a directed link.
    pub fn ends(&self, p: PortId) -> (NodeId, NodeId) {
        let port = &self.topo.ports[p.idx()];
        (port.node, port.peer_node)
    }

    fn host(&self, rank: usize) -> Result<NodeId> {
        self.hosts.get(rank).copied().ok_or_else(|| {
            Error::drum("dst", format!("host {rank} is out of range (the topology has {} hosts)", self.hosts.len()))
        })
    }

    /// The links of every pair `(src, dst)` (host ranks). A pair with `src == dst` crosses
    /// no link (the NIC loops it back).
    pub fn pair_links(&self, pairs: &[(usize, usize)], spread: Spread) -> Result<PairLinks> {
        let mut out = PairLinks { ptr: vec![0], ..PairLinks::default() };
        let mut scratch = Scratch::new(self.topo.len(), self.topo.ports.len());
        for &(s, d) in pairs {
            let (src, dst) = (self.host(s)?, self.host(d)?);
            if src != dst {
                match spread {
                    Spread::First => self.first(src, dst, &mut scratch)?,
                    Spread::Split => self.split(src, dst, &mut scratch)?,
                }
            }
            scratch.drain_into(&mut out);
        }
        Ok(out)
    }

    fn first(&self, src: NodeId, dst: NodeId, sc: &mut Scratch) -> Result<()> {
        let path = self.routes.first_path(self.topo, src, dst);
        if path.is_empty() {
            return Err(no_route(src, dst));
        }
        path.into_iter().for_each(|p| sc.add_port(p, 1.0));
        Ok(())
    }

    /// Pushes the pair's unit of traffic down the shortest-path DAG one hop at a time.
    /// Every next hop is one hop closer to `dst`, so the nodes reached after `t` hops all
    /// sit at the same distance and each is expanded once, with its total inflow.
    fn split(&self, src: NodeId, dst: NodeId, sc: &mut Scratch) -> Result<()> {
        let mut wave = vec![(src, 1.0)];
        while !wave.is_empty() {
            for (node, f) in std::mem::take(&mut wave) {
                if node == dst {
                    continue;
                }
                let hops = self.routes.next_hops(node, dst);
                // Hosts send on their first next hop only, as in the simulator.
                let used = if self.topo.is_host(node) { &hops[..hops.len().min(1)] } else { hops };
                if used.is_empty() {
                    return Err(no_route(src, dst));
                }
                let part = f / used.len() as f64;
                for &p in used {
                    sc.add_port(p, part);
                    sc.add_node(self.topo.ports[p.idx()].peer_node, part);
                }
            }
            sc.drain_nodes(&mut wave);
        }
        Ok(())
    }

    /// Link capacities and `route` couplings of the network-wide model for a destination
    /// map: app `(i, j)` sends to host `dst[i·m + j]` (negative: sends nothing). Each
    /// crossed link gets coefficient `bytes_per_wqe[i·m + j] · share`; its capacity is its
    /// rate in bytes per `time_unit` seconds, so rates `x` are WQEs per `time_unit`.
    /// Only links some flow crosses are kept (host NIC links only with `host_links`),
    /// numbered in ascending port order.
    pub fn routes(&self, dst: &[i64], m: usize, bytes_per_wqe: &[f64], opts: RouteOptions) -> Result<LinkRoutes> {
        check_route_inputs(dst, m, bytes_per_wqe, opts.time_unit)?;
        let flows: Vec<(usize, i64)> = dst.iter().copied().enumerate().filter(|(_, d)| *d >= 0).collect();
        let pairs: Vec<(usize, usize)> = flows.iter().map(|&(e, d)| (e / m, d as usize)).collect();
        let inc = self.pair_links(&pairs, opts.spread)?;
        let keep = |p: PortId| opts.host_links || self.is_fabric(p);
        let mut used = vec![false; self.topo.ports.len()];
        inc.port.iter().filter(|&&p| keep(p)).for_each(|p| used[p.idx()] = true);
        let mut out = LinkRoutes::default();
        // Resource number of each kept port, in ascending port order.
        let mut index = vec![usize::MAX; used.len()];
        for p in (0..used.len()).filter(|&p| used[p]) {
            index[p] = out.ports.len();
            out.ports.push(PortId::new(p));
            out.cap.push(self.rate_bps(PortId::new(p)) / 8.0 * opts.time_unit);
        }
        for (f, &(e, _)) in flows.iter().enumerate() {
            for (p, share) in inc.of(f).filter(|&(p, _)| keep(p)) {
                out.route.push(Coupling {
                    host: e / m,
                    app: e % m,
                    resource: index[p.idx()],
                    coef: bytes_per_wqe[e] * share,
                });
            }
        }
        Ok(out)
    }
}

/// Options of [`Fabric::routes`].
#[derive(Clone, Copy, Debug)]
pub struct RouteOptions {
    /// ECMP treatment.
    pub spread: Spread,
    /// Seconds per unit of the rates `x` (capacity = bytes per `time_unit`).
    pub time_unit: f64,
    /// Keep host NIC links (uplink and downlink) as shared resources too.
    pub host_links: bool,
}

/// The link part of the network-wide model: resource `r` is directed link `ports[r]` with
/// capacity `cap[r]`; `route` are the couplings for [`NetworkProblem`](super::NetworkProblem).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkRoutes {
    /// Directed link of each resource.
    pub ports: Vec<PortId>,
    /// Capacity of each resource (bytes per time unit).
    pub cap: Vec<f64>,
    /// Couplings `(host, app, resource, bytes per WQE × share)`.
    pub route: Vec<Coupling>,
}

fn check_route_inputs(dst: &[i64], m: usize, bytes_per_wqe: &[f64], time_unit: f64) -> Result<()> {
    if m == 0 || !dst.len().is_multiple_of(m) {
        return Err(Error::drum("dst", format!("{} entries do not form rows of m = {m} apps", dst.len())));
    }
    if bytes_per_wqe.len() != dst.len() {
        return Err(Error::drum("bytes_per_wqe", format!("{} entries, dst has {}", bytes_per_wqe.len(), dst.len())));
    }
    if let Some(b) = bytes_per_wqe.iter().find(|b| !(b.is_finite() && **b > 0.0)) {
        return Err(Error::drum("bytes_per_wqe", format!("{b} must be finite and > 0")));
    }
    if !(time_unit.is_finite() && time_unit > 0.0) {
        return Err(Error::drum("time_unit", format!("{time_unit} must be finite and > 0")));
    }
    Ok(())
}

fn no_route(src: NodeId, dst: NodeId) -> Error {
    Error::drum("topology", format!("no route from host {src} to host {dst}"))
}

/// Dense accumulators with touched lists, reused across pairs (no per-pair allocation
/// proportional to the topology).
struct Scratch {
    node: Vec<f64>,
    nodes: Vec<NodeId>,
    port: Vec<f64>,
    ports: Vec<PortId>,
}

impl Scratch {
    fn new(n_nodes: usize, n_ports: usize) -> Scratch {
        Scratch { node: vec![0.0; n_nodes], nodes: Vec::new(), port: vec![0.0; n_ports], ports: Vec::new() }
    }

    fn add_node(&mut self, n: NodeId, f: f64) {
        if self.node[n.idx()] == 0.0 {
            self.nodes.push(n);
        }
        self.node[n.idx()] += f;
    }

    fn add_port(&mut self, p: PortId, f: f64) {
        if self.port[p.idx()] == 0.0 {
            self.ports.push(p);
        }
        self.port[p.idx()] += f;
    }

    /// Moves the touched nodes, in ascending id (deterministic), into `wave`.
    fn drain_nodes(&mut self, wave: &mut Vec<(NodeId, f64)>) {
        self.nodes.sort_unstable();
        for n in self.nodes.drain(..) {
            wave.push((n, std::mem::take(&mut self.node[n.idx()])));
        }
    }

    /// Appends the touched ports of one pair (ascending) as a row of `out`.
    fn drain_into(&mut self, out: &mut PairLinks) {
        self.ports.sort_unstable();
        for p in self.ports.drain(..) {
            out.port.push(p);
            out.share.push(std::mem::take(&mut self.port[p.idx()]));
        }
        out.ptr.push(out.port.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders;
    use crate::units::{Rate, Time};

    #[test]
    fn spread_parses_and_rejects() {
        assert_eq!(Spread::parse("split").unwrap(), Spread::Split);
        assert_eq!(Spread::parse("first").unwrap(), Spread::First);
        assert!(Spread::parse("hash").unwrap_err().to_string().contains("ecmp"));
    }

    #[test]
    fn star_pairs_cross_the_two_host_links() {
        let t = builders::star(3, Rate::gbps(100), Time::from_us(1)).unwrap();
        let f = Fabric::new(&t).unwrap();
        let inc = f.pair_links(&[(0, 2), (1, 1)], Spread::Split).unwrap();
        // Host 0 up (port 0 of link 0), then switch → host 2 (port 5 of link 2).
        assert_eq!(inc.of(0).collect::<Vec<_>>(), vec![(PortId(0), 1.0), (PortId(5), 1.0)]);
        assert_eq!(inc.of(1).count(), 0);
        assert!(f.pair_links(&[(0, 3)], Spread::Split).unwrap_err().to_string().contains("out of range"));
    }
}
