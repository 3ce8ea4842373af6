//! The traffic of the CC-attack paper's congestion-control attacks, as pure schedules.
//!
//! * **Parallel QPs** (§III-A): `qps` flows of `size` bytes between one pair, opened
//!   together, each on its own QP ([`parallel_qps`]).
//! * **Staggered QPs** (§III-B): one transfer cut into chunks; chunk `k` is posted at
//!   `start + k·interval` on slot `k mod qps` ([`Staggered`]). The sender host's application
//!   (`sim::apps`) runs it, so a transfer of a million chunks costs one flow record and as
//!   many live QPs as slots, never a million of anything.
//! * **Shuffled overlay** (§III-C, Fig. 1): a ring all-reduce whose ring changes every step
//!   ([`overlay_shifts`], [`overlay_flows`]).
//! * **Splitting** (§IV-B): long flows of a Poisson source cut into pieces on their own QPs
//!   ([`split_flows`]).
//!
//! Everything here is deterministic in its inputs and seed.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};
use crate::ids::{AppId, NodeId};
use crate::units::Time;
use crate::workload::FlowSpec;

/// What a staggered transfer does with a slot's QP between chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StaggerPolicy {
    /// One QP per slot for the whole transfer; its congestion state recovers while idle as
    /// the algorithm defines (DCQCN's timers raise it, HPCC keeps it).
    Reuse,
    /// The slot's QP is destroyed once its chunk completes and a fresh one (line rate, new
    /// state) is opened for the slot's next chunk.
    Recreate,
}

/// One staggered transfer (§III-B). `chunk` and `interval` are `None` until the simulator
/// resolves them to the path's BDP and base RTT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staggered {
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Number of slots (QPs used in rotation).
    pub qps: u32,
    /// Total payload bytes.
    pub size: u64,
    /// Bytes per chunk (default: the path's BDP).
    pub chunk: Option<u64>,
    /// Time between chunk posts (default: the path's base RTT).
    pub interval: Option<Time>,
    /// Reuse or recreate a slot's QP.
    pub policy: StaggerPolicy,
    /// When chunk 0 is posted.
    pub start: Time,
    /// Tenant index.
    pub tenant: u16,
    /// Blitz's `paced` incast: hold the transfer to 1/n of the receiver's link, the
    /// interval being `n` times a chunk's time on that link, headers included (the
    /// simulator resolves it; `interval` is then unused).
    pub paced: Option<u32>,
}

impl Staggered {
    /// Number of chunks: `ceil(size / chunk)`.
    pub fn chunks(size: u64, chunk: u64) -> u64 {
        size.div_ceil(chunk)
    }
    /// Bytes of chunk `k` (the last one carries the remainder).
    pub fn chunk_size(size: u64, chunk: u64, k: u64) -> u64 {
        chunk.min(size - k * chunk)
    }
    /// When chunk `k` is posted, and on which slot.
    pub fn post(start: Time, interval: Time, qps: u32, k: u64) -> (Time, u32) {
        (Time(start.0 + k * interval.0), (k % qps as u64) as u32)
    }
}

/// An application on a sending host that carries flows whose `app` field names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostApp {
    /// A staggered transfer: its one flow is the whole transfer, the app cuts it.
    Staggered(Staggered),
    /// One reused QP per destination (a shuffled-overlay member): each flow is posted as a
    /// message on the QP to its destination, which closes after its last planned message.
    PairQps {
        /// The sending host.
        host: NodeId,
        /// Per destination, how many flows it will carry.
        planned: Vec<(NodeId, u32)>,
    },
    /// Blitz's serial incast: the aggregator granting one sender at a time.
    GrantAggregator(crate::workload::serial_incast::GrantAggregator),
    /// Blitz's serial incast: a sender waiting for its grants.
    GrantSender(crate::workload::serial_incast::GrantSender),
}

