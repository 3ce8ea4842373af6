//! ConWeave's per-ToR flow tables: the source ToR's Tx entries and the
//! destination ToR's Rx entries, one segment of `conweave_table` slots per ToR, allocated
//! once when the run is built.
//!
//! Two kinds (`[fabric.lb] conweave_table_kind`):
//!
//! - `exact` (default): open addressing with linear probing, keyed by the flow's whole
//!   5-tuple, so that every flow has an entry of its own while the segment has room, as the
//!   ns-3 artifact's maps keyed by flow (`conweave-routing.h`, `m_conweaveTxTable`,
//!   `m_conweaveRxTable`). A flow is untracked only when its segment is full of entries still
//!   in use (`lb_table_full`).
//! - `direct`: one slot per flow, where its hash falls; a flow whose slot holds another
//!   active flow is untracked (rdmalab's earlier table, kept so that results made with it
//!   can be reproduced).
//!
//! When an entry is freed is the caller's rule (`dead`), the same under both kinds: the
//! direct table lets a new flow take a slot whose entry is dead; the exact one deletes a
//! dead entry when a probe for a flow not in the table meets it. Either way an idle flow
//! keeps its entry (and its epoch) until another flow needs the room. Deletion shifts the
//! entries behind it back (no tombstones), so a probe stops at the first empty slot however
//! long the run; the caller hears of every entry that moves (`moved`).

/// How a ToR keeps its flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TableKind {
    /// Open addressing, one entry per flow while there is room.
    #[default]
    Exact,
    /// One slot per hash value; collisions leave a flow untracked.
    Direct,
}

impl TableKind {
    /// The kind named `s` in a scenario.
    pub fn parse(s: &str) -> Option<TableKind> {
        match s {
            "exact" => Some(TableKind::Exact),
            "direct" => Some(TableKind::Direct),
            _ => None,
        }
    }
}

/// A flow's key: its 5-tuple (addresses, then ports) in an exact table, its hash alone
/// in a direct one.
pub(super) type Key = [u32; 3];

/// Set in every stored hash: a slot whose hash is 0 is empty. (The flows' hashes have it
/// already, `data_key`; the home slot takes only low bits.)
const USED: u32 = 1 << 31;

/// What `claim` found for a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Claim {
    /// The flow's entry, at this index.
    Found(usize),
    /// A new entry for the flow, at this index, set to the initial value.
    New(usize),
    /// No room: the flow is not tracked.
    Busy,
}

/// One slot: key, hash and entry side by side, so that a lookup touches one place in memory.
#[derive(Clone, Copy, Debug)]
struct Slot<V> {
    key: Key,
    /// The flow's hash with `USED` set (its home slot under the mask, kept to shift entries
    /// on deletion); 0 when empty.
    hash: u32,
    val: V,
}

/// One table per ToR side, all segments in one allocation.
#[derive(Clone, Debug)]
pub(super) struct FlowTable<V> {
    kind: TableKind,
    mask: usize,
    slots: Vec<Slot<V>>,
    empty: V,
}

impl<V: Copy> FlowTable<V> {
    /// `segments` tables of `slots` (a power of two) entries each, all `empty`.
    pub(super) fn new(kind: TableKind, segments: usize, slots: usize, empty: V) -> Self {
        assert!(slots.is_power_of_two(), "a flow table's size is a power of two");
        let slot = Slot { key: [0; 3], hash: 0, val: empty };
        FlowTable { kind, mask: slots - 1, slots: vec![slot; segments * slots], empty }
    }

    /// The table's kind.
    pub(super) fn kind(&self) -> TableKind {
        self.kind
    }

    /// The key of the flow (`sip`, `dip`, `sport`, `dport`) whose hash is `hash`: the hash
    /// itself in a direct table (as the earlier table had it, so that its results stay the same), the
    /// 5-tuple in an exact one.
    pub(super) fn key(&self, hash: u32, sip: u32, dip: u32, sport: u16, dport: u16) -> Key {
        match self.kind {
            TableKind::Direct => [hash, 0, 0],
            TableKind::Exact => [sip, dip, (sport as u32) << 16 | dport as u32],
        }
    }

