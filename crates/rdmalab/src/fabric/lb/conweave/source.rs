//! ConWeave's source ToR: per data packet the flow's uplink, epoch, phase and header; the
//! control packets that come back (RTT_REPLY, CLEAR, NOTIFY).

use super::flow_table::{Claim, TableKind};
use super::header::{stamp, Header, CLEAR, DATA, EPOCH_MASK, INIT, NOTIFY, TAIL};
use super::{data_key, ConWeave, Tally, TxEntry, TAGS, TX_EMPTY};
use crate::engine::rng::RngExt;
use crate::engine::Rng;
use crate::fabric::Packet;
use crate::ids::{NodeId, PortId};
use crate::topology::ecmp::ecmp_hash;
use crate::topology::routing::pick;
use crate::units::Time;

impl ConWeave {
    /// A path not avoided, from two random samples among the paths through `hops` (the
    /// artifact's path-aware choice); `None` when both are avoided. A path is an uplink
    /// and the choices above it (`paths.rs`).
    fn good_path(&self, leaf: usize, dst: usize, hops: &[PortId], now: Time, rng: &mut Rng) -> Option<(PortId, u8)> {
        let a = self.any_path(leaf, dst, hops, rng);
        let b = self.any_path(leaf, dst, hops, rng);
        let ok = |p: (PortId, u8)| self.avoid_until[(leaf * self.leaves + dst) * TAGS + self.path_tag(leaf, p)] <= now;
        [a, b].into_iter().find(|&p| ok(p))
    }

    /// A path drawn uniformly among the paths through `hops` to leaf `dst` (one draw of
    /// `rng`, among `hops` alone on a leaf-spine).
    fn any_path(&self, leaf: usize, dst: usize, hops: &[PortId], rng: &mut Rng) -> (PortId, u8) {
        let i = rng.gen_range(0..hops.len() * self.upper[leaf * self.leaves + dst] as usize);
        (hops[i % hops.len()], (i / hops.len()) as u8)
    }

    /// The tag of path `(uplink, upper)` from leaf `leaf`.
    fn path_tag(&self, leaf: usize, (uplink, upper): (PortId, u8)) -> usize {
        self.tag[uplink.idx()] as usize + self.n_up[leaf] as usize * upper as usize
    }

    /// At a switch above the ToRs: which of its `n` next hops data packet `pkt` takes, as the
    /// path its source ToR chose says; `None` for a packet without ConWeave's header (its
    /// flow untracked: hashed) or at a ToR.
    pub fn follow(&self, node: NodeId, n: usize, pkt: &Packet) -> Option<usize> {
        let stride = self.stride[node.idx()] as usize;
        if stride == 0 {
            return None;
        }
        let h = Header::read(pkt);
        if h.flag == 0 {
            return None;
        }
        let upper = h.tag as usize / (self.n_up[self.leaf_of[pkt.src.idx()] as usize] as usize).max(1);
        Some(upper / stride % n)
    }

