//! Collectives as dependency-driven jobs: each algorithm turns a collective (kind, ranks,
//! bytes, channels, chunk) into the transfers of its published step schedule, and a run
//! carries them out as any job ([`crate::app::deps`], [`crate::app::rank`]).
//!
//! - `ring`: NCCL's ring (allreduce as reduce-scatter then allgather, 2(n−1) steps;
//!   allgather and reduce-scatter, n−1 steps; broadcast as a pipelined chain);
//! - `tree`: NCCL's double binary tree (allreduce: each tree reduces half the data up and
//!   broadcasts it down, pipelined by chunk);
//! - `halving`: Thakur, Rabenseifner and Gropp's recursive halving (reduce-scatter) then
//!   recursive doubling (allgather) for allreduce, and the direct all-to-all.
//!
//! `docs/collectives.md` gives the sources and the closed forms the tests check.

mod halving;
mod record;
mod ring;
mod tree;

pub use record::{part_record, records, CollectiveRecord, RecordedPart, TransferTimes};

use super::deps::{Transfer, TransferGraph};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;

/// Which collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Every rank ends with the sum of every rank's buffer.
    Allreduce,
    /// Every rank ends with every rank's piece.
    Allgather,
    /// Every rank ends with the sum of one piece of every rank's buffer.
    ReduceScatter,
    /// Every rank sends a distinct piece to every other.
    Alltoall,
    /// The first rank's buffer reaches every rank.
    Broadcast,
}

/// Which algorithm carries it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// NCCL's ring (a pipelined chain for broadcast).
    Ring,
    /// NCCL's double binary tree.
    DoubleBinaryTree,
    /// Recursive halving and doubling (Rabenseifner; Thakur et al.).
    HalvingDoubling,
    /// Every pair at once (all-to-all).
    Direct,
    /// NVLink SHARP as SimAI models it: every rank sends its data to the NVSwitch, which
    /// sends the reduced data back (`formats::simai::nvls_schedule`). Only SimAI's workloads
    /// in the simai dialect choose it; no scenario names it.
    Nvls,
}

impl Kind {
    /// Every kind by its name in the scenario.
    pub const NAMES: [(&'static str, Kind); 5] = [
        ("allreduce", Kind::Allreduce),
        ("allgather", Kind::Allgather),
        ("reduce_scatter", Kind::ReduceScatter),
        ("alltoall", Kind::Alltoall),
        ("broadcast", Kind::Broadcast),
    ];

    /// Its name in the scenario and the records.
    pub fn name(self) -> &'static str {
        Kind::NAMES.iter().find(|(_, k)| *k == self).map_or("", |(n, _)| n)
    }

    /// NCCL-tests' bus-bandwidth factor for `n` ranks (its PERFORMANCE.md): busbw = algbw ×
    /// factor, so that busbw is comparable to the link's rate whatever the rank count.
    pub fn busbw_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Kind::Allreduce => 2.0 * (n - 1.0) / n,
            Kind::Allgather | Kind::ReduceScatter | Kind::Alltoall => (n - 1.0) / n,
            Kind::Broadcast => 1.0,
        }
    }

    /// The algorithms that carry this kind out.
    pub fn algorithms(self) -> &'static [Algorithm] {
        match self {
            Kind::Allreduce => &[Algorithm::Ring, Algorithm::DoubleBinaryTree, Algorithm::HalvingDoubling],
            Kind::Allgather | Kind::ReduceScatter | Kind::Broadcast => &[Algorithm::Ring],
            Kind::Alltoall => &[Algorithm::Direct],
        }
    }
}

impl Algorithm {
    /// Every algorithm by its name in the scenario.
    pub const NAMES: [(&'static str, Algorithm); 4] = [
        ("ring", Algorithm::Ring),
        ("double_binary_tree", Algorithm::DoubleBinaryTree),
        ("halving_doubling", Algorithm::HalvingDoubling),
        ("direct", Algorithm::Direct),
    ];

    /// Its name in the scenario and the records.
    pub fn name(self) -> &'static str {
        if self == Algorithm::Nvls {
            return "nvls";
        }
        Algorithm::NAMES.iter().find(|(_, a)| *a == self).map_or("", |(n, _)| n)
    }
}

