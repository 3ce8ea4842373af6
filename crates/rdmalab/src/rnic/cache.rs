//! The RNIC's QP-context cache.
//!
//! An RNIC keeps the contexts of recently used QPs in on-chip memory; touching a QP whose
//! context is not cached costs a fetch over PCIe. The DRUM paper measures throughput
//! collapsing once more QPs are active than the cache holds. We model a fully associative
//! LRU cache of `entries` contexts; a miss delays that QP's next packet by `miss_penalty`
//! while the NIC goes on serving other QPs. A fetched context is held for the packet that
//! needed it even if other QPs evict it from the cache meanwhile, so every packet costs at
//! most one miss and a thrashing NIC still makes progress (slowly).
//!
//! Fetches are `parallel` (default: each miss waits `miss_penalty` on its own, so the NIC
//! hides misses behind other QPs and aggregate throughput never drops) or `serial` (one
//! fetch unit: misses queue, so once every packet misses the NIC sends one packet per
//! penalty; this gives the knee of the DRUM paper's Fig 2c at `entries`).

use crate::ids::QpId;
use crate::units::Time;

/// How context fetches of misses proceed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FetchMode {
    /// Every miss fetches on its own, overlapping the others.
    #[default]
    Parallel,
    /// One fetch unit: misses queue behind each other.
    Serial,
}

/// Cache parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct QpCacheConfig {
    /// Contexts held.
    pub entries: u32,
    /// Extra delay before a QP whose context missed can send.
    pub miss_penalty_ns: u64,
    /// Parallel or serial fetches.
    #[serde(default)]
    pub fetch: FetchMode,
}

/// A fully associative LRU cache of QP contexts.
#[derive(Clone, Debug)]
pub struct QpCache {
    cfg: QpCacheConfig,
    slots: Vec<(QpId, u64)>,
    /// QPs whose context fetch is under way: their next touch is served by it.
    fetched: Vec<QpId>,
    clock: u64,
    /// Serial fetches: when the fetch unit is free.
    unit_free: Time,
    /// Lookups that hit.
    pub hits: u64,
    /// Lookups that missed.
    pub misses: u64,
}

impl QpCache {
    /// An empty cache.
    pub fn new(cfg: QpCacheConfig) -> QpCache {
        QpCache {
            cfg,
            slots: Vec::with_capacity(cfg.entries as usize),
            fetched: Vec::new(),
            clock: 0,
            unit_free: Time::ZERO,
            hits: 0,
            misses: 0,
        }
    }

    /// The miss penalty.
    pub fn penalty(&self) -> Time {
        Time::from_ns(self.cfg.miss_penalty_ns)
    }

    /// Whether misses queue for one fetch unit.
    pub fn serial(&self) -> bool {
        self.cfg.fetch == FetchMode::Serial
    }

    /// A miss at `now`: when its context is loaded. Serial fetches queue for the unit; the
    /// arbiter prepares a packet while the previous one is on the wire, so a fetch may have
    /// started up to `lookahead` (one packet's transmission) before `now`.
    pub fn fetched_at(&mut self, now: Time, lookahead: Time) -> Time {
        match self.cfg.fetch {
            FetchMode::Parallel => now + self.penalty(),
            FetchMode::Serial => {
                self.unit_free = self.unit_free.max(now.saturating_sub(lookahead)) + self.penalty();
                self.unit_free
            }
        }
    }

    /// Touches `qp`; returns true on a hit. A miss loads the context, evicting the least
    /// recently used one when full.
    pub fn touch(&mut self, qp: QpId) -> bool {
        self.clock += 1;
        if let Some(i) = self.fetched.iter().position(|&q| q == qp) {
            // The packet that waited for this fetch uses the fetched context.
            self.fetched.swap_remove(i);
            self.hits += 1;
            self.insert(qp);
            return true;
        }
        if let Some(slot) = self.slots.iter_mut().find(|(q, _)| *q == qp) {
            slot.1 = self.clock;
            self.hits += 1;
            return true;
        }
        self.misses += 1;
        self.fetched.push(qp);
        self.insert(qp);
        false
    }

    /// Loads `qp`'s context, evicting the least recently used one when full.
    fn insert(&mut self, qp: QpId) {
        if self.cfg.entries == 0 {
            return;
        }
        if let Some(slot) = self.slots.iter_mut().find(|(q, _)| *q == qp) {
            slot.1 = self.clock;
        } else if self.slots.len() < self.cfg.entries as usize {
            self.slots.push((qp, self.clock));
        } else if let Some(lru) = self.slots.iter_mut().min_by_key(|(_, t)| *t) {
            *lru = (qp, self.clock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recent() {
        let mut c = QpCache::new(QpCacheConfig { entries: 2, miss_penalty_ns: 100, fetch: FetchMode::Parallel });
        for q in [1, 2] {
            assert!(!c.touch(QpId(q)), "cold miss");
            assert!(c.touch(QpId(q)), "the fetched context serves the waiting packet");
        }
        assert!(c.touch(QpId(1)));
        assert!(!c.touch(QpId(3))); // evicts 2, the least recently used
        assert!(c.touch(QpId(3)));
        assert!(c.touch(QpId(1)));
        assert!(!c.touch(QpId(2)));
        assert_eq!((c.hits, c.misses), (5, 4));
    }

    #[test]
    fn cycling_more_qps_than_entries_always_misses() {
        let mut c = QpCache::new(QpCacheConfig { entries: 4, miss_penalty_ns: 100, fetch: FetchMode::Parallel });
        // Each QP misses, waits for its fetch, then sends; cycling 5 through 4 entries
        // evicts each context before its QP comes round again.
        for round in 0..10 {
            for q in 0..5 {
                let hit = c.touch(QpId(q));
                if round > 0 {
                    assert!(!hit, "LRU thrashes when cycling 5 QPs through 4 entries");
                }
                assert!(c.touch(QpId(q)), "after the fetch the packet goes");
            }
        }
    }
}

#[cfg(test)]
mod fetch_tests {
    use super::*;

    #[test]
    fn serial_misses_queue_parallel_ones_overlap() {
        let cfg = QpCacheConfig { entries: 1, miss_penalty_ns: 100, fetch: FetchMode::Serial };
        let mut s = QpCache::new(cfg);
        let (now, z) = (Time::from_ns(10), Time::ZERO);
        assert_eq!(s.fetched_at(now, z), Time::from_ns(110));
        assert_eq!(s.fetched_at(now, z), Time::from_ns(210));
        assert_eq!(s.fetched_at(Time::from_ns(500), z), Time::from_ns(600), "an idle unit starts at once");
        assert_eq!(s.fetched_at(Time::from_ns(620), Time::from_ns(20)), Time::from_ns(700), "overlaps the wire");
        let mut p = QpCache::new(QpCacheConfig { fetch: FetchMode::Parallel, ..cfg });
        assert_eq!(p.fetched_at(now, z), Time::from_ns(110));
        assert_eq!(p.fetched_at(now, z), Time::from_ns(110));
    }
}
