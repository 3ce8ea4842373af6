//! The m4 dialect's outputs and path sums (netiken/m4's ns-3 on Unison, the program under
//! `testbed/backends/UNISON/`; docs/hpcc-dialects.md cites its lines).
//!
//! Its FCT file has one line per flow, written when the receiver holds the flow's last byte
//! in order, with the flow's id from the flow file first:
//!
//! ```text
//! id sip dip sport dport size start_ns fct_ns standalone_ns
//! 0 0b01ea01 0b007b01 10000 100 170 1000000000 7080 7044
//! ```
//!
//! `fct_ns` runs from the flow's start to that moment. `standalone_ns` is the fork's own
//! closed form: half the base RTT (2 × the path's propagation delay), the first packet
//! (up to one payload plus 48 header bytes) stored and forwarded at each hop's rate, then
//! the rest of the bytes and their headers at the path's slowest rate, capped at 10 Gb/s
//! (the fork's `max_rate_int`, which no key sets), each term truncated to whole ns.

use std::io::Write;

use crate::ids::NodeId;
use crate::stats::FlowRecord;
use crate::topology::Topology;
use crate::units::{Rate, Time};

/// Header bytes of a data packet in the standalone FCT (the whole header less INT's).
pub const HEADER_BYTES: u64 = 48;

/// The fork's cap on a path's rate in the standalone FCT (`max_rate_int`), bit/s.
pub const STANDALONE_RATE_CAP: Rate = Rate(10_000_000_000);

/// One host pair's path as the fork's route search sees it: the sum of the link delays and
/// each link's rate, from source to destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathSums {
    /// One-way propagation delay.
    pub delay: Time,
    /// The rate of each link on the path.
    pub rates: Vec<Rate>,
}

/// From host `src` to every node: a breadth-first search by hops that passes through
/// switches only, keeping the first path found to each node (the fork's `CalculateRoute`).
/// `None` for a node it does not reach.
pub fn paths_from(topo: &Topology, src: NodeId) -> Vec<Option<PathSums>> {
    let mut out: Vec<Option<PathSums>> = vec![None; topo.len()];
    out[src.idx()] = Some(PathSums::default());
    let mut queue = vec![src];
    let mut i = 0;
    while let Some(&now) = queue.get(i) {
        i += 1;
        let here = out[now.idx()].clone().unwrap_or_default();
        for &p in &topo.nodes[now.idx()].ports {
            let port = &topo.ports[p.idx()];
            let link = &topo.links[port.link.idx()];
            let next = port.peer_node;
            if out[next.idx()].is_some() {
                continue;
            }
            let mut rates = here.rates.clone();
            rates.push(link.rate);
            out[next.idx()] = Some(PathSums { delay: here.delay + link.delay, rates });
            if !topo.is_host(next) {
                queue.push(next);
            }
        }
    }
    out
}

/// The fork's base RTT for every QP (`maxRtt`): twice the largest one-way propagation
/// delay between two hosts. Replaces the config's `BASE_RTT`, as the fork does.
pub fn max_rtt(topo: &Topology) -> Time {
    let mut worst = Time::ZERO;
    for h in topo.hosts() {
        for (n, p) in paths_from(topo, h).iter().enumerate() {
            if let Some(p) = p.as_ref().filter(|_| topo.is_host(NodeId(n as u32))) {
                worst = worst.max(p.delay);
            }
        }
    }
    Time(worst.0.saturating_mul(2))
}

/// The fork's standalone FCT of a `size`-byte flow over `path` with `mtu` bytes of payload
/// per packet, in ns.
pub fn standalone_fct_ns(path: &PathSums, size: u64, mtu: u64) -> u64 {
    let bits_ns = |bytes: u64, r: Rate| (bytes as u128 * 8_000_000_000 / r.0.max(1) as u128) as u64;
    let slowest = path.rates.iter().copied().min().unwrap_or(STANDALONE_RATE_CAP).min(STANDALONE_RATE_CAP);
    let head = mtu.min(size);
    let rest = size - head;
    let rest_packets = size.saturating_sub(1) / mtu.max(1);
    let first: u64 = path.rates.iter().map(|&r| bits_ns(head + HEADER_BYTES, r)).sum();
    let rest_ns = bits_ns(rest, slowest) + rest_packets * bits_ns(HEADER_BYTES, slowest);
    path.delay.ns() + first + rest_ns
}

/// Writes one line of the fork's FCT file for `r`, a flow whose id in the flow file is `id`:
/// its FCT until the receiver held the last byte (`r.rx.delivered`; the ACK's FCT when the
/// run did not note it).
pub fn write_fct_line(w: &mut impl Write, id: u64, r: &FlowRecord, standalone_ns: u64) -> std::io::Result<()> {
    let fct = if r.rx.delivered > r.start { r.rx.delivered - r.start } else { r.fct };
    writeln!(
        w,
        "{} {:08x} {:08x} {} {} {} {} {} {}",
        id,
        r.sip,
        r.dip,
        r.sport,
        r.dport,
        r.size,
        r.start.ns(),
        fct.ns(),
        standalone_ns
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host 0, five switches in a line, host 6: six 10 Gb/s links of 1 µs.
    fn chain() -> Topology {
        let switches: Vec<NodeId> = (1..=5).map(NodeId).collect();
        let mut t = Topology::new(7, &switches);
        for i in 0..6 {
            t.add_link(NodeId(i), NodeId(i + 1), Rate::gbps(10), Time::from_us(1), 0.0).unwrap();
        }
        t
    }

    #[test]
    fn standalone_fct_is_the_forks_closed_form() {
        let t = chain();
        let p = paths_from(&t, NodeId(0))[6].clone().unwrap();
        assert_eq!((p.delay, p.rates.len()), (Time::from_us(6), 6));
        // m4's published line `0 0b01ea01 0b007b01 10000 100 170 1000000000 7080 7044`:
        // 6,000 ns of links + 6 hops × floor(218 B × 0.8 ns/B).
        assert_eq!(standalone_fct_ns(&p, 170, 1000), 6000 + 6 * 174);
        // `3 ... 2782 ... 12578 12529`: the first 1,048 B at six hops, then 1,782 B and two
        // more headers at 10 Gb/s.
        assert_eq!(standalone_fct_ns(&p, 2782, 1000), 6000 + 6 * 838 + 1425 + 2 * 38);
        assert_eq!(max_rtt(&t), Time::from_us(12));
    }
}