/// A collective as the scenario gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    /// Its name; the records are `name#0`, `name#1`, ... by iteration.
    pub name: String,
    /// Which collective.
    pub kind: Kind,
    /// Which algorithm.
    pub algorithm: Algorithm,
    /// The ranks' hosts, in rank order (broadcast's root is the first).
    pub ranks: Vec<NodeId>,
    /// Bytes per rank as NCCL-tests counts them (its "size" column).
    pub size: u64,
    /// Parallel rings or tree pairs, each on its own QPs, each with its share of the bytes.
    pub channels: u16,
    /// The pipelining unit of ring, tree and broadcast.
    pub chunk: u64,
    /// When the first iteration starts.
    pub start: Time,
    /// Back-to-back iterations: a rank starts iteration k+1 once its part of k is done.
    pub repeat: u32,
    /// The transport of its QPs (`[[collective]] transport`; RC by default).
    pub transport: crate::rnic::transport::Transport,
}

/// A collective's job and what its records need.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Every iteration's transfers, iteration after iteration.
    pub graph: TransferGraph,
    /// Transfers per iteration (iteration k is `k*per_iteration..(k+1)*per_iteration`).
    pub per_iteration: usize,
}

/// Transfers of one iteration, built by an algorithm: `bytes` and `lane` set, `delay` zero.
pub(crate) struct Steps {
    pub(crate) ranks: Vec<NodeId>,
    pub(crate) transfers: Vec<Transfer>,
}

impl Steps {
    /// Adds a transfer from rank `from` to rank `to` (positions in `ranks`) after `deps`
    /// (received, at `from`); returns its index.
    pub(crate) fn push(&mut self, from: usize, to: usize, bytes: u64, lane: u16, deps: &[u32]) -> u32 {
        let deps = deps.iter().map(|&on| super::deps::Dep { on, when: super::deps::Trigger::Received }).collect();
        self.transfers.push(Transfer {
            src: self.ranks[from],
            dst: self.ranks[to],
            bytes,
            lane,
            delay: Time::ZERO,
            deps,
        });
        (self.transfers.len() - 1) as u32
    }
}

/// Byte `i` of `parts` equal shares of `total` (the first `total % parts` one byte larger).
pub(crate) fn share(total: u64, parts: u64, i: u64) -> u64 {
    total / parts + u64::from(i < total % parts)
}

