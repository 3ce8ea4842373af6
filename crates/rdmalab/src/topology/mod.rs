//! The network graph: nodes (hosts and switches), full-duplex links, and the ports at
//! each end of a link.
//!
//! Numbering follows the ns-3 HPCC topology file so results map one to one: node ids are
//! the file's ids, and a node's ports are numbered in the order its links appear
//! (`ifindex` = position + 1, since ns-3 reserves 0 for the loopback).

pub mod builders;
pub mod ecmp;
pub mod nvlink;
pub mod routing;

use crate::error::{Error, Result};
use crate::ids::{LinkId, NodeId, PortId};
use crate::units::{Rate, Time};

/// Whether a node is a host (has an RNIC) or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host with one RNIC.
    Host,
    /// A switch.
    Switch,
}

/// A node of the graph.
#[derive(Clone, Debug)]
pub struct Node {
    /// Host or switch.
    pub kind: NodeKind,
    /// Egress ports in link-file order.
    pub ports: Vec<PortId>,
    /// IPv4 addresses owned by the node (hosts: the first is the default address).
    pub ips: Vec<u32>,
}

/// A full-duplex point-to-point link.
#[derive(Clone, Debug)]
pub struct Link {
    /// One end.
    pub a: NodeId,
    /// The other end.
    pub b: NodeId,
    /// Line rate of both directions.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Time,
    /// Per-packet loss probability on receive (0 = lossless link).
    pub error_rate: f64,
}

/// The egress side of one end of a link.
#[derive(Clone, Copy, Debug)]
pub struct Port {
    /// The node owning the port.
    pub node: NodeId,
    /// The link.
    pub link: LinkId,
    /// The port at the other end of the link.
    pub peer: PortId,
    /// The node at the other end of the link.
    pub peer_node: NodeId,
    /// ns-3 interface index (1-based position among the node's links).
    pub ifindex: u16,
}

/// The whole graph.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// Nodes indexed by `NodeId`.
    pub nodes: Vec<Node>,
    /// Links indexed by `LinkId`.
    pub links: Vec<Link>,
    /// Ports indexed by `PortId`; link `l` owns ports `2l` (at `a`) and `2l+1` (at `b`).
    pub ports: Vec<Port>,
    /// A host sends on the port its routes lead to the destination by, one NIC per port
    /// (a GPU's NVLink beside its rail NIC, [`nvlink`]); otherwise every host sends on its
    /// first port, as the reference's hosts do.
    pub egress_by_destination: bool,
    /// Per node, whether it is a server's NVSwitch (SimAI's topology file lists them); empty
    /// when none is. A host whose routes to a destination leave by an NVSwitch port and by
    /// another sends by the NVSwitch, as SimAI's GPUs do (`sim/host/egress.rs`).
    pub nvswitch: Vec<bool>,
}

/// The default address of host `id`: the reference's `11.<id/256>.<id%256>.1` for the
/// 65,536 hosts its scheme covers, which is `11.0.0.1 + id * 256`; past them the same sum
/// goes on into `12.0.0.1`, `13.0.0.1`, ... up to `255.255.255.1` ([`MAX_HOST_ID`]). The
/// reference never has that many hosts, so its addresses are unchanged; the last byte stays
/// free for a host's extra addresses (`set_ips_per_host`).
pub const fn default_host_ip(id: u32) -> u32 {
    0x0B00_0001 + (id / 256) * 0x1_0000 + (id % 256) * 0x100
}

/// Largest host id with a default address (`255.255.255.1`).
pub const MAX_HOST_ID: u32 = (u32::MAX - 0x0B00_0001) / 256;

/// Most ports (links) one node may have. A port's number on its node (`Port::ifindex`,
/// 1-based) is 16 bits, and a switch's buffer counts each ingress by it (a packet carries it
/// as `ingress_local`, which keeps the packet at 64 bytes); more would alias two ports'
/// counts. The largest switches built have a few hundred ports.
pub const MAX_PORTS_PER_NODE: usize = u16::MAX as usize;

/// The host id of a default address ([`default_host_ip`]'s inverse, ignoring the last
/// byte). Inside `11.x.y.z` this is the reference's `(ip >> 8) & 0xFFFF`, so its FCT files
/// read the same; addresses above continue the count.
pub const fn host_of_ip(ip: u32) -> u32 {
    if ip >> 24 <= 0x0B {
        (ip >> 8) & 0xFFFF
    } else {
        (ip >> 8) - 0x0B_0000
    }
}

impl Topology {
    /// `n` nodes; those listed in `switches` are switches, all others hosts with their
    /// default address.
    pub fn new(n: usize, switches: &[NodeId]) -> Topology {
        // Ids past MAX_HOST_ID have no address: builders keep hosts below it, and a switch's
        // address is cleared below.
        let ip = |i: usize| u32::try_from(i).ok().filter(|&i| i <= MAX_HOST_ID).map(default_host_ip);
        let mut nodes: Vec<Node> = (0..n)
            .map(|i| Node { kind: NodeKind::Host, ports: Vec::new(), ips: ip(i).into_iter().collect() })
            .collect();
        for s in switches {
            if let Some(node) = nodes.get_mut(s.idx()) {
                node.kind = NodeKind::Switch;
                node.ips.clear();
            }
        }
        Topology { nodes, links: Vec::new(), ports: Vec::new(), egress_by_destination: false, nvswitch: Vec::new() }
    }