    fn base(&self, seg: usize) -> usize {
        seg * (self.mask + 1)
    }

    /// Whether slot `i` holds the flow (`key`, `hash`).
    fn holds(&self, i: usize, key: Key, hash: u32) -> bool {
        self.slots[i].hash == hash | USED && self.slots[i].key == key
    }

    fn is_empty(&self, i: usize) -> bool {
        self.slots[i].hash == 0
    }

    /// The index of the entry of `key` (hash `hash`) in segment `seg`, if it has one.
    #[inline]
    pub(super) fn find(&self, seg: usize, key: Key, hash: u32) -> Option<usize> {
        let base = self.base(seg);
        let mut s = hash as usize & self.mask;
        for _ in 0..=self.mask {
            let i = base + s;
            if self.holds(i, key, hash) {
                return Some(i);
            }
            if self.is_empty(i) || self.kind == TableKind::Direct {
                return None;
            }
            s = (s + 1) & self.mask;
        }
        None
    }

    /// The entry of `key` in segment `seg`, made (as `init`) if it has none and there is
    /// room; entries `dead` says are free make room. `moved(entry, index)` hears of each
    /// entry shifted to a new index. (Inlined, as its callers' closures: a lookup per packet.)
    #[inline]
    pub(super) fn claim(
        &mut self,
        seg: usize,
        key: Key,
        hash: u32,
        dead: impl Fn(&V) -> bool,
        init: V,
        moved: impl FnMut(&V, usize),
    ) -> Claim {
        match self.kind {
            TableKind::Direct => self.claim_direct(seg, key, hash, dead, init),
            TableKind::Exact => self.claim_exact(seg, key, hash, dead, init, moved),
        }
    }

    /// The one slot where the hash falls: the flow's, or taken over if empty or dead.
    #[inline]
    fn claim_direct(&mut self, seg: usize, key: Key, hash: u32, dead: impl Fn(&V) -> bool, init: V) -> Claim {
        let i = self.base(seg) + (hash as usize & self.mask);
        if self.holds(i, key, hash) {
            return Claim::Found(i);
        }
        if !self.is_empty(i) && !dead(&self.slots[i].val) {
            return Claim::Busy;
        }
        self.slots[i] = Slot { key, hash: hash | USED, val: init };
        Claim::New(i)
    }

    /// Probes from the hash's slot to the flow's entry or the first empty slot (the flow
    /// cannot be behind one), deleting the dead entries on the way.
    #[inline]
    fn claim_exact(
        &mut self,
        seg: usize,
        key: Key,
        hash: u32,
        dead: impl Fn(&V) -> bool,
        init: V,
        mut moved: impl FnMut(&V, usize),
    ) -> Claim {
        let base = self.base(seg);
        let mut s = hash as usize & self.mask;
        let mut probed = 0;
        while probed <= self.mask {
            let i = base + s;
            if self.holds(i, key, hash) {
                return Claim::Found(i);
            }
            if self.is_empty(i) {
                self.slots[i] = Slot { key, hash: hash | USED, val: init };
                return Claim::New(i);
            }
            if dead(&self.slots[i].val) {
                // Probe again from the start: in a segment that was full, the slot the
                // deletion empties may lie behind `s`, and the flow must go there.
                self.delete(seg, s, &mut moved);
                (s, probed) = (hash as usize & self.mask, 0);
                continue;
            }
            s = (s + 1) & self.mask;
            probed += 1;
        }
        Claim::Busy
    }

