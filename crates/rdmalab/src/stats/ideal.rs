//! The reference simulator's ideal FCT, base RTT and BDP, bit for bit.
//!
//! Slowdown is FCT divided by the FCT the flow would have alone on an idle network. To
//! compare slowdowns with the reference one to one we use its formula exactly
//! (`qp_finish` in its `simulation/scratch/third.cc`, with the pair's base RTT and bottleneck
//! from its `CalculateRoute`), in integer nanoseconds with its truncations:
//!
//! * `base_rtt = 2 * sum(propagation delays) + sum over links of floor(mtu * 8e9 / rate)`,
//!   i.e. one MTU payload serialised per hop, one way only;
//! * `total_bytes = size + ceil(size / mtu) * header_bytes` (the reference uses 48 B of
//!   headers, never counting INT bytes);
//! * `ideal = base_rtt + floor(total_bytes * 8e9 / bottleneck_rate)`.
//!
//! The path is a list of egress ports (one per link), normally
//! [`Routes::first_path`](crate::topology::routing::Routes::first_path), the path the
//! reference uses. All arithmetic is in `u128`, so no size or rate overflows.

use crate::ids::{NodeId, PortId};
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::{Rate, Time};

const NS_PER_S: u128 = 1_000_000_000;

/// Lowest link rate along `path`; `None` for an empty path.
pub fn bottleneck(topo: &Topology, path: &[PortId]) -> Option<Rate> {
    path.iter().map(|&p| topo.port_rate(p)).min()
}

/// Base RTT in whole nanoseconds (see the module doc). 0 for an empty path.
fn base_rtt_ns(topo: &Topology, path: &[PortId], mtu_payload: u64) -> u128 {
    let prop_ps: u128 = path.iter().map(|&p| u128::from(topo.port_delay(p).ps())).sum();
    let ser_ns: u128 =
        path.iter().map(|&p| u128::from(mtu_payload) * 8 * NS_PER_S / u128::from(topo.port_rate(p).bps())).sum();
    2 * (prop_ps / 1_000) + ser_ns
}

/// The reference's base RTT of `path`: twice the one-way propagation delay plus one
/// `mtu_payload`-byte serialisation per link, truncated to whole ns per link. Whole ns,
/// returned as [`Time`]. Zero for an empty path.
pub fn base_rtt(topo: &Topology, path: &[PortId], mtu_payload: u64) -> Time {
    Time::from_ns(base_rtt_ns(topo, path, mtu_payload) as u64)
}

/// The reference's bandwidth-delay product of `path` in bytes:
/// `base_rtt_ns * bottleneck_bps / 1e9 / 8`, truncated. Its windows (HAS_WIN) use it. The
/// bottleneck is the NIC rate whenever the fabric is at least as fast as the hosts.
pub fn bdp(topo: &Topology, path: &[PortId], mtu_payload: u64) -> u64 {
    let Some(rate) = bottleneck(topo, path) else {
        return 0;
    };
    let bits = base_rtt_ns(topo, path, mtu_payload) * u128::from(rate.bps());
    u64::try_from(bits / NS_PER_S / 8).unwrap_or(u64::MAX)
}

/// The ideal FCT of a `size`-byte flow along `path` with `mtu_payload` bytes of payload
/// per packet and `header_bytes` of headers per packet (the reference: 1000 and 48).
/// Whole ns, returned as [`Time`]. Zero for an empty path; an `mtu_payload` of 0 is
/// treated as 1.
pub fn ideal_fct(topo: &Topology, path: &[PortId], size: u64, mtu_payload: u64, header_bytes: u64) -> Time {
    let Some(rate) = bottleneck(topo, path) else {
        return Time::ZERO;
    };
    let packets = u128::from(size.div_ceil(mtu_payload.max(1)));
    let total_bytes = u128::from(size) + packets * u128::from(header_bytes);
    let ns = base_rtt_ns(topo, path, mtu_payload) + total_bytes * 8 * NS_PER_S / u128::from(rate.bps());
    Time::from_ps(u64::try_from(ns * 1_000).unwrap_or(u64::MAX))
}