    /// Adds a full-duplex link and its two ports.
    pub fn add_link(&mut self, a: NodeId, b: NodeId, rate: Rate, delay: Time, error_rate: f64) -> Result<LinkId> {
        let n = self.nodes.len();
        if a.idx() >= n || b.idx() >= n {
            return Err(Error::Topology(format!("link {a}-{b}: node id out of range (0..{n})")));
        }
        if a == b {
            return Err(Error::Topology(format!("link {a}-{b}: a link must join two different nodes")));
        }
        if rate.0 == 0 {
            return Err(Error::Topology(format!("link {a}-{b}: zero rate")));
        }
        if !(0.0..=1.0).contains(&error_rate) {
            return Err(Error::Topology(format!("link {a}-{b}: error rate {error_rate} outside [0, 1]")));
        }
        for end in [a, b] {
            if self.nodes[end.idx()].ports.len() >= MAX_PORTS_PER_NODE {
                return Err(Error::Topology(format!(
                    "link {a}-{b}: node {end} would have {} ports, over the {MAX_PORTS_PER_NODE} a node may \
                     have (a port's number on its node is 16 bits, and a switch's buffer counts by it)",
                    MAX_PORTS_PER_NODE + 1
                )));
            }
        }
        let link = LinkId::new(self.links.len());
        self.links.push(Link { a, b, rate, delay, error_rate });
        let pa = PortId::new(self.ports.len());
        let pb = PortId::new(self.ports.len() + 1);
        let ia = self.nodes[a.idx()].ports.len() as u16 + 1;
        let ib = self.nodes[b.idx()].ports.len() as u16 + 1;
        self.ports.push(Port { node: a, link, peer: pb, peer_node: b, ifindex: ia });
        self.ports.push(Port { node: b, link, peer: pa, peer_node: a, ifindex: ib });
        self.nodes[a.idx()].ports.push(pa);
        self.nodes[b.idx()].ports.push(pb);
        Ok(link)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// True when there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// Whether `n` is a host.
    pub fn is_host(&self, n: NodeId) -> bool {
        self.nodes.get(n.idx()).is_some_and(|x| x.kind == NodeKind::Host)
    }
    /// Host ids in ascending order.
    pub fn hosts(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len()).map(NodeId::new).filter(|&n| self.is_host(n))
    }
    /// Switch ids in ascending order.
    pub fn switches(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len()).map(NodeId::new).filter(|&n| !self.is_host(n))
    }
    /// Line rate of a host's NIC (its first link).
    pub fn nic_rate(&self, host: NodeId) -> Rate {
        let p = self.nodes[host.idx()].ports[0];
        self.links[self.ports[p.idx()].link.idx()].rate
    }
    /// Rate of the link a port belongs to.
    pub fn port_rate(&self, p: PortId) -> Rate {
        self.links[self.ports[p.idx()].link.idx()].rate
    }
    /// Propagation delay of the link a port belongs to.
    pub fn port_delay(&self, p: PortId) -> Time {
        self.links[self.ports[p.idx()].link.idx()].delay
    }
    /// Whether port `p` leads to an NVSwitch (`nvswitch`).
    #[inline]
    pub fn to_nvswitch(&self, p: PortId) -> bool {
        self.nvswitch.get(self.ports[p.idx()].peer_node.idx()) == Some(&true)
    }
    /// Gives every host `n` addresses in all: its first, `11.x.y.1` for the reference's
    /// numbering, then `11.x.y.2` .. `11.x.y.n`. Only the last byte differs, so the
    /// reference's reverse mapping `(ip >> 8) & 0xFFFF` still names the host in FCT files.
    /// An error unless `n` is in 1..=254 and hosts hold only their first address so far.
    pub fn set_ips_per_host(&mut self, n: u32) -> Result<()> {
        if !(1..=254).contains(&n) {
            return Err(Error::scenario("ips_per_host", format!("must be in 1..=254 (one address byte), got {n}")));
        }
        let hosts: Vec<NodeId> = self.hosts().collect();
        if let Some(h) = hosts.iter().find(|h| self.nodes[h.idx()].ips.len() != 1) {
            return Err(Error::scenario("ips_per_host", format!("host {h} already has several addresses")));
        }
        // First addresses are distinct `x.y.1`, so the extra `x.y.2..` are free.
        for h in hosts {
            let first = self.nodes[h.idx()].ips[0];
            if first & 0xFF != 1 {
                return Err(Error::scenario(
                    "ips_per_host",
                    format!("host {h}'s address {first:08x} does not end in .1"),
                ));
            }
            self.nodes[h.idx()].ips.extend(first + 1..first + n);
        }
        Ok(())
    }

    /// Gives `host` one more IPv4 address (multipath by source address).
    pub fn add_host_ip(&mut self, host: NodeId, ip: u32) -> Result<()> {
        if !self.is_host(host) {
            return Err(Error::Topology(format!("node {host} is not a host; only hosts own addresses")));
        }
        if self.nodes.iter().any(|n| n.ips.contains(&ip)) {
            return Err(Error::Topology(format!("address {ip:08x} is already taken")));
        }
        self.nodes[host.idx()].ips.push(ip);
        Ok(())
    }
}

/// Every link joining `a` and `b` (parallel links all change together when a link event
/// names the pair).
pub fn links_between(topo: &Topology, a: NodeId, b: NodeId) -> Vec<LinkId> {
    (0..topo.links.len())
        .filter(|&i| {
            let l = &topo.links[i];
            (l.a == a && l.b == b) || (l.a == b && l.b == a)
        })
        .map(LinkId::new)
        .collect()
}
