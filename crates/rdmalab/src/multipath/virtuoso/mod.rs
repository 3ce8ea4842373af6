//! Virtuoso (Tian et al.): multipath middleware over several QPs of one
//! connection, one per virtual NIC (an IP alias of the host), with MP_ verbs.
//!
//! - **QP manager** (§3.1-3.2): one QP per path, all opened with the connection; with
//!   `path_by = "src_ip"` QP `i` sends from the host's address `i`, and the fabric's
//!   `path_selection = "source_ip"` rule puts that address on link `i`.
//! - **Decomposer** (§3.3): a WRITE, SEND or READ is cut into one sub-WR per path, cut at
//!   `block` boundaries, in proportion to each path's capacity (eq. 1); one MP completion
//!   when every sub-WR completed.
//! - **Reassembler** (§3.4): WRITE and READ leave the receiver passive; a large SEND is
//!   WRITE sub-flows plus a notice SEND posted after every WRITE completed, consuming the
//!   receiver's pre-posted RECV (its one completion).
//! - **Load balancer** (§3.5, eq. 1): at the first message a `probe_size` WRITE on every
//!   path at once; `cap_i = bytes / FCT_i`. `monitor_gain` (an EWMA of `cap_i` over
//!   finished sub-WRs) is our extension, not the paper's.
//! - **Lossy mode** (§3.5, Fig. 3b, `chunk_probe`): a WR size search (doubling, then linear
//!   steps; `chunk.rs`) before the first message, then data in WRs of at most that size,
//!   one out per path; WRs failed at `fabric.retry_limit` are posted again after a reconnect.
//!
//! The sender half lives on the source host, the receiver half (which also answers READ
//! requests, as the responder's RNIC does) on the destination host; they meet only
//! through WRs on the wire. `docs/virtuoso.md` is the guide.

mod chunk;
mod receiver;
mod sender;

pub use chunk::{ChunkSearch, SEARCH_CAP};
pub use receiver::VirtuosoReceiver;
pub use sender::{VMessage, VOutcome, VirtuosoSender, WrKind, WrLog};

use crate::error::{Error, Result};

/// How the QPs of a connection are told apart by the fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathBy {
    /// Each QP its own UDP source port, all from the host's first address (the data-partition paper's way).
    #[default]
    Sport,
    /// QP `i` sends from the host's address `i` (a virtual NIC, §3.1).
    SrcIp,
}

/// How the data of a message is divided over the paths (eq. 1's `cap_i`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Weights {
    /// Probed once per connection: `probe_size` bytes per path at once, `cap_i = bytes /
    /// FCT_i` (§3.5).
    #[default]
    Probe,
    /// The same share on every path.
    Equal,
    /// These weights, one per path, all positive.
    List(Vec<f64>),
}

/// The MP verb of a message (Table 1's `MP_ibv_post_send` opcodes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MpVerb {
    /// RDMA WRITE: the receiver's CPU is not involved.
    #[default]
    Write,
    /// SEND: the receiver gets one completion, after the last byte.
    Send,
    /// RDMA READ: the source pulls the destination's bytes (data flows dst to src).
    Read,
}

/// What tells the lossy-mode WR size search that a WR was too large (§3.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChunkSignal {
    /// The WR failed: its QP exceeded `fabric.retry_limit` (the paper's "retry exceeded").
    #[default]
    RetryExceeded,
    /// Any part of the WR was retransmitted (a go-back-N round on its QP while it was out).
    Retransmission,
}

/// The lossy-mode WR size search (§3.5, Fig. 3b): per path, double the WR size while WRs
/// succeed, then add `step` to the last good size until the next failure; data is then
/// cut into WRs of at most that size per path, one outstanding per path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkProbeConfig {
    /// First WR size (our assumption: the paper gives none), >= 1.
    pub start: u64,
    /// Linear step after the first failure (our assumption), >= 1.
    pub step: u64,
    /// What counts as a failure.
    pub signal: ChunkSignal,
}

impl Default for ChunkProbeConfig {
    fn default() -> Self {
        ChunkProbeConfig { start: 65536, step: 16384, signal: ChunkSignal::RetryExceeded }
    }
}

/// Virtuoso's parameters (`split = "virtuoso"`).
#[derive(Clone, Debug, PartialEq)]
pub struct VirtuosoConfig {
    /// How QPs are told apart.
    pub path_by: PathBy,
    /// How data is divided over paths.
    pub weights: Weights,
    /// Bytes of each path's probe; at least one MTU (the paper takes >= 512 KB).
    pub probe_size: u64,
    /// Messages below this size go as one WR on `small_path` (§3.4).
    pub small_message: u64,
    /// The path of small messages (0-based), below the QP count.
    pub small_path: u32,
    /// Sub-flows start on multiples of this many bytes (memory blocks, §3.3), >= 1.
    pub block: u64,
    /// Gain of the EWMA that updates `cap_i` from finished sub-WRs; 0 = probe once.
    /// Our extension, not in the paper.
    pub monitor_gain: f64,
    /// Lossy mode: find each path's largest WR first (`chunk_probe = true`); `None`: off.
    pub chunk_probe: Option<ChunkProbeConfig>,
}