    /// Deletes slot `s` of segment `seg` (exact tables): each later entry of the cluster
    /// that may sit in the hole (its home slot is not between the hole and it) moves there,
    /// and its old slot becomes the hole.
    #[inline(never)]
    fn delete(&mut self, seg: usize, s: usize, moved: &mut impl FnMut(&V, usize)) {
        let base = self.base(seg);
        let mut hole = s;
        self.slots[base + hole].hash = 0;
        let mut j = (s + 1) & self.mask;
        // Up to the cluster's end; in a segment that was full, once round and no further
        // (past `s` the distances back to the hole would wrap).
        while !self.is_empty(base + j) && j != s {
            let home = self.slots[base + j].hash as usize & self.mask;
            // Distances back from j: to its home, and to the hole.
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(hole) & self.mask) {
                let (from, to) = (base + j, base + hole);
                self.slots[to] = self.slots[from];
                self.slots[from].hash = 0;
                moved(&self.slots[to].val, to);
                hole = j;
            }
            j = (j + 1) & self.mask;
        }
        let last = &mut self.slots[base + hole];
        (last.key, last.val) = ([0; 3], self.empty);
    }
}

impl<V> std::ops::Index<usize> for FlowTable<V> {
    type Output = V;
    fn index(&self, i: usize) -> &V {
        &self.slots[i].val
    }
}