    /// The source ToR's rule for data packet `pkt` at `node` among uplinks `hops`: its
    /// uplink, with the header written (epoch, phase, INIT or TAIL, timestamp).
    pub fn source(
        &mut self,
        now: Time,
        node: NodeId,
        hops: &[PortId],
        pkt: &mut Packet,
        rng: &mut Rng,
        tally: &mut Tally,
    ) -> PortId {
        let leaf = self.leaf_of[node.idx()] as usize;
        let dst = self.leaf_of[pkt.dst.idx()] as usize;
        let hash = data_key(pkt.sip, pkt.dip, pkt.sport, pkt.dport);
        let key = self.tx.key(hash, pkt.sip, pkt.dip, pkt.sport, pkt.dport);
        let good = self.good_path(leaf, dst, hops, now, rng);
        let base = self.base_rtt[leaf * self.leaves + dst];
        let p = self.p;
        // An entry is free once its flow has been idle past the expiry (a new epoch would
        // start anyway); a live one is not evicted: state a reroute may need.
        let dead = |e: &TxEntry| e.path == PortId::NONE || now.ps().saturating_sub(e.active.ps()) > p.tx_expiry.ps();
        let (i, claimed) = match self.tx.claim(leaf, key, hash, dead, TX_EMPTY, |_, _| {}) {
            Claim::Found(i) => (i, false),
            Claim::New(i) => (i, true),
            Claim::Busy => {
                // Not tracked: hashed (in order, on one path).
                tally.untracked += 1;
                tally.table_full += u64::from(self.tx.kind() == TableKind::Exact);
                return hops[pick(ecmp_hash(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node.0) as usize, hops.len())];
            }
        };
        let e = &mut self.tx[i];
        let new = claimed || !hops.contains(&e.path);
        if new {
            *e = TX_EMPTY;
        }
        let expired = new || now.ps().saturating_sub(e.active.ps()) > p.tx_expiry.ps();
        let stabilized = !expired && e.stabilized;
        e.stabilized = false;
        e.active = now;
        let fresh = expired || stabilized;
        let mut timeout = false;
        if fresh {
            e.reply_deadline = now + base + p.reply_extra;
        } else if e.reply_deadline != Time::MAX && e.reply_deadline < now {
            e.reply_deadline = Time::MAX;
            timeout = true;
        }
        if fresh {
            e.epoch = e.epoch.wrapping_add(1) & EPOCH_MASK;
        }
        let phase = if fresh {
            e.phase = 0;
            0
        } else if timeout {
            e.phase = 1;
            0
        } else {
            e.phase
        };
        if e.path == PortId::NONE {
            let first = match good {
                Some(g) => g,
                None => self.any_path(leaf, dst, hops, rng),
            };
            (self.tx[i].path, self.tx[i].upper) = first;
        }
        let e = &mut self.tx[i];
        let used = if expired {
            if let Some(g) = good {
                (e.path, e.upper) = g;
            }
            (e.path, e.upper)
        } else if timeout {
            let old = (e.path, e.upper);
            if let Some(g) = good.filter(|&g| g != old) {
                (e.path, e.upper) = g;
                tally.reroutes += 1;
            }
            old
        } else {
            (e.path, e.upper)
        };
        if fresh {
            e.tail = 0;
        } else if timeout {
            e.tail = stamp(now);
        }
        let flag = if fresh {
            INIT
        } else if timeout {
            TAIL
        } else {
            DATA
        };
        let ts = if phase == 0 { stamp(now) } else { e.tail };
        let epoch = e.epoch;
        let tag = self.path_tag(leaf, used) as u16;
        Header { flag, phase, tag, epoch, ts }.write(pkt);
        used.0
    }

    /// The source ToR receives a control packet for one of its flows (consumed there).
    pub fn on_control(&mut self, now: Time, node: NodeId, pkt: &Packet) {
        let leaf = self.leaf_of[node.idx()] as usize;
        let h = Header::read(pkt);
        if h.flag == NOTIFY {
            let dst = self.leaf_of[pkt.src.idx()] as usize;
            self.avoid_until[(leaf * self.leaves + dst) * TAGS + h.tag as usize] = now + self.p.path_pause;
            return;
        }
        // The reply travels back: its 5-tuple is the data's, reversed.
        let hash = data_key(pkt.dip, pkt.sip, pkt.dport, pkt.sport);
        let key = self.tx.key(hash, pkt.dip, pkt.sip, pkt.dport, pkt.sport);
        let Some(i) = self.tx.find(leaf, key, hash) else {
            return; // the entry was taken over
        };
        let e = &mut self.tx[i];
        if e.epoch != h.epoch || e.phase != h.phase {
            return; // another epoch's
        }
        let timely = h.flag == CLEAR || (e.reply_deadline != Time::MAX && now < e.reply_deadline);
        if timely {
            e.stabilized = true;
            e.reply_deadline = Time::MAX;
        }
    }
}
