//! Recursive halving and doubling for allreduce (Rabenseifner's algorithm as Thakur,
//! Rabenseifner and Gropp, "Optimization of Collective Communication Operations in MPICH",
//! IJHPCA 2005, §4.4 give it), and the direct all-to-all.
//!
//! Halving-doubling over n = 2^k ranks: the bytes are n segments. Reduce-scatter by
//! recursive halving: in step s (distance d = n/2^(s+1)) rank p exchanges with p XOR d,
//! sending the half of its current block that the partner keeps (d segments). Allgather by
//! recursive doubling: in step s (distance d = 2^s) rank p sends its d gathered segments to
//! p XOR d. 2·log2(n) steps; each rank sends (n−1)/n of the bytes in each phase.

use super::{share, Steps};

/// Bytes of the `d` segments from segment `a` on (of `n` over `bytes`).
fn block(bytes: u64, n: usize, a: usize, d: usize) -> u64 {
    (a..a + d).map(|q| share(bytes, n as u64, q as u64)).sum()
}

/// Allreduce of `bytes` bytes on lane `lane` (n a power of two: `Collective::validate`).
pub(super) fn halving_doubling(s: &mut Steps, bytes: u64, lane: u16) {
    let n = s.ranks.len();
    let mut last = vec![u32::MAX; n]; // last[p]: the transfer p received in the previous step
    let mut d = n / 2;
    while d >= 1 {
        let mut now = vec![0u32; n];
        for p in 0..n {
            let deps: &[u32] = if last[p] == u32::MAX { &[] } else { std::slice::from_ref(&last[p]) };
            now[p ^ d] = s.push(p, p ^ d, block(bytes, n, (p ^ d) & !(d - 1), d), lane, deps);
        }
        last = now;
        d /= 2;
    }
    let mut d = 1;
    while d < n {
        let mut now = vec![0u32; n];
        for p in 0..n {
            now[p ^ d] = s.push(p, p ^ d, block(bytes, n, p & !(d - 1), d), lane, std::slice::from_ref(&last[p]));
        }
        last = now;
        d *= 2;
    }
}

/// All-to-all of `bytes` per rank on lane `lane`: rank p sends segment q to rank q, every
/// pair at once, to p+1, p+2, ... in that order.
pub(super) fn direct(s: &mut Steps, bytes: u64, lane: u16) {
    let n = s.ranks.len();
    for p in 0..n {
        for o in 1..n {
            let q = (p + o) % n;
            s.push(p, q, share(bytes, n as u64, q as u64), lane, &[]);
        }
    }
}
