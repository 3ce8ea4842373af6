//! `[rnic]`: what the RNIC's verbs layer keeps per connection, beyond the fabric's settings:
//! the send queue's depth, the receive queue a SEND draws on and the RNR NAK's two QP
//! attributes (`config::RnrConfig`, `sim::mech::rnr`; docs/model/rnic.md, "Receive queues and
//! RNR NAKs", "Send queues of applications' QPs").
//!
//! ```toml
//! [rnic]
//! recv_queue_depth = 4        # receive WQEs kept posted per connection (absent: unlimited, off)
//! # srq_depth = 16            # or: one shared receive queue of this many WQEs per responder host
//! recv_repost_delay = "2us"   # receive completion to the WQE posted again
//! recv_processing = "2.35us"  # one completion handled at a time, this long each (default 0)
//! min_rnr_timer = 12          # IBA Table 45 code, 0..31 (12: 0.64 ms)
//! rnr_retry = 7               # 0..7, 7: retry forever
//! timeout = 14                # local ACK timeout, 4.096 us x 2^14 = 67.1 ms (0: none); sets fabric.rto
//! retry_cnt = 7               # 0..7 timeouts or NAKs in a row before the WR fails; sets fabric.retry_limit
//! max_send_wr = 16351         # send-queue depth of each application QP (default: ConnectX-3's max_qp_wr)
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
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RnicSpec {
    /// Receive WQEs the responder keeps posted per connection (absent: unlimited, no RNR).
    pub recv_queue_depth: Option<i64>,
    /// Receive WQEs of one shared receive queue per responder host, which every connection
    /// to it draws on (`ibv_create_srq`'s `max_wr`; absent: per-connection queues).
    pub srq_depth: Option<i64>,
    /// From a SEND's receive completion to its WQE posted again (default `"0ns"`).
    pub recv_repost_delay: Option<String>,
    /// The responder's per-message processing: its application handles one receive
    /// completion at a time, this long each, before the repost delay starts (default `"0ns"`).
    pub recv_processing: Option<String>,
    /// The RNR NAK timer code, 0 to 31 (IBA Table 45; default 12, 0.64 ms).
    pub min_rnr_timer: Option<i64>,
    /// RNR NAKs a WR may meet without progress, 0 to 7 (default 7: retry forever).
    pub rnr_retry: Option<i64>,
    /// The requester's local ACK timeout as verbs encode it (`ibv_qp_attr::timeout`, 5 bits):
    /// 4.096 µs · 2^timeout, 0 for none. Sets `fabric.rto` (absent: that key's value).
    pub timeout: Option<i64>,
    /// Timeouts or sequence-error NAKs in a row a WR may meet before it fails
    /// (`ibv_qp_attr::retry_cnt`, 0 to 7). Sets `fabric.retry_limit` (absent: that key's).
    pub retry_cnt: Option<i64>,
    /// Send-queue depth of each QP an application keeps open (`ibv_qp_cap::max_send_wr`;
    /// default 16351, ConnectX-3's `max_qp_wr`): multipath, Virtuoso, jobs' ranks, the attack
    /// generators and the serial incast hold a WR (a generator's chunk) that finds the queue
    /// full until a completion frees a slot.
    pub max_send_wr: Option<i64>,
}

/// The local ACK timeout of verbs' encoding `code` (1 to 31; 0 is none): 4.096 µs · 2^code
/// (rdma_cm's `rdma_set_ack_timeout`, `ibv_modify_qp(3)`). An HCA may wait longer than this
/// value; we take the value itself.
pub(super) fn ack_timeout(code: u8) -> Option<Time> {
    (code > 0).then(|| Time::from_ps(4_096_000u64 << code))
}

/// The receive-queue keys given without a receive queue (`recv_queue_depth` or
/// `srq_depth`): they are checked but change nothing, which a warning says.
pub(super) fn unused_rnr_keys(spec: Option<&RnicSpec>) -> Option<String> {
    let s = spec?;
    if s.recv_queue_depth.is_some() || s.srq_depth.is_some() {
        return None;
    }
    let given: Vec<&str> = [
        ("recv_repost_delay", s.recv_repost_delay.is_some()),
        ("recv_processing", s.recv_processing.is_some()),
        ("min_rnr_timer", s.min_rnr_timer.is_some()),
        ("rnr_retry", s.rnr_retry.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    (!given.is_empty()).then(|| {
        format!(
            "rnic.{} given without rnic.recv_queue_depth or rnic.srq_depth: receive WQEs never run short, so no \
             RNR NAK is sent and {} nothing",
            given.join(", rnic."),
            if given.len() == 1 { "it changes" } else { "they change" }
        )
    })
}

/// Sets `c.rnr` from `[rnic]`; without `recv_queue_depth` the other keys are still checked,
/// and receive WQEs never run short.
pub(super) fn apply(spec: Option<&RnicSpec>, fabric: &super::FabricSpec, file: &Path, c: &mut SimConfig) -> Result<()> {
    let Some(s) = spec else { return Ok(()) };
    let range = |field: &str, v: i64, lo: i64, hi: i64, what: &str| -> Result<i64> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(Error::input(file, 0, format!("rnic.{field}"), format!("{v}: must be {lo} to {hi}{what}")))
        }
    };
    if let Some(t) = s.timeout {
        if fabric.rto.is_some() {
            return Err(Error::input(file, 0, "rnic.timeout", "fabric.rto is given too: set the timeout once"));
        }
        c.rto = ack_timeout(range("timeout", t, 0, 31, " (4.096 us x 2^timeout; 0: none)")? as u8);
    }
    if let Some(n) = s.retry_cnt {
        if fabric.retry_limit.is_some() {
            return Err(Error::input(file, 0, "rnic.retry_cnt", "fabric.retry_limit is given too: set the limit once"));
        }
        c.retry_limit = Some(range("retry_cnt", n, 0, 7, "")? as u32);
    }
    if let Some(d) = s.max_send_wr {
        c.max_send_wr = range("max_send_wr", d, 1, u32::MAX as i64, " WQEs")? as u32;
    }
    let timers = RNR_TIMER_US.len() as i64 - 1;
    let timer = range("min_rnr_timer", s.min_rnr_timer.unwrap_or(DEFAULT_MIN_RNR_TIMER), 0, timers, " (IBA Table 45)")?;
    let retry = range("rnr_retry", s.rnr_retry.unwrap_or(DEFAULT_RNR_RETRY), 0, 7, " (7: retry forever)")?;
    let delay = match &s.recv_repost_delay {
        Some(d) => field_time(file, "rnic.recv_repost_delay", d)?,
        None => Time::ZERO,
    };
    let processing = match &s.recv_processing {
        Some(d) => field_time(file, "rnic.recv_processing", d)?,
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
    if c.irn.is_some() {
        let m =
            "receive queues and RNR NAKs are modelled with go-back-N only (not with `fabric.loss_recovery = \"irn\"`)";
        return Err(Error::input(file, 0, format!("rnic.{field}"), m));
    }
    c.rnr = Some(RnrConfig {
        recv_queue_depth: depth as u32,
        shared,
        recv_repost_delay: delay,
        recv_processing: processing,
        min_rnr_timer: timer as u8,
        rnr_retry: retry as u8,
    });
    Ok(())
}