/// `qps` flows of `size` bytes from `src` to `dst`, all at `start` (one QP each).
pub fn parallel_qps(src: NodeId, dst: NodeId, qps: u32, size: u64, start: Time, tenant: u16) -> Vec<FlowSpec> {
    (0..qps).map(|_| FlowSpec { tenant, ..FlowSpec::new(src, dst, size, start) }).collect()
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The shifts `k` in `1..n` coprime to `n`: `i -> (i + k) mod n` is then one ring through
/// all `n` members (a Hamiltonian cycle of the complete graph).
pub fn coprime_shifts(n: u32) -> Vec<u32> {
    (1..n).filter(|&k| gcd(k, n) == 1).collect()
}

/// The ring shifts of `steps` steps: at each step `parallel` distinct shifts coprime to
/// `n`, none used at the step before (so every member's successors are new at each step),
/// drawn uniformly by the seed. Needs `2 * parallel <= phi(n)`.
pub fn overlay_shifts(n: u32, steps: u64, parallel: u32, seed: u64) -> Result<Vec<Vec<u32>>> {
    let all = coprime_shifts(n);
    if parallel == 0 || 2 * parallel as usize > all.len() {
        return Err(Error::scenario(
            "parallel",
            format!(
                "{parallel} rings at once need 2 x {parallel} shifts coprime to {n} (there are {}: {all:?})",
                all.len()
            ),
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out: Vec<Vec<u32>> = Vec::with_capacity(steps as usize);
    for t in 0..steps as usize {
        let mut choices: Vec<u32> = match t {
            0 => all.clone(),
            _ => all.iter().copied().filter(|k| !out[t - 1].contains(k)).collect(),
        };
        choices.shuffle(&mut rng);
        choices.truncate(parallel as usize);
        out.push(choices);
    }
    Ok(out)
}

/// The chunks of a shuffled-overlay all-reduce: at step `t` (time `start + t·interval`,
/// before `until`), member `i` sends `chunk` bytes to member `(i + k) mod n` for each shift
/// `k` of the step. Member `i`'s flows carry `app = first_app + i` (its reused QP per
/// successor). Returns the flows and each member's application.
pub fn overlay_flows(
    members: &[NodeId],
    chunk: u64,
    (start, interval, until): (Time, Time, Time),
    shifts: &[Vec<u32>],
    tenant: u16,
    first_app: u32,
) -> (Vec<FlowSpec>, Vec<HostApp>) {
    let n = members.len();
    let mut per_pair = vec![vec![0u32; n]; n];
    let mut flows = Vec::new();
    for (t, step) in shifts.iter().enumerate() {
        let at = Time(start.0 + t as u64 * interval.0);
        debug_assert!(at < until);
        for &k in step {
            for i in 0..n {
                let j = (i + k as usize) % n;
                per_pair[i][j] += 1;
                let app = AppId(first_app + i as u32);
                flows.push(FlowSpec { tenant, app, ..FlowSpec::new(members[i], members[j], chunk, at) });
            }
        }
    }
    let apps = per_pair
        .iter()
        .enumerate()
        .map(|(i, row)| HostApp::PairQps {
            host: members[i],
            planned: row.iter().enumerate().filter(|(_, &c)| c > 0).map(|(j, &c)| (members[j], c)).collect(),
        })
        .collect();
    (flows, apps)
}

/// How many overlay steps start in `[start, until)`.
pub fn overlay_steps(start: Time, interval: Time, until: Time) -> u64 {
    if until <= start {
        0
    } else {
        (until.0 - start.0).div_ceil(interval.0)
    }
}

/// Splitting (§IV-B): every flow of at least `min_size` bytes becomes pieces of `piece`
/// bytes (the last one the remainder), piece `j` starting at `start + j·gap` on its own QP,
/// all of tenant `tenant`. Other flows are kept as they are.
pub fn split_flows(flows: Vec<FlowSpec>, min_size: u64, piece: u64, gap: Time, tenant: u16) -> Vec<FlowSpec> {
    let mut out = Vec::with_capacity(flows.len());
    for f in flows {
        if f.size < min_size {
            out.push(f);
            continue;
        }
        let pieces = f.size.div_ceil(piece);
        for j in 0..pieces {
            let size = piece.min(f.size - j * piece);
            out.push(FlowSpec { size, start: Time(f.start.0 + j * gap.0), tenant, app: AppId::NONE, ..f });
        }
    }
    out.sort_by_key(|f| (f.start, f.src));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staggered_chunks_posts_and_slots() {
        assert_eq!(Staggered::chunks(1_125_000, 37_500), 30);
        assert_eq!(Staggered::chunks(100, 30), 4);
        assert_eq!(Staggered::chunk_size(100, 30, 3), 10);
        assert_eq!(Staggered::chunk_size(100, 30, 2), 30);
        let (t, s) = Staggered::post(Time::from_us(5), Time::from_us(3), 30, 31);
        assert_eq!((t, s), (Time::from_us(5 + 93), 1));
    }

    #[test]
    fn shifts_are_coprime_new_and_seeded() {
        assert_eq!(coprime_shifts(8), vec![1, 3, 5, 7]);
        assert_eq!(coprime_shifts(3), vec![1, 2]);
        for (n, p) in [(8, 1), (8, 2), (9, 3), (3, 1)] {
            let s = overlay_shifts(n, 200, p, 4).unwrap();
            for t in 0..s.len() {
                assert_eq!(s[t].len(), p as usize);
                for &k in &s[t] {
                    assert_eq!(gcd(k, n), 1);
                    assert_eq!(s[t].iter().filter(|&&x| x == k).count(), 1);
                    if t > 0 {
                        assert!(!s[t - 1].contains(&k), "shift {k} repeated at step {t}");
                    }
                }
            }
        }
        assert_eq!(overlay_shifts(8, 50, 1, 4).unwrap(), overlay_shifts(8, 50, 1, 4).unwrap());
        assert_ne!(overlay_shifts(8, 50, 1, 4).unwrap(), overlay_shifts(8, 50, 1, 5).unwrap());
        assert!(overlay_shifts(8, 5, 3, 1).is_err());
        assert!(overlay_shifts(8, 5, 0, 1).is_err());
    }

    #[test]
    fn split_pieces_sizes_and_starts() {
        let big = FlowSpec::new(NodeId(0), NodeId(1), 1_000_000, Time::from_us(10));
        let small = FlowSpec::new(NodeId(2), NodeId(1), 999_999, Time::from_us(11));
        let out = split_flows(vec![big, small], 1_000_000, 150_000, Time::from_us(13), 2);
        let pieces: Vec<_> = out.iter().filter(|f| f.src == NodeId(0)).collect();
        assert_eq!(
            pieces.iter().map(|f| f.size).collect::<Vec<_>>(),
            [150_000; 6].iter().copied().chain([100_000]).collect::<Vec<_>>()
        );
        for (j, f) in pieces.iter().enumerate() {
            assert_eq!(f.start, Time::from_us(10 + 13 * j as u64));
            assert_eq!(f.tenant, 2);
        }
        let kept = out.iter().find(|f| f.src == NodeId(2)).unwrap();
        assert_eq!((kept.size, kept.tenant), (999_999, 0));
        assert_eq!(out.iter().map(|f| f.size).sum::<u64>(), 1_999_999);
    }
}