impl Collective {
    /// Checks the fields that need no topology (errors name the field).
    pub fn validate(&self) -> Result<()> {
        if !self.kind.algorithms().contains(&self.algorithm) {
            let ok: Vec<&str> = self.kind.algorithms().iter().map(|a| a.name()).collect();
            return Err(Error::scenario(
                "algorithm",
                format!("{} does not carry out {} (use {})", self.algorithm.name(), self.kind.name(), ok.join(" or ")),
            ));
        }
        let n = self.ranks.len();
        if n < 2 {
            return Err(Error::scenario("ranks", format!("a collective needs at least 2 ranks, got {n}")));
        }
        let mut seen = self.ranks.clone();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::scenario("ranks", format!("host {} is listed twice", w[0])));
        }
        if self.algorithm == Algorithm::HalvingDoubling && !n.is_power_of_two() {
            return Err(Error::scenario(
                "ranks",
                format!(
                    "halving_doubling needs a power-of-two number of ranks, got {n} (use ring or double_binary_tree)"
                ),
            ));
        }
        for (field, v) in
            [("channels", u64::from(self.channels)), ("chunk", self.chunk), ("repeat", u64::from(self.repeat))]
        {
            if v == 0 {
                return Err(Error::scenario(field, "must be at least 1"));
            }
        }
        // A tree pair's channel takes two lanes (2c and 2c + 1), which are 16-bit.
        if self.algorithm == Algorithm::DoubleBinaryTree && self.channels > u16::MAX / 2 {
            let msg =
                format!("at most {} for double_binary_tree (two trees' QPs each), got {}", u16::MAX / 2, self.channels);
            return Err(Error::scenario("channels", msg));
        }
        let (per, what) = self.min_bytes_per_channel();
        let per = per * u64::from(self.channels);
        if self.size < per {
            return Err(Error::scenario(
                "size",
                format!("{} B leaves some transfer empty: at least {per} B ({what}) are needed", self.size),
            ));
        }
        Ok(())
    }

    /// The fewest bytes a channel needs so that every transfer of its schedule carries one,
    /// and what they count: a ring, halving-doubling and all-to-all cut a channel into a
    /// segment per rank; a tree pair halves it, then cuts each half into chunks of at most
    /// `chunk` (as many as it has bytes at most); broadcast's chain only cuts it into chunks.
    fn min_bytes_per_channel(&self) -> (u64, &'static str) {
        match (self.kind, self.algorithm) {
            (Kind::Broadcast, _) => (1, "a byte per channel"),
            (_, Algorithm::DoubleBinaryTree) => (2, "2 trees × channels"),
            _ => (self.ranks.len() as u64, "ranks × channels"),
        }
    }

    /// Transfers of one iteration, counted in closed form from the same step schedules
    /// (`schedule` builds exactly this many; a test checks), so that the cost of a
    /// collective can be told before any transfer is built (`scenario/limits.rs`).
    pub fn transfers_per_iteration(&self) -> u128 {
        let n = self.ranks.len() as u128;
        let chunk = self.chunk.max(1);
        (0..self.channels)
            .map(|ch| {
                let bytes = share(self.size, u64::from(self.channels), u64::from(ch));
                let loops = u128::from(bytes.div_ceil(self.ranks.len() as u64 * chunk).max(1));
                match (self.kind, self.algorithm) {
                    (Kind::Allreduce, Algorithm::Ring) => loops * 2 * (n - 1) * n,
                    (Kind::Allgather | Kind::ReduceScatter, _) => loops * (n - 1) * n,
                    (Kind::Broadcast, _) => u128::from(bytes.div_ceil(chunk)) * (n - 1),
                    // Each tree: every chunk of its half goes up every edge and down again.
                    (Kind::Allreduce, Algorithm::DoubleBinaryTree) => {
                        (0..2).map(|t| u128::from(share(bytes, 2, t).div_ceil(chunk)) * 2 * (n - 1)).sum()
                    }
                    // log2(n) halving steps, as many doubling steps, n transfers each.
                    (Kind::Allreduce, _) => 2 * u128::from(n.max(1).ilog2()) * n,
                    (Kind::Alltoall, _) => n * (n - 1),
                }
            })
            .sum()
    }

    /// The transfers of every iteration: the algorithm's steps, iteration after iteration,
    /// each iteration's first sends at a rank waiting on that rank's part of the one before.
    pub fn schedule(&self) -> Result<Schedule> {
        self.validate()?;
        let mut steps = Steps { ranks: self.ranks.clone(), transfers: Vec::new() };
        let n = self.ranks.len();
        for ch in 0..self.channels {
            let bytes = share(self.size, u64::from(self.channels), u64::from(ch));
            match (self.kind, self.algorithm) {
                (Kind::Allreduce, Algorithm::Ring) => ring::ring(&mut steps, bytes, self.chunk, 2 * (n - 1), ch),
                (Kind::Allgather | Kind::ReduceScatter, _) => ring::ring(&mut steps, bytes, self.chunk, n - 1, ch),
                (Kind::Broadcast, _) => ring::chain(&mut steps, bytes, self.chunk, ch),
                (Kind::Allreduce, Algorithm::DoubleBinaryTree) => tree::double_tree(&mut steps, bytes, self.chunk, ch),
                (Kind::Allreduce, _) => halving::halving_doubling(&mut steps, bytes, ch),
                (Kind::Alltoall, _) => halving::direct(&mut steps, bytes, ch),
            }
        }
        if steps.transfers.iter().any(|t| t.bytes == 0) {
            return Err(Error::scenario("chunk", "cuts some transfer to 0 bytes: use a larger chunk or size"));
        }
        let per_iteration = steps.transfers.len();
        let transfers = repeat(steps.transfers, self.repeat);
        let graph = TransferGraph::new(transfers)?;
        Ok(Schedule { graph, per_iteration })
    }
}

