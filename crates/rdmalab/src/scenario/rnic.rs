//! `[rnic]`: what the RNIC's verbs layer keeps per connection, beyond the fabric's settings:
//! the receive queue a SEND draws on and the RNR NAK's two QP attributes
//! (`config::RnrConfig`, `sim::mech::rnr`; docs/physics.md, "Receive queues and RNR NAKs").
//!
//! ```toml
//! [rnic]
//! recv_queue_depth = 4        # receive WQEs kept posted per connection (absent: unlimited, off)
//! # srq_depth = 16            # or: one shared receive queue of this many WQEs per responder host
//! recv_repost_delay = "2us"   # receive completion to the WQE posted again
//! min_rnr_timer = 12          # IBA Table 45 code, 0..31 (12: 0.64 ms)
//! rnr_retry = 7               # 0..7, 7: retry forever
//! ```

use std::path::Path;

use serde::Deserialize;

use super::field_time;
use crate::config::{RnrConfig, SimConfig, RNR_RETRY_FOREVER, RNR_TIMER_US};
use crate::error::{Error, Result};
use crate::units::Time;

/// rdma-core's `ibv_rc_pingpong` example (libibverbs/examples/rc_pingpong.c), which many RC
/// programs copy, moves its QPs to RTR with `min_rnr_timer = 12` (0.64 ms) and to RTS with
/// `rnr_retry = 7`. Our defaults are its values.
const DEFAULT_MIN_RNR_TIMER: i64 = 12;
const DEFAULT_RNR_RETRY: i64 = RNR_RETRY_FOREVER as i64;

/// `[rnic]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RnicSpec {
    /// Receive WQEs the responder keeps posted per connection (absent: unlimited, no RNR).
    pub recv_queue_depth: Option<i64>,
    /// Receive WQEs of one shared receive queue per responder host, which every connection
    /// to it draws on (`ibv_create_srq`'s `max_wr`; absent: per-connection queues).
    pub srq_depth: Option<i64>,
    /// From a SEND's receive completion to its WQE posted again (default `"0ns"`).
    pub recv_repost_delay: Option<String>,
    /// The RNR NAK timer code, 0 to 31 (IBA Table 45; default 12, 0.64 ms).
    pub min_rnr_timer: Option<i64>,
    /// RNR NAKs a WR may meet without progress, 0 to 7 (7, the default: forever).
    pub rnr_retry: Option<i64>,
}

/// Sets `c.rnr` from `[rnic]`; without `recv_queue_depth` the other keys are still checked,
/// and receive WQEs never run short.
pub(super) fn apply(spec: Option<&RnicSpec>, file: &Path, c: &mut SimConfig) -> Result<()> {
    let Some(s) = spec else { return Ok(()) };
    let range = |field: &str, v: i64, lo: i64, hi: i64, what: &str| -> Result<i64> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(Error::input(file, 0, format!("rnic.{field}"), format!("{v}: must be {lo} to {hi}{what}")))
        }
    };
    let timers = RNR_TIMER_US.len() as i64 - 1;
    let timer = range("min_rnr_timer", s.min_rnr_timer.unwrap_or(DEFAULT_MIN_RNR_TIMER), 0, timers, " (IBA Table 45)")?;
    let retry = range("rnr_retry", s.rnr_retry.unwrap_or(DEFAULT_RNR_RETRY), 0, 7, " (7: retry forever)")?;
    let delay = match &s.recv_repost_delay {
        Some(d) => field_time(file, "rnic.recv_repost_delay", d)?,
        None => Time::ZERO,
    };
    let (field, depth, shared) = match (s.recv_queue_depth, s.srq_depth) {
        (None, None) => return Ok(()),
        (Some(d), None) => ("recv_queue_depth", d, false),
        (None, Some(d)) => ("srq_depth", d, true),
        (Some(_), Some(_)) => {
            let m = "a QP draws on its own receive queue or on the shared one, not both: give recv_queue_depth or srq_depth";
            return Err(Error::input(file, 0, "rnic.srq_depth", m));
        }
    };
    let depth = range(field, depth, 1, u32::MAX as i64, " (leave it out: unlimited)")?;
    c.rnr = Some(RnrConfig {
        recv_queue_depth: depth as u32,
        shared,
        recv_repost_delay: delay,
        min_rnr_timer: timer as u8,
        rnr_retry: retry as u8,
    });
    Ok(())
}
