//! SimAI's NVLS allreduce (`AS_NVLS_ENABLE=1`), as its ns-3 run models it: the group's
//! NVSwitch is an endpoint of RDMA flows (SimAI's ns-3 lets an `NVSwitchNode` hold QPs and
//! send as a host when NVLS is on). The allreduce is cut into four chunks; for each chunk
//! every rank sends its chunk to the NVSwitch (the reduction), and once the NVSwitch has
//! received all of them it sends the chunk back to every rank (the multicast). A rank's
//! chunk k+1 goes up when its chunk k has been sent; the NVSwitch's flows of one chunk each
//! wait for the whole chunk. docs/hpcc-dialects.md, "NVLS", cites SimAI's lines.

use crate::app::deps::{Dep, Transfer, Trigger};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;

/// Chunks of an NVLS allreduce (SimAI's `genAllreduceNVLSFlowModels`: `chunk_count = 4`).
pub const NVLS_CHUNKS: u64 = 4;

/// The ranks an NVLS allreduce needs at least (SimAI: `nRanks >= 8`).
pub const NVLS_MIN_RANKS: usize = 8;

/// Whether SimAI runs an allreduce of a tensor-parallel group of `ranks` ranks as NVLS:
/// `AS_NVLS_ENABLE` is `1`, the GPU type is H100 or H800 and the group has at least 8 ranks.
pub fn nvls_enabled(env: Option<&str>, gpu_type: &str) -> bool {
    env == Some("1") && matches!(gpu_type, "H100" | "H800")
}

/// The transfers of one NVLS allreduce of `size` bytes over `ranks` through `switch`, with
/// dependencies as indices into the returned list (as `Collective::schedule` gives them).
/// Up flows (rank → NVSwitch) are on lane 0; the NVSwitch's flows of chunk k on lane k, as
/// SimAI opens a QP per flow and the NVSwitch's chunks overlap. Every chunk is `size` / 4
/// bytes, the remainder dropped, as SimAI's integer division does.
pub fn nvls_schedule(ranks: &[NodeId], switch: NodeId, size: u64) -> Result<Vec<Transfer>> {
    let chunk = size / NVLS_CHUNKS;
    if chunk == 0 {
        return Err(Error::scenario("size", format!("{size} B: NVLS cuts it into {NVLS_CHUNKS} chunks of 0 B")));
    }
    let n = ranks.len();
    let mut ts: Vec<Transfer> = Vec::with_capacity(2 * n * NVLS_CHUNKS as usize);
    for c in 0..NVLS_CHUNKS {
        let bytes = chunk;
        let up0 = ts.len();
        for (k, &r) in ranks.iter().enumerate() {
            // The rank's previous chunk, sent: SimAI's flows of one (src, dst) pair wait in
            // `peer_wating_tasks` until the one before has finished sending.
            let deps =
                if c == 0 { Vec::new() } else { vec![Dep { on: (up0 - 2 * n + k) as u32, when: Trigger::Sent }] };
            ts.push(Transfer { src: r, dst: switch, bytes, lane: 0, delay: Time::ZERO, deps });
        }
        let all_up: Vec<Dep> = (up0..up0 + n).map(|i| Dep { on: i as u32, when: Trigger::Received }).collect();
        for &r in ranks {
            ts.push(Transfer { src: switch, dst: r, bytes, lane: c as u16, delay: Time::ZERO, deps: all_up.clone() });
        }
    }
    Ok(ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_sends_its_data_up_and_gets_it_back_chunk_by_chunk() {
        let ranks: Vec<NodeId> = (0..8).map(NodeId).collect();
        let sw = NodeId(32);
        let ts = nvls_schedule(&ranks, sw, 16 << 20).unwrap();
        assert_eq!(ts.len(), 4 * 16);
        for &r in &ranks {
            let up: u64 = ts.iter().filter(|t| t.src == r).map(|t| t.bytes).sum();
            let down: u64 = ts.iter().filter(|t| t.dst == r).map(|t| t.bytes).sum();
            assert_eq!((up, down), (16 << 20, 16 << 20));
            assert!(ts.iter().filter(|t| t.src == r || t.dst == r).all(|t| t.src == sw || t.dst == sw));
        }
        for (i, t) in ts.iter().enumerate() {
            let chunk = i / 16;
            if t.src == sw {
                // Every rank's chunk, received at the NVSwitch.
                let on: Vec<usize> = t.deps.iter().map(|d| d.on as usize).collect();
                assert_eq!(on, (chunk * 16..chunk * 16 + 8).collect::<Vec<_>>());
                assert!(t.deps.iter().all(|d| d.when == Trigger::Received && ts[d.on as usize].dst == sw));
                assert_eq!(t.lane as usize, chunk);
            } else if chunk == 0 {
                assert!(t.deps.is_empty());
            } else {
                // The rank's chunk before, sent.
                let d = &t.deps[..];
                assert_eq!(d.len(), 1);
                assert_eq!(
                    (ts[d[0].on as usize].src, d[0].when, d[0].on as usize / 16),
                    (t.src, Trigger::Sent, chunk - 1)
                );
            }
        }
        assert!(nvls_schedule(&ranks, sw, 3).unwrap_err().to_string().contains("0 B"));
    }

    #[test]
    fn nvls_needs_the_variable_set_to_1_and_a_hopper_gpu() {
        assert!(nvls_enabled(Some("1"), "H100") && nvls_enabled(Some("1"), "H800"));
        assert!(!nvls_enabled(Some("1"), "A100") && !nvls_enabled(Some("true"), "H100"));
        assert!(!nvls_enabled(None, "H100") && !nvls_enabled(Some("0"), "H100"));
    }
}
