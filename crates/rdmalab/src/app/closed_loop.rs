//! The DRUM paper's closed-loop application (§II-C): post a batch of `wr_num` WQEs on one
//! connection, only the last one signalled, wait until that one CQE is polled, think,
//! repeat. The host model around it (`app::host_model`) decides how posting and polling
//! cost time; this file holds only what one application knows of itself.

use crate::engine::rng::RngExt;
use crate::engine::Rng;
use crate::ids::{NodeId, QpId};
use crate::units::Time;

/// What one `[[app]]` instance does (after `count` is expanded).
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedLoopSpec {
    /// Label in the results (the `[[app]]` entry's `name`, or `app<i>`).
    pub name: String,
    /// Host it runs on.
    pub host: NodeId,
    /// Host its connection goes to.
    pub dst: NodeId,
    /// WQE size in bytes: fixed (`lo == hi`) or drawn per batch in `[lo, hi]` by `size_dist`.
    pub size: (u64, u64),
    /// How a size range is drawn: log-uniform (false, the default) or uniform (true).
    pub size_uniform: bool,
    /// Transport of its QP: RC (default), UC or UD (`rnic::transport`).
    pub transport: crate::rnic::transport::Transport,
    /// WQEs per batch: fixed or uniform integer in `[lo, hi]`, drawn per batch.
    pub wr_num: (u32, u32),
    /// Pause between seeing a batch's CQE and posting the next batch.
    pub think: Time,
    /// When the first batch is posted.
    pub start: Time,
    /// Stop after posting this many bytes (the last batch is cut to fit); `None`: never.
    pub total_bytes: Option<u64>,
}

/// One batch as it went: the row behind `res.wqes` (its WQEs share size, post and CQE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchRecord {
    /// WQEs handed to a QP's send queue (the rest wait at DRUM's scheduler).
    pub released: u32,
    /// WQEs completed (acknowledged) at the RNIC.
    pub completed: u32,
    /// At the end of the run: WQEs not completed whose first byte had left the RNIC.
    pub wire: u32,
    /// At the end of the run: bytes of those WQEs already acknowledged.
    pub wire_acked: u64,
    /// Application index.
    pub app: u32,
    /// Batch number within the application, from 0.
    pub batch: u32,
    /// WQEs in the batch.
    pub wr_num: u32,
    /// Bytes per WQE.
    pub size: u64,
    /// When the application started posting it.
    pub posted: Time,
    /// When the application saw its CQE (`Time::MAX`: not yet).
    pub seen: Time,
}

impl Default for BatchRecord {
    fn default() -> Self {
        BatchRecord {
            released: 0,
            completed: 0,
            wire: 0,
            wire_acked: 0,
            app: 0,
            batch: 0,
            wr_num: 0,
            size: 0,
            posted: Time::ZERO,
            seen: Time::MAX,
        }
    }
}

/// Where an application is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started, thinking, or done.
    Idle,
    /// Posting (waiting for a shared QP's lock).
    Posting,
    /// Waiting for its batch's CQE (busy-polling under RAW/SHARE).
    Waiting,
    /// Posted everything it will post.
    Done,
}

/// A running closed-loop application.
#[derive(Clone, Debug)]
pub struct ClosedLoop {
    /// Its spec.
    pub spec: ClosedLoopSpec,
    rng: Rng,
    /// The QP it posts on (RAW: its own; SHARE: its group's; DRUM: its dedicated one).
    pub qp: QpId,
    /// Bytes posted so far.
    pub bytes_posted: u64,
    /// Loop phase.
    pub phase: Phase,
    /// When the current wait (busy-polling) began.
    pub poll_start: Time,
    /// Index in the run's batch records of the batch in flight.
    pub current: u32,
    /// Batches posted.
    pub batches: u32,
}

impl ClosedLoop {
    /// An application with its own random stream.
    pub fn new(spec: ClosedLoopSpec, rng: Rng, qp: QpId) -> ClosedLoop {
        ClosedLoop {
            spec,
            rng,
            qp,
            bytes_posted: 0,
            phase: Phase::Idle,
            poll_start: Time::ZERO,
            current: 0,
            batches: 0,
        }
    }

