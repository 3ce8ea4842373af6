//! A switch's flowlet table (LetFlow, CONGA): direct-mapped by the flow's hash, each entry
//! the flow's hop and when its last packet passed. An entry ages out: a packet arriving
//! `timeout` or more after the previous one of its flow starts a new flowlet, which may
//! take another hop. The full hash is kept as a tag, so two flows that share an entry do not
//! share a flowlet (the newer one takes the entry over).

use super::Packet;
use crate::ids::{NodeId, PortId};
use crate::topology::ecmp::ecmp_hash;
use crate::units::Time;

#[derive(Clone, Copy, Debug)]
struct Entry {
    tag: u32,
    port: PortId,
    last: Time,
}

const EMPTY: Entry = Entry { tag: 0, port: PortId::NONE, last: Time::ZERO };

/// The table of one switch (empty when its scheme keeps no flowlets).
#[derive(Clone, Debug)]
pub struct FlowletTable {
    entries: Vec<Entry>,
}

/// The flow's hash at switch `node` (the ECMP hash of its 5-tuple, seeded by the switch).
#[inline]
pub fn flow_key(pkt: &Packet, node: NodeId) -> u32 {
    ecmp_hash(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node.0)
}

impl FlowletTable {
    /// A table of `size` entries (a power of two, or 0 for none).
    pub fn new(size: u32) -> FlowletTable {
        FlowletTable { entries: vec![EMPTY; size as usize] }
    }

    /// The hop of the flow hashed to `key` at `now`: its flowlet's hop while the gap since
    /// its last packet is below `timeout` and the hop is still among `hops`, else the one
    /// `choose(previous hop)` gives for a new flowlet.
    #[inline]
    pub fn hop(
        &mut self,
        key: u32,
        now: Time,
        timeout: Time,
        hops: &[PortId],
        choose: impl FnOnce(PortId) -> PortId,
    ) -> PortId {
        let mask = self.entries.len() - 1;
        let e = &mut self.entries[key as usize & mask];
        let same_flow = e.tag == key && e.port != PortId::NONE;
        let live = same_flow && now.ps() - e.last.ps() < timeout.ps() && hops.contains(&e.port);
        if !live {
            e.port = choose(if same_flow { e.port } else { PortId::NONE });
            e.tag = key;
        }
        e.last = now;
        e.port
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_below_the_timeout_keeps_the_hop_and_a_longer_one_asks_again() {
        let hops = [PortId::new(4), PortId::new(5)];
        let mut t = FlowletTable::new(8);
        let to = Time::from_us(100);
        assert_eq!(t.hop(7, Time::ZERO, to, &hops, |_| hops[0]), hops[0]);
        let kept = t.hop(7, Time::from_us(99), to, &hops, |_| hops[1]);
        assert_eq!(kept, hops[0], "a 99 us gap is inside the flowlet");
        let moved = t.hop(7, Time::from_us(199), to, &hops, |prev| {
            assert_eq!(prev, hops[0]);
            hops[1]
        });
        assert_eq!(moved, hops[1], "a 100 us gap starts a new flowlet");
    }
}