impl Default for VirtuosoConfig {
    fn default() -> Self {
        VirtuosoConfig {
            path_by: PathBy::Sport,
            weights: Weights::Probe,
            probe_size: 512 * 1024,
            small_message: 512 * 1024,
            small_path: 0,
            block: 4096,
            monitor_gain: 0.0,
            chunk_probe: None,
        }
    }
}

impl VirtuosoConfig {
    /// Checks what needs only the QP count and the MTU; errors name the field.
    pub fn validate(&self, qps: u32, mtu: u32) -> Result<()> {
        let bad = |field: &str, msg: String| Err(Error::scenario(field, msg));
        if self.probe_size < mtu as u64 {
            return bad("probe_size", format!("{} bytes is below one MTU ({mtu} bytes)", self.probe_size));
        }
        if self.small_path >= qps {
            return bad(
                "small_path",
                format!("path {} is unknown: the connection has {qps} QPs (0..{qps})", self.small_path),
            );
        }
        if self.block == 0 {
            return bad("block", "must be at least 1 byte".into());
        }
        if !(0.0..=1.0).contains(&self.monitor_gain) {
            return bad("monitor_gain", format!("{} is not in [0, 1]", self.monitor_gain));
        }
        if let Some(c) = &self.chunk_probe {
            if c.start == 0 {
                return bad("chunk_probe_start", "must be at least 1 byte".into());
            }
            if c.step == 0 {
                return bad("chunk_probe_step", "must be at least 1 byte".into());
            }
        }
        if let Weights::List(w) = &self.weights {
            if w.len() != qps as usize {
                return bad("weights", format!("{} weight(s) for {qps} QPs: give one per path", w.len()));
            }
            if let Some((i, x)) = w.iter().enumerate().find(|(_, x)| !(x.is_finite() && **x > 0.0)) {
                return bad("weights", format!("weights[{i}] = {x}: every weight must be positive"));
            }
        }
        Ok(())
    }
}

/// Why the size search cannot run on a fabric with these `lossless` and `retry_limit`
/// settings (`SimConfig`'s fields; `None`: it can). The search needs losses to stop it,
/// and `retry_exceeded` needs a retry limit to fail a WR.
pub fn chunk_probe_fabric_error(c: &ChunkProbeConfig, lossless: bool, retry_limit: Option<u32>) -> Option<String> {
    if lossless {
        return Some("needs a lossy fabric: set fabric.lossless = false (PFC never lets a WR fail)".into());
    }
    if c.signal == ChunkSignal::RetryExceeded && retry_limit.is_none() {
        let m = "chunk_probe_signal = \"retry_exceeded\" needs fabric.retry_limit (without it no WR fails); \
                 or use chunk_probe_signal = \"retransmission\"";
        return Some(m.into());
    }
    None
}

/// Eq. 1: `data_i = total * w_i / sum(w)`, with every boundary between two paths' shares
/// rounded to the nearest multiple of `block` (so each sub-flow starts on a block). The
/// shares sum to `total`; a path whose share rounds to nothing gets 0.
pub fn split_by_weights(total: u64, weights: &[f64], block: u64) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    let mut shares = Vec::with_capacity(weights.len());
    let (mut acc, mut prev) = (0.0, 0u64);
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        let edge = if i + 1 == weights.len() {
            total
        } else {
            let exact = total as f64 * acc / sum;
            ((exact / block as f64).round() as u64 * block).clamp(prev, total)
        };
        shares.push(edge - prev);
        prev = edge;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq1_shares_follow_the_weights_on_block_boundaries() {
        let s = split_by_weights(8 << 20, &[1.0, 1.0, 2.0, 4.0], 4096);
        assert_eq!(s, vec![1 << 20, 1 << 20, 2 << 20, 4 << 20]);
        let s = split_by_weights(1_000_003, &[1.0, 2.0, 3.0], 4096);
        assert_eq!(s.iter().sum::<u64>(), 1_000_003);
        assert!(s[..2]
            .iter()
            .scan(0, |a, x| {
                *a += x;
                Some(*a)
            })
            .all(|edge| edge % 4096 == 0));
        assert!((s[2] as f64 / 1_000_003.0 - 0.5).abs() < 4096.0 / 1e6);
    }

    #[test]
    fn a_share_smaller_than_half_a_block_is_empty() {
        assert_eq!(split_by_weights(5000, &[1.0, 1.0], 4096), vec![4096, 904]);
        assert_eq!(split_by_weights(1000, &[1.0, 1.0], 4096), vec![0, 1000]);
    }

    #[test]
    fn bad_fields_are_named() {
        let c = VirtuosoConfig { small_path: 4, ..Default::default() };
        assert!(c.validate(4, 1000).unwrap_err().to_string().contains("small_path"));
        let c = VirtuosoConfig { probe_size: 999, ..Default::default() };
        assert!(c.validate(4, 1000).unwrap_err().to_string().contains("probe_size"));
        let c = VirtuosoConfig { weights: Weights::List(vec![1.0, 2.0]), ..Default::default() };
        assert!(c.validate(4, 1000).unwrap_err().to_string().contains("weights"));
        let c = VirtuosoConfig { weights: Weights::List(vec![1.0, 0.0]), ..Default::default() };
        assert!(c.validate(2, 1000).unwrap_err().to_string().contains("weights"));
    }
}
