//! NCCL's ring and the pipelined chain (broadcast).
//!
//! Ring: rank i sends to rank i+1 (mod n). One channel's bytes are cut into loops of n
//! segments of at most `chunk` bytes each; in a loop's step k rank i sends segment
//! (i − k) mod n, which it received (and, in a reduce-scatter step, reduced) in step k − 1.
//! Reduce-scatter is steps 0..n−1 and allgather steps n−1..2(n−1) of the same pattern, so
//! allreduce runs 2(n−1) steps and allgather or reduce-scatter alone n−1. A loop's first
//! step starts at rank i once rank i received the previous loop's first segment, so that
//! loops overlap as NCCL's slots let them (a loop ahead at most).

use super::{share, Steps};

/// `steps` steps of the ring over `bytes` bytes on lane `lane`.
pub(super) fn ring(s: &mut Steps, bytes: u64, chunk: u64, steps: usize, lane: u16) {
    let n = s.ranks.len();
    let loops = bytes.div_ceil(n as u64 * chunk).max(1);
    let pieces = loops * n as u64;
    // ids[k * n + i]: rank i's send in step k of the current loop.
    let mut ids = vec![0u32; steps * n];
    let mut prev_first = vec![u32::MAX; n];
    for l in 0..loops {
        for k in 0..steps {
            for i in 0..n {
                let seg = (i + n * steps - k) % n;
                let from_prev = (i + n - 1) % n;
                let dep = if k > 0 { ids[(k - 1) * n + from_prev] } else { prev_first[from_prev] };
                let deps: &[u32] = if dep == u32::MAX { &[] } else { std::slice::from_ref(&dep) };
                let b = share(bytes, pieces, l * n as u64 + seg as u64);
                ids[k * n + i] = s.push(i, (i + 1) % n, b, lane, deps);
            }
        }
        prev_first.copy_from_slice(&ids[..n]);
    }
}

/// Broadcast from rank 0 along the chain 0 → 1 → … → n−1, `bytes` cut into chunks of at
/// most `chunk`; each rank forwards a chunk once it has received it.
pub(super) fn chain(s: &mut Steps, bytes: u64, chunk: u64, lane: u16) {
    let n = s.ranks.len();
    let chunks = bytes.div_ceil(chunk);
    for j in 0..chunks {
        let b = share(bytes, chunks, j);
        let mut prev = u32::MAX;
        for h in 0..n - 1 {
            let deps: &[u32] = if prev == u32::MAX { &[] } else { std::slice::from_ref(&prev) };
            prev = s.push(h, h + 1, b, lane, deps);
        }
    }
}
