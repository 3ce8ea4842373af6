//! The Blitz poster's DASR as its testbed emulated it "by staggering the messages in time at the
//! application layer" (§3), serial reading: the aggregator lets one sender of a round send
//! at a time. The poster does not say how; we model it as a grant, a small message the
//! aggregator sends to one sender, which posts its round's message once both the grant
//! and its message (the jittered flow start) are there. The aggregator grants the next
//! sender when the previous message has arrived whole (its receive completion), so the
//! messages of a round never overlap on the aggregator's link and each costs a grant's
//! trip on the fabric. (The other reading, `paced`, is a staggered transfer held to C/n:
//! `attacks::Staggered::paced`.)
//!
//! Pure schedules and sizes; the simulator side is `sim/apps/serial_incast.rs`.

use crate::ids::{AppId, NodeId};
use crate::units::Time;

/// Bytes of a grant message: the poster is silent; we take one 64-byte cache line (the
/// application header's 34 bytes rounded up), a choice printed in `docs/blitz.md`.
pub const GRANT_BYTES: u64 = 64;

/// The aggregator of a serial incast: the receiving host's application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantAggregator {
    /// The aggregator (the incast's receiver).
    pub host: NodeId,
    /// The round's members in grant order, each with its sender application.
    pub senders: Vec<(NodeId, AppId)>,
    /// First round's start.
    pub start: Time,
    /// Time between round starts.
    pub period: Time,
    /// Number of rounds.
    pub rounds: u32,
    /// Class of the grants (the incast's).
    pub pg: u8,
    /// Tenant index.
    pub tenant: u16,
}

impl GrantAggregator {
    /// When round `r` starts.
    pub fn round_start(&self, r: u32) -> Time {
        Time(self.start.0 + self.period.0 * r as u64)
    }
}

/// A sender of a serial incast: posts each of its flows (one per round) on one QP to the
/// aggregator once a grant for it has arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantSender {
    /// The sending host.
    pub host: NodeId,
    /// The aggregator's host.
    pub aggregator: NodeId,
    /// The aggregator's application (hears of each message's arrival).
    pub aggregator_app: AppId,
    /// Flows it will carry (one per round).
    pub messages: u32,
}

/// Sends of a serial round in grant order: sender `g mod n` of round `g div n` for the
/// `g`-th grant of the run.
pub fn grant_target(g: u64, members: usize) -> (u32, usize) {
    ((g / members as u64) as u32, (g % members as u64) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_walk_members_then_rounds() {
        assert_eq!(grant_target(0, 4), (0, 0));
        assert_eq!(grant_target(3, 4), (0, 3));
        assert_eq!(grant_target(4, 4), (1, 0));
        assert_eq!(grant_target(9, 4), (2, 1));
    }
}
