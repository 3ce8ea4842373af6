//! The lossy-mode WR size search of one path (§3.5, Fig. 3b): double the WR size while WRs
//! succeed; at the first failure go back to the last size that succeeded and add `step`
//! until the next failure; the last success is the path's largest WR. The paper gives
//! neither the first size nor the step (`chunk_probe_start`, `chunk_probe_step` are ours).

/// Which phase of the search a path is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Doubling from the start size.
    #[default]
    Doubling,
    /// The start size itself failed: halving until one succeeds (our fallback).
    Halving,
    /// Adding the step to the last good size.
    Linear,
    /// Found.
    Done,
}

/// A size above which the search stops and keeps its last success (1 GiB: no switch
/// buffer comes near, so only a fabric that never loses gets here).
pub const SEARCH_CAP: u64 = 1 << 30;

/// The search on one path.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChunkSearch {
    phase: Phase,
    /// The size of the WR to post next (or in flight).
    pub size: u64,
    /// The largest size that succeeded so far (0: none).
    pub last_good: u64,
    step: u64,
}

impl ChunkSearch {
    /// A search starting at `start` bytes (>= 1) that grows by `step` (>= 1) once a WR failed.
    pub fn new(start: u64, step: u64) -> ChunkSearch {
        ChunkSearch { phase: Phase::Doubling, size: start, last_good: 0, step }
    }

    /// The WR of `size` bytes completed (`ok`) or failed. Returns the next size to try,
    /// or `None` when the search is over ([`ChunkSearch::result`]).
    pub fn on_result(&mut self, ok: bool) -> Option<u64> {
        if ok {
            self.last_good = self.size;
        }
        let next = match (self.phase, ok) {
            (Phase::Done, _) => None,
            (Phase::Doubling, true) => Some(self.size * 2),
            (Phase::Doubling, false) if self.last_good == 0 => {
                self.phase = Phase::Halving;
                Some(self.size / 2)
            }
            (Phase::Halving, false) => Some(self.size / 2),
            (Phase::Doubling, false) | (Phase::Halving, true) => {
                self.phase = Phase::Linear;
                Some(self.last_good + self.step)
            }
            (Phase::Linear, true) => Some(self.size + self.step),
            (Phase::Linear, false) => None,
        };
        match next {
            Some(s) if (1..=SEARCH_CAP).contains(&s) => {
                self.size = s;
                Some(s)
            }
            _ => {
                self.phase = Phase::Done;
                None
            }
        }
    }

    /// The largest WR size found (at least 1 byte even if nothing succeeded).
    pub fn result(&self) -> u64 {
        self.last_good.max(1)
    }

    /// True once the search is over.
    pub fn done(&self) -> bool {
        self.phase == Phase::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a path that takes WRs up to `limit` bytes.
    fn run(limit: u64, start: u64, step: u64) -> (Vec<u64>, u64) {
        let mut s = ChunkSearch::new(start, step);
        let mut tried = vec![s.size];
        while let Some(next) = s.on_result(s.size <= limit) {
            tried.push(next);
        }
        (tried, s.result())
    }

    #[test]
    fn doubles_then_steps_to_the_largest_size_that_passes() {
        let (tried, max) = run(700_000, 65536, 16384);
        assert_eq!(&tried[..5], &[65536, 131072, 262144, 524288, 1048576]);
        // After the first failure: 524288 + k * 16384 until one fails.
        assert!(tried[5..].windows(2).all(|w| w[1] - w[0] == 16384));
        assert_eq!(tried[5], 524288 + 16384);
        assert_eq!(max, 524288 + 10 * 16384); // 688,128 <= 700,000 < 704,512
        assert!(max <= 700_000 && max + 16384 > 700_000);
    }

    #[test]
    fn a_failing_start_halves_first() {
        let (tried, max) = run(20_000, 65536, 4096);
        assert_eq!(&tried[..3], &[65536, 32768, 16384]);
        assert_eq!(tried[3], 16384 + 4096); // then linear from the first success
        assert_eq!(max, 16384); // 20,480 fails
    }

    #[test]
    fn a_path_that_never_fails_stops_at_the_cap() {
        let (_, max) = run(u64::MAX, 65536, 16384);
        assert_eq!(max, SEARCH_CAP);
    }
}
