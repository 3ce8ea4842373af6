//! The responder's per-message processing (`[rnic] recv_processing`; docs/model/rnic.md,
//! "Receive queues and RNR NAKs"): the application at a receiving host handles its receive
//! completions one at a time, each taking `recv_processing`, and only then starts posting
//! the message's receive WQE again. Messages that complete faster than that queue for it,
//! so their WQEs come back one per `recv_processing`, however fast the link delivered them.
//!
//! One handler per responder host (ours: one thread polls the host's completion queue and
//! consumes each message before the next, as a simple aggregator does), used only by the
//! receive queues of `mech::rnr`; with a zero time nothing is kept.

use crate::units::Time;

/// When each responder host's handler is next free, by host.
#[derive(Debug, Default)]
pub(super) struct RecvProcessing {
    per_message: Time,
    /// By responder host, grown at a host's first completion.
    free_at: Vec<Time>,
}

impl RecvProcessing {
    pub(super) fn new(per_message: Time) -> RecvProcessing {
        RecvProcessing { per_message, free_at: Vec::new() }
    }

    /// When host `host`'s handler has finished with a receive completion made `now`: it
    /// starts when both the completion and the handler are there and takes `per_message`.
    /// The times a host returns never decrease, so the repost lists stay sorted.
    pub(super) fn handled_at(&mut self, host: u32, now: Time) -> Time {
        if self.per_message == Time::ZERO {
            return now;
        }
        let h = host as usize;
        if self.free_at.len() <= h {
            self.free_at.resize(h + 1, Time::ZERO);
        }
        let done = now.max(self.free_at[h]) + self.per_message;
        self.free_at[h] = done;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_made_together_are_handled_one_per_period() {
        // n completions at once end at T, 2T, ..., n·T; one made after the handler went
        // idle starts at once; another host's handler is its own.
        let t = Time::from_us(5);
        let mut p = RecvProcessing::new(t);
        let ends: Vec<Time> = (0..4).map(|_| p.handled_at(1, Time::from_us(10))).collect();
        assert_eq!(ends, [15, 20, 25, 30].map(Time::from_us));
        assert_eq!(p.handled_at(1, Time::from_us(100)), Time::from_us(105));
        assert_eq!(p.handled_at(0, Time::from_us(10)), Time::from_us(15));
        let mut none = RecvProcessing::new(Time::ZERO);
        assert_eq!(none.handled_at(3, Time::from_us(7)), Time::from_us(7));
        assert!(none.free_at.is_empty(), "zero: nothing kept");
    }
}
