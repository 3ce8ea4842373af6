//! Run and per-port counters.

/// Whole-run counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events executed.
    pub events: u64,
    /// Data packets put on a wire by a host (first transmissions and retransmissions).
    pub data_packets_sent: u64,
    /// Payload bytes put on the wire by hosts.
    pub payload_bytes_sent: u64,
    /// Payload bytes accepted in order by receivers.
    pub payload_bytes_delivered: u64,
    /// Payload bytes of data packets the fabric dropped (buffer overflow, link errors and
    /// failures, no route): what `drops` lost of data.
    pub payload_bytes_dropped: u64,
    /// Payload bytes of data packets a receiver discarded: out of order under go-back-N,
    /// or a duplicate. Not a fabric drop: a lossless run may discard.
    pub payload_bytes_discarded: u64,
    /// Packet transmissions on any link (a packet crossing 4 links counts 4).
    pub packet_hops: u64,
    /// Packets dropped anywhere.
    pub drops: u64,
    /// PFC PAUSE frames sent.
    pub pauses: u64,
    /// PFC RESUME frames sent.
    pub resumes: u64,
    /// ECN marks.
    pub ecn_marks: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// NACKs sent.
    pub nacks: u64,
    /// Data packets a sender sent again (go-back-N's rewinds, IRN's holes, timeouts).
    pub retx_packets: u64,
    /// Data packets that reached their receiver beyond a gap (out of order).
    pub ooo_packets: u64,
    /// CNPs (a CNP-flagged ACK or NACK) a receiver sent for a CE-marked packet.
    pub cnps_ecn: u64,
    /// CNPs a receiver sent for an out-of-order packet that was not CE-marked
    /// (`fabric.cnp_on_ooo`).
    pub cnps_ooo: u64,
    /// WRs that failed with the retry limit exceeded (`fabric.retry_limit`); the WRs
    /// flushed behind them are not counted.
    pub wr_failures: u64,
    /// Queue pairs opened.
    pub qps_opened: u64,
    /// Most queue pairs alive at once (opened and not yet released).
    pub qps_peak: u64,
    /// Packets (any kind) corrupted on a lossy link (`error_rate`); part of `drops`.
    pub link_error_losses: u64,
    /// PAUSE frames among `link_error_losses`: a lost PAUSE lets its sender's buffer
    /// overflow, so a lossless run that lost one may drop at a buffer (`check_conservation`).
    pub pause_frames_lost: u64,
    /// Packets (any kind) lost to link failures: on the wire or queued for the link when
    /// it went down, or sent to a dead port before routes changed; part of `drops`.
    pub link_down_losses: u64,
    /// Packets a switch had no route for (their destination cut off by link failures);
    /// part of `drops`.
    pub no_route_drops: u64,
    /// QP-context cache lookups that hit, over all NICs (0 when the cache is not modelled).
    pub qp_cache_hits: u64,
    /// QP-context cache lookups that missed (each delays that QP's packet by the penalty).
    pub qp_cache_misses: u64,
}

impl Counters {
    /// Adds another part's counters (a parallel run's partitions). `qps_peak` is kept: a
    /// peak over parts is not the sum of theirs (the parallel engine sets the run's from the
    /// partitions' openings and releases in the run's event order).
    pub fn add(&mut self, o: &Counters) {
        self.events += o.events;
        self.data_packets_sent += o.data_packets_sent;
        self.payload_bytes_sent += o.payload_bytes_sent;
        self.payload_bytes_delivered += o.payload_bytes_delivered;
        self.payload_bytes_dropped += o.payload_bytes_dropped;
        self.payload_bytes_discarded += o.payload_bytes_discarded;
        self.packet_hops += o.packet_hops;
        self.drops += o.drops;
        self.pauses += o.pauses;
        self.resumes += o.resumes;
        self.ecn_marks += o.ecn_marks;
        self.timeouts += o.timeouts;
        self.nacks += o.nacks;
        self.retx_packets += o.retx_packets;
        self.ooo_packets += o.ooo_packets;
        self.cnps_ecn += o.cnps_ecn;
        self.cnps_ooo += o.cnps_ooo;
        self.wr_failures += o.wr_failures;
        self.qps_opened += o.qps_opened;
        self.link_error_losses += o.link_error_losses;
        self.pause_frames_lost += o.pause_frames_lost;
        self.link_down_losses += o.link_down_losses;
        self.no_route_drops += o.no_route_drops;
        self.qp_cache_hits += o.qp_cache_hits;
        self.qp_cache_misses += o.qp_cache_misses;
    }
}

/// A mechanism's counters by name (`Mechanisms::counters`): one path from any mechanism's
/// own tallies to `Results::mechanism_counters` and Python's `res.counters`, so that a new
/// mechanism's count edits neither `Counters` nor the results chain. Counts every run
/// reports come first; counts only some runs report (`push_conditional`) are listed after
/// the run's totals, so that in a table of mixed runs every other column keeps its place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedCounts {
    /// Reported by every run (zero when the mechanism is off).
    pub always: Vec<(String, u64)>,
    /// Reported only by runs whose mechanism ran.
    pub conditional: Vec<(String, u64)>,
}

impl NamedCounts {
    /// Appends a count every run reports.
    pub fn push(&mut self, name: impl Into<String>, value: u64) {
        self.always.push((name.into(), value));
    }

    /// Appends a count only runs with the mechanism report.
    pub fn push_conditional(&mut self, name: impl Into<String>, value: u64) {
        self.conditional.push((name.into(), value));
    }

    /// Sets the count of `name` where it is listed (a parallel run's counts that every
    /// partition made alike, kept once).
    pub fn set(&mut self, name: &str, value: u64) {
        if let Some((_, v)) = self.always.iter_mut().chain(&mut self.conditional).find(|(n, _)| n == name) {
            *v = value;
        }
    }

    /// The count of `name` (0 when no mechanism reported it).
    pub fn get(&self, name: &str) -> u64 {
        self.always.iter().chain(&self.conditional).find(|(n, _)| n == name).map_or(0, |&(_, v)| v)
    }

    /// Adds another part's counts by name (a parallel run's partitions); a name this one
    /// lacks is appended in the other's order.
    pub fn add(&mut self, o: &NamedCounts) {
        add_by_name(&mut self.always, &o.always);
        add_by_name(&mut self.conditional, &o.conditional);
    }
}

/// `into` plus `from`, by name.
fn add_by_name(into: &mut Vec<(String, u64)>, from: &[(String, u64)]) {
    for (name, v) in from {
        match into.iter_mut().find(|(n, _)| n == name) {
            Some((_, mine)) => *mine += v,
            None => into.push((name.clone(), *v)),
        }
    }
}