/// The largest base RTT and the largest BDP over all ordered host pairs, each pair on its
/// [`first_path`](Routes::first_path): the reference's `maxRtt` and `maxBdp` (GLOBAL_T
/// windows and T). `(0, 0)` with fewer than two hosts.
pub fn max_rtt_bdp(topo: &Topology, routes: &Routes, mtu_payload: u64) -> (Time, u64) {
    let hosts: Vec<NodeId> = topo.hosts().collect();
    let mut best = (Time::ZERO, 0u64);
    for &s in &hosts {
        for &d in hosts.iter().filter(|&&d| d != s) {
            let path = routes.first_path(topo, s, d);
            best.0 = best.0.max(base_rtt(topo, &path, mtu_payload));
            best.1 = best.1.max(bdp(topo, &path, mtu_payload));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::routing::{fixtures, NeighborOrder};

    /// The reference's `topology.txt`: switch 0, hosts 1..=65, 100 Gb/s, 1 us.
    fn reference_star() -> Topology {
        let mut t = Topology::new(66, &[NodeId(0)]);
        for h in 1..=65 {
            t.add_link(NodeId(0), NodeId(h), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
        }
        t
    }

    /// Checks every line of a reference FCT file: `sip dip sport dport size start fct ideal`.
    /// Returns the number of lines checked.
    fn check_fct_file(topo: &Topology, name: &str) -> usize {
        let routes = Routes::compute(topo, NeighborOrder::Ns3).unwrap();
        let path = fixtures::reference_dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut n = 0;
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let host = |hex: &str| NodeId((u32::from_str_radix(hex, 16).unwrap() >> 8) & 0xFFFF);
            let (src, dst) = (host(f[0]), host(f[1]));
            let (size, want): (u64, u64) = (f[4].parse().unwrap(), f[7].parse().unwrap());
            let p = routes.first_path(topo, src, dst);
            let got = ideal_fct(topo, &p, size, 1000, 48);
            assert_eq!(got, Time::from_ns(want), "{name}:{}: {line}", i + 1);
            n += 1;
        }
        n
    }

    #[test]
    fn reproduces_every_ideal_of_the_reference_star_runs() {
        let t = reference_star();
        assert_eq!(check_fct_file(&t, "S2_dcqcn_fct.txt"), 2321);
        assert_eq!(check_fct_file(&t, "S2_hpcc_fct.txt"), 2321);
    }

    #[test]
    fn reproduces_every_ideal_of_the_reference_fat_tree_runs() {
        let t = fixtures::reference_fat_tree();
        assert_eq!(check_fct_file(&t, "S1_dcqcn_fct.txt"), 9672);
        assert_eq!(check_fct_file(&t, "S1_hpcc_fct.txt"), 9672);
    }

    /// Single lines, worked by hand from the formula, so a failure points at one case.
    #[test]
    fn reference_lines_by_kind_of_pair() {
        let t = fixtures::reference_fat_tree();
        let r = Routes::compute(&t, NeighborOrder::Ns3).unwrap();
        // (src, dst, size, ideal_ns, line of S1_dcqcn_fct.txt)
        let cases = [
            (179, 188, 359, 4192, 1),         // same ToR: base 4,160
            (13, 10, 47652, 8156, 2),         // same ToR, 48 packets
            (124, 88, 379, 8234, 3),          // same pod: base 8,200
            (177, 162, 171904, 22612, 258),   // same pod, 172 packets
            (179, 38, 205, 12260, 9),         // across pods: base 12,240
            (0, 209, 153465, 25108, 155),     // across pods
            (293, 52, 9787491, 832825, 9634), // the largest flow of S1
        ];
        for (s, d, size, want, line) in cases {
            let p = r.first_path(&t, NodeId(s), NodeId(d));
            assert_eq!(ideal_fct(&t, &p, size, 1000, 48), Time::from_ns(want), "line {line}");
        }
    }

    /// As the reference prints them (`maxRtt`, `maxBdp` in `third.cc`): fat.txt has base RTT
    /// 4,160 ns within a ToR and 12,240 ns across
    /// pods, the maximum, so maxBdp = 153,000 B; topology.txt 4,160 ns and 52,000 B.
    #[test]
    fn max_rtt_and_bdp_match_the_reference() {
        let fat = fixtures::reference_fat_tree();
        let r = Routes::compute(&fat, NeighborOrder::Ns3).unwrap();
        let tor = r.first_path(&fat, NodeId(0), NodeId(1));
        assert_eq!(base_rtt(&fat, &tor, 1000), Time::from_ns(4160));
        assert_eq!(max_rtt_bdp(&fat, &r, 1000), (Time::from_ns(12_240), 153_000));
        let star = reference_star();
        let r = Routes::compute(&star, NeighborOrder::Ns3).unwrap();
        assert_eq!(max_rtt_bdp(&star, &r, 1000), (Time::from_ns(4160), 52_000));
    }

    #[test]
    fn truncations_and_edge_cases() {
        let mut t = Topology::new(2, &[]);
        // 3 Gb/s: 1000 B take 2666.67 ns, truncated per link to 2,666.
        t.add_link(NodeId(0), NodeId(1), Rate::gbps(3), Time::from_ps(1_500), 0.0).unwrap();
        let p = [PortId(0)];
        assert_eq!(base_rtt(&t, &p, 1000), Time::from_ns(2 + 2666));
        // 1 B flow: 49 B on the wire = 130.67 ns -> 130.
        assert_eq!(ideal_fct(&t, &p, 1, 1000, 48), Time::from_ns(2668 + 130));
        // Exactly 2 packets: 2000 + 96 B = 5589.33 ns -> 5589.
        assert_eq!(ideal_fct(&t, &p, 2000, 1000, 48), Time::from_ns(2668 + 5589));
        assert_eq!(bdp(&t, &p, 1000), 2668 * 3 / 8);
        assert_eq!(ideal_fct(&t, &[], 100, 1000, 48), Time::ZERO);
        assert_eq!(bdp(&t, &[], 1000), 0);
        assert!(ideal_fct(&t, &p, u64::MAX, 0, 48) > Time::ZERO);
    }
}