    /// Draws the next batch's (wr_num, size), or `None` once `total_bytes` is posted.
    /// Size is log-uniform by default (WQE sizes of KV traffic span decades, §IV-B) or
    /// uniform (`size_dist = "uniform"`: the paper's "random data size ranging between
    /// [32B, 1MB]" read literally); wr_num uniform.
    pub fn next_batch(&mut self) -> Option<(u32, u64)> {
        let (lo, hi) = self.spec.size;
        let size = if lo == hi {
            lo
        } else {
            let u: f64 = self.rng.gen();
            let v = if self.spec.size_uniform {
                lo as f64 + u * (hi - lo) as f64
            } else {
                ((lo as f64).ln() + u * ((hi as f64).ln() - (lo as f64).ln())).exp()
            };
            v.round().clamp(lo as f64, hi as f64) as u64
        };
        let (wl, wh) = self.spec.wr_num;
        let mut wr = if wl == wh { wl } else { self.rng.gen_range(wl..=wh) };
        if let Some(total) = self.spec.total_bytes {
            let left = total.saturating_sub(self.bytes_posted);
            if left == 0 {
                return None;
            }
            wr = wr.min(left.div_ceil(size).min(u32::MAX as u64) as u32);
        }
        Some((wr, size))
    }
}

/// The moment a busy-polling thread sees a CQE that landed at `cqe`: its polls end at
/// `start + k·period` (k ≥ 1) and each reads the CQ once, so the first end at or after `cqe`.
pub fn poll_sees(start: Time, cqe: Time, period: Time) -> Time {
    if period.0 == 0 {
        return cqe.max(start);
    }
    let k = cqe.0.saturating_sub(start.0).div_ceil(period.0).max(1);
    Time(start.0 + k * period.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_see_cqes_at_their_end() {
        let p = Time(100);
        assert_eq!(poll_sees(Time(0), Time(1), p), Time(100));
        assert_eq!(poll_sees(Time(0), Time(100), p), Time(100));
        assert_eq!(poll_sees(Time(0), Time(101), p), Time(200));
        assert_eq!(poll_sees(Time(50), Time(0), p), Time(150), "one poll at least");
    }

    /// The two size laws against their closed-form means over [32 B, 1 MB]: uniform
    /// (lo + hi)/2, log-uniform (hi − lo)/ln(hi/lo).
    #[test]
    fn size_laws_have_their_means() {
        let (lo, hi) = (32.0f64, (1u64 << 20) as f64);
        for (uniform, want) in [(true, (lo + hi) / 2.0), (false, (hi - lo) / (hi / lo).ln())] {
            let spec = ClosedLoopSpec {
                name: "a".into(),
                host: NodeId(0),
                dst: NodeId(1),
                size: (32, 1 << 20),
                size_uniform: uniform,
                transport: Default::default(),
                wr_num: (1, 1),
                think: Time::ZERO,
                start: Time::ZERO,
                total_bytes: None,
            };
            let mut a = ClosedLoop::new(spec, crate::engine::stream(7, crate::engine::StreamKind::Other, 0), QpId(0));
            let n = 20_000;
            let mean = (0..n).map(|_| a.next_batch().unwrap().1 as f64).sum::<f64>() / n as f64;
            assert!((mean / want - 1.0).abs() < 0.03, "uniform {uniform}: mean {mean} want {want}");
        }
    }

    #[test]
    fn sizes_stay_in_range_and_total_cuts_the_last_batch() {
        let spec = ClosedLoopSpec {
            name: "a".into(),
            host: NodeId(0),
            dst: NodeId(1),
            size: (32, 1 << 20),
            size_uniform: false,
            transport: Default::default(),
            wr_num: (20, 100),
            think: Time::ZERO,
            start: Time::ZERO,
            total_bytes: None,
        };
        let mut a =
            ClosedLoop::new(spec.clone(), crate::engine::stream(1, crate::engine::StreamKind::Other, 0), QpId(0));
        for _ in 0..1000 {
            let (w, s) = a.next_batch().unwrap();
            assert!((20..=100).contains(&w) && (32..=1 << 20).contains(&s));
        }
        let fixed = ClosedLoopSpec { size: (1000, 1000), wr_num: (10, 10), total_bytes: Some(2500), ..spec };
        let mut b = ClosedLoop::new(fixed, crate::engine::stream(1, crate::engine::StreamKind::Other, 0), QpId(0));
        assert_eq!(b.next_batch(), Some((3, 1000)));
        b.bytes_posted = 2500;
        assert_eq!(b.next_batch(), None);
    }
}
