//! The work each node of a scenario is expected to make, for a map that balances the
//! partitions' events rather than their hosts.
//!
//! The events of a run follow its packets: a payload packet makes about 16 events (its hops,
//! its ACK's and the timers, `estimate.rs`). Crossing a fat tree it visits seven nodes (host,
//! edge, aggregation, core, aggregation, edge, host) and its ACK the same. Crediting every
//! packet half to its source's partition and half to its destination's predicts the larger
//! partition's share of the events to within about a point: cut by host counts, 55.8 %
//! predicted against 55.3 % run on the 1,024-host fat tree under WebSearch (`fat-tree-1k-ws`),
//! 53.5 % against 53.4 % on S1 (`examples/partition_balance.rs`). So a
//! host weighs its packets sent and received, half each, which stands for its side's switches
//! too (an edge or aggregation switch that joins its hosts' partition adds nothing: its work
//! follows theirs); a switch shared between partitions (a core switch) weighs, per port, a
//! seventh of a host's mean (one node visit of seven, for the traffic of one host's link on
//! each of its ports), times the port's rate over a host's link's (a 400 Gb/s uplink carries
//! four 100 Gb/s hosts' traffic). A host with no flows (closed-loop applications, whose load
//! depends on the host model) weighs a twentieth of the mean (a choice: small against a host
//! with flows, yet not nothing), so a run without flows is cut by host counts.
//!
//! Collectives and dependency-driven jobs make no flows at setup, yet they are a run's whole
//! load when they are its only traffic (the 1,024-GPU ring AllReduce): a job's transfers count
//! as flows do, and a collective's rank sends, and receives, its size times NCCL-tests'
//! bus-bandwidth factor per iteration (2 (n - 1) / n for an AllReduce of n ranks, (n - 1) / n
//! for an AllGather, a ReduceScatter and an AllToAll, 1 for a Broadcast), the bytes each rank
//! moves in the bandwidth-optimal algorithms that the factor stands for.

use super::partition::weighted_map;
use crate::config::Scenario;
use crate::units::Time;

/// Every transfer a scenario's traffic makes, as (source, destination, bytes, start): its
/// flows, multipath messages and jobs' transfers (a job starts at time 0; a transfer waiting
/// on others counts from there too), and, per collective and rank, the bytes the rank sends
/// to itself (source = destination: it sends and receives that much; see the module's
/// comment).
pub(super) fn transfers(s: &Scenario) -> impl Iterator<Item = (usize, usize, u64, Time)> + Clone + '_ {
    let flows = s.flows.iter().map(|f| (f.src.idx(), f.dst.idx(), f.size, f.start));
    let mp = s.multipath.iter().flat_map(|t| &t.messages).map(|m| (m.0.idx(), m.1.idx(), m.2, m.3));
    let jobs = s.jobs.iter().flat_map(|j| j.transfers()).map(|t| (t.src.idx(), t.dst.idx(), t.bytes, Time::ZERO));
    let ranks = s.collectives.iter().flat_map(|c| {
        let bytes = c.size as f64 * c.kind.busbw_factor(c.ranks.len()) * c.repeat.max(1) as f64;
        c.ranks.iter().map(move |r| (r.idx(), r.idx(), bytes as u64, c.start))
    });
    flows.chain(mp).chain(jobs).chain(ranks)
}

/// Node `v`'s expected work, in payload packets (see the module's comment).
pub(super) fn node_work(s: &Scenario) -> Vec<f64> {
    let topo = &s.topology;
    let mtu = s.config.mtu.max(1) as f64;
    let mut work = vec![0f64; topo.nodes.len()];
    for (src, dst, bytes, _) in transfers(s) {
        let packets = (bytes as f64 / mtu).ceil();
        work[src] += packets / 2.0;
        work[dst] += packets / 2.0;
    }
    let hosts = topo.hosts().count().max(1) as f64;
    let mean = work.iter().sum::<f64>() / hosts;
    let rate = |p: &crate::ids::PortId| topo.links[topo.ports[p.idx()].link.idx()].rate.0 as f64;
    let host_rate = topo.hosts().filter_map(|h| topo.nodes[h.idx()].ports.first().map(rate)).sum::<f64>() / hosts;
    let (idle_host, per_port) = if mean > 0.0 { (mean / 20.0, mean / 7.0) } else { (1.0, 1.0 / 7.0) };
    for (v, node) in topo.nodes.iter().enumerate() {
        if topo.is_host(crate::ids::NodeId(v as u32)) {
            work[v] += idle_host;
        } else {
            // A port of a faster link carries more hosts' traffic (S1's 400 Gb/s uplinks).
            work[v] = node.ports.iter().map(|p| per_port * rate(p) / host_rate.max(1.0)).sum();
        }
    }
    work
}

/// Up to `parts` partitions of `s`'s fabric of about equal expected work (`node_work`),
/// pods and leaves kept whole where the balance allows: the map `--threads N` and `auto`
/// use. Returns the map and how many partitions it has.
pub fn work_map(s: &Scenario, parts: u32) -> (Vec<u16>, u32) {
    weighted_map(&s.topology, parts, &node_work(s))
}