impl<V> std::ops::IndexMut<usize> for FlowTable<V> {
    fn index_mut(&mut self, i: usize) -> &mut V {
        &mut self.slots[i].val
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A value: its flow's number, and whether the test calls it dead.
    type Val = (u32, bool);
    const NIL: Val = (u32::MAX, false);

    fn table(kind: TableKind, slots: usize) -> FlowTable<Val> {
        FlowTable::new(kind, 2, slots, NIL)
    }

    /// Claims flow `f` with hash `h` in segment 1 (no entry is dead unless marked).
    fn claim(t: &mut FlowTable<Val>, f: u32, h: u32) -> Claim {
        t.claim(1, k(f), h, |v| v.1, (f, false), |_, _| {})
    }

    /// Flow `f`'s key.
    fn k(f: u32) -> Key {
        [f, 1, 2]
    }

    fn at(c: Claim) -> usize {
        match c {
            Claim::Found(i) | Claim::New(i) => i,
            Claim::Busy => panic!("no room"),
        }
    }

    /// Every entry is reachable: no empty slot between its home and it.
    fn reachable(t: &FlowTable<Val>, seg: usize) -> bool {
        let base = t.base(seg);
        (0..=t.mask).filter(|&s| !t.is_empty(base + s)).all(|s| {
            let home = t.slots[base + s].hash as usize & t.mask;
            let d = s.wrapping_sub(home) & t.mask;
            (0..d).all(|k| !t.is_empty(base + ((home + k) & t.mask)))
        })
    }

    #[test]
    fn colliding_flows_each_get_an_entry_and_deletion_keeps_the_rest_findable() {
        let mut t = table(TableKind::Exact, 8);
        // Flows 0..4 share home slot 6: they fill 6, 7, 0, 1 (the probe wraps).
        let idx: Vec<usize> = (0..4).map(|f| at(claim(&mut t, f, 6))).collect();
        assert_eq!(idx, vec![14, 15, 8, 9], "segment 1 starts at 8");
        for f in 0..4 {
            assert_eq!(t.find(1, k(f), 6), Some(idx[f as usize]));
            assert_eq!(claim(&mut t, f, 6), Claim::Found(idx[f as usize]));
        }
        assert_eq!(t.find(0, k(0), 6), None, "segments are apart");
        // Flow 1 dies; the next new flow's probe deletes it and shifts 2 and 3 back.
        t[idx[1]].1 = true;
        let mut moves = Vec::new();
        let c = t.claim(1, k(99), 6, |v| v.1, (99, false), |v, i| moves.push((v.0, i)));
        assert_eq!(moves, vec![(2, 15), (3, 8)]);
        assert_eq!(c, Claim::New(9));
        assert_eq!(t.find(1, k(1), 6), None, "flow 1 is gone");
        for (f, i) in [(0, 14), (2, 15), (3, 8), (99, 9)] {
            let key = k(f);
            assert_eq!(t.find(1, key, 6), Some(i));
            assert_eq!(t[i].0, f);
        }
    }

    #[test]
    fn a_full_segment_refuses_until_an_entry_dies() {
        let mut t = table(TableKind::Exact, 4);
        for f in 0..4 {
            at(claim(&mut t, f, f * 7));
        }
        assert_eq!(claim(&mut t, 9, 0), Claim::Busy);
        assert!((0..4).all(|f| t.find(1, k(f), f * 7).is_some()));
        // Delete-then-reinsert: flow 2 dies, flow 9 takes the room; flow 2 comes back to a
        // full table, then gets a fresh entry once flow 9 dies.
        let i2 = t.find(1, k(2), 14).unwrap();
        t[i2].1 = true;
        let i9 = at(claim(&mut t, 9, 0));
        assert_eq!(t[i9], (9, false));
        assert_eq!(claim(&mut t, 2, 14), Claim::Busy);
        t[i9].1 = true;
        assert!(matches!(claim(&mut t, 2, 14), Claim::New(_)));
        assert_eq!(t.find(1, k(9), 0), None);
    }

    #[test]
    fn a_direct_table_keeps_one_flow_per_slot() {
        let mut t = table(TableKind::Direct, 8);
        assert_eq!(t.key(0x8000_0005, 1, 2, 3, 4), [0x8000_0005, 0, 0]);
        assert_eq!(claim(&mut t, 0, 5), Claim::New(13));
        assert_eq!(claim(&mut t, 1, 5), Claim::Busy, "slot 5 is flow 0's");
        assert_eq!(t.find(1, k(1), 5), None);
        t[13].1 = true;
        assert_eq!(claim(&mut t, 1, 5), Claim::New(13), "a dead entry is taken over");
        assert_eq!(claim(&mut t, 1, 5), Claim::Found(13));
    }

    /// A small deterministic generator (xorshift), so that a failure replays.
    struct Draw(u64);
    impl Draw {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Flow `f`'s hash in `round`: 16 homes 4 slots apart, shifted by the round.
    fn bunched(f: u32, round: u32) -> u32 {
        (f.wrapping_mul(2_654_435_761) >> 20) % 16 * 4 + round % 4
    }

    #[test]
    fn random_operations_agree_with_a_hash_map() {
        let mut d = Draw(0x2545_F491_4F6C_DD1D);
        let mut refused = 0;
        for round in 0..20 {
            let mut t = table(TableKind::Exact, 64);
            let mut model: HashMap<u32, u32> = HashMap::new();
            let mut stamp = 0u32;
            for _ in 0..4000 {
                // 80 flows over 64 slots, hashes bunched on 16 homes: full tables and long
                // clusters both happen.
                let f = d.below(80) as u32;
                let h = bunched(f, round);
                match d.below(3) {
                    0 => {
                        // Kill: the flow's entry becomes free.
                        if let Some(i) = t.find(1, k(f), h).filter(|&i| !t[i].1) {
                            t[i].1 = true;
                            model.remove(&f);
                        }
                    }
                    _ => {
                        stamp += 1;
                        let full = model.len() == 64 && !model.contains_key(&f);
                        let c = t.claim(1, k(f), h, |v| v.1, (stamp, false), |_, _| {});
                        match c {
                            Claim::Busy => {
                                assert!(full, "refused with room: {model:?}");
                                refused += 1;
                            }
                            Claim::New(i) => {
                                assert!(!model.contains_key(&f));
                                model.insert(f, stamp);
                                assert_eq!(t[i], (stamp, false));
                            }
                            // A dead entry not yet deleted is its own flow's again (as
                            // an idle flow keeps its epoch): the caller revives it.
                            Claim::Found(i) if t[i].1 => {
                                assert!(!model.contains_key(&f));
                                t[i].1 = false;
                                model.insert(f, t[i].0);
                            }
                            Claim::Found(i) => assert_eq!(Some(&t[i].0), model.get(&f)),
                        }
                    }
                }
                assert!(
                    reachable(&t, 1),
                    "round {round}, flow {f}: {:?}",
                    t.slots[64..].iter().map(|s| s.hash).collect::<Vec<_>>()
                );
                for g in 0..80u32 {
                    let hg = bunched(g, round);
                    let live = t.find(1, k(g), hg).filter(|&i| !t[i].1).map(|i| t[i].0);
                    assert_eq!(live, model.get(&g).copied(), "flow {g}");
                }
            }
        }
        assert!(refused > 0, "the sequences fill the table");
    }
}