/// `one` iteration `times` times; in iteration k+1, a transfer without dependencies waits on
/// every transfer of iteration k that its sender sent (`Sent`) or received (`Received`).
fn repeat(one: Vec<Transfer>, times: u32) -> Vec<Transfer> {
    use super::deps::{Dep, Trigger};
    let m = one.len() as u32;
    // What a host's part of one iteration is, as dependencies on iteration 0's indices.
    let mut part: std::collections::HashMap<NodeId, Vec<Dep>> = std::collections::HashMap::new();
    for (j, p) in one.iter().enumerate() {
        part.entry(p.src).or_default().push(Dep { on: j as u32, when: Trigger::Sent });
        part.entry(p.dst).or_default().push(Dep { on: j as u32, when: Trigger::Received });
    }
    let mut all = one.clone();
    for k in 1..times {
        let (prev, base) = ((k - 1) * m, k * m);
        for t in &one {
            let mut t = t.clone();
            if t.deps.is_empty() {
                t.deps = part[&t.src].iter().map(|d| Dep { on: d.on + prev, when: d.when }).collect();
            } else {
                t.deps.iter_mut().for_each(|d| d.on += base);
            }
            all.push(t);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A collective of `n` ranks (hosts 0..n) starting at zero, once.
    fn collective(kind: Kind, algorithm: Algorithm, n: usize, size: u64, channels: u16, chunk: u64) -> Collective {
        Collective {
            name: "c".into(),
            kind,
            algorithm,
            ranks: (0..n as u32).map(NodeId).collect(),
            size,
            channels,
            chunk,
            start: Time::ZERO,
            repeat: 1,
            transport: Default::default(),
        }
    }

    #[test]
    fn the_fewest_bytes_the_check_asks_for_give_every_transfer_one() {
        // A broadcast needs a byte per channel and a tree pair two: fewer ranks' worth of
        // bytes than that is a valid NCCL call (nccl-tests' sweeps start at a few bytes).
        for (kind, algorithm, least) in [
            (Kind::Allreduce, Algorithm::Ring, None),
            (Kind::Allreduce, Algorithm::DoubleBinaryTree, Some(2)),
            (Kind::Allreduce, Algorithm::HalvingDoubling, None),
            (Kind::Allgather, Algorithm::Ring, None),
            (Kind::ReduceScatter, Algorithm::Ring, None),
            (Kind::Broadcast, Algorithm::Ring, Some(1)),
            (Kind::Alltoall, Algorithm::Direct, None),
        ] {
            for n in [2usize, 3, 5, 8] {
                if algorithm == Algorithm::HalvingDoubling && !n.is_power_of_two() {
                    continue;
                }
                for (channels, chunk) in [(1u16, 1u64), (3, 1), (2, 512 << 10)] {
                    let per = least.unwrap_or(n as u64) * u64::from(channels);
                    let c = |size| collective(kind, algorithm, n, size, channels, chunk);
                    let what = format!("{kind:?} {algorithm:?} n={n} ch={channels} chunk={chunk}");
                    let s = c(per).schedule().unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(s.graph.transfers().iter().all(|t| t.bytes > 0), "{what}");
                    let e = c(per - 1).validate().unwrap_err().to_string();
                    assert!(e.contains(&format!("at least {per} B")), "{what}: {e}");
                }
            }
        }
    }

    #[test]
    fn a_tree_pair_refuses_more_channels_than_its_lanes_can_number() {
        // Lanes are 16-bit and a tree pair's channel c takes 2c and 2c + 1: past 32767
        // channels two channels would share a QP.
        let c = |channels| collective(Kind::Allreduce, Algorithm::DoubleBinaryTree, 4, 1 << 20, channels, 512 << 10);
        assert!(c(u16::MAX / 2).validate().is_ok());
        let e = c(u16::MAX / 2 + 1).validate().unwrap_err().to_string();
        assert!(e.contains("channels") && e.contains("at most 32767"), "{e}");
    }

    #[test]
    fn the_closed_form_counts_what_the_schedule_builds() {
        // Every kind and algorithm, rank counts odd and even (powers of two for halving),
        // sizes that do and do not divide, chunks above and below a loop's share.
        for (kind, algorithm) in [
            (Kind::Allreduce, Algorithm::Ring),
            (Kind::Allreduce, Algorithm::DoubleBinaryTree),
            (Kind::Allreduce, Algorithm::HalvingDoubling),
            (Kind::Allgather, Algorithm::Ring),
            (Kind::ReduceScatter, Algorithm::Ring),
            (Kind::Broadcast, Algorithm::Ring),
            (Kind::Alltoall, Algorithm::Direct),
        ] {
            for n in [2usize, 3, 4, 7, 8] {
                if algorithm == Algorithm::HalvingDoubling && !n.is_power_of_two() {
                    continue;
                }
                for (size, chunk, channels) in [(1000, 64, 1), (4096, 1000, 3), (100_003, 777, 2), (50, 1, 1)] {
                    let c = collective(kind, algorithm, n, size, channels, chunk);
                    let Ok(s) = c.schedule() else { continue };
                    let what = format!("{kind:?} {algorithm:?} n={n} size={size} chunk={chunk} ch={channels}");
                    assert_eq!(c.transfers_per_iteration(), s.per_iteration as u128, "{what}");
                }
            }
        }
    }
}
