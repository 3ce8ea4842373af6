//! `fabric.defense`: how the fabric keeps one tenant from out-taking another.
//!
//! `tenant` makes the tenant the unit of congestion control at each sending NIC: every QP
//! of tenant `t` on NIC `n` joins one shared state keyed (n, t), whatever the destination
//! and whatever `fabric.granularity` says; its QPs share the state's rate under one pacing
//! clock ([`super::pacing`]). More QPs (parallel), fresh QPs (staggered) or new destinations
//! (shuffled overlay) then add nothing: they share the state the tenant already has.
//!
//! Short flows keep their line-rate start through a per-(NIC, tenant) byte budget of
//! line-rate starts ([`StartBudget`]): a new QP whose first `min(size, BDP)` bytes fit in
//! the budget sends them under a private, fresh state (line rate, as without the defense),
//! then joins its tenant's state. The budget refills at a small fraction of the line rate,
//! so an attacker gains at most that fraction by posing as short flows, while benign
//! tenants, whose short flows carry little of their bytes, almost never run out of it.
//! The tenant state outlives its last QP by `max(cc_state_linger, DefenseParams::linger)`,
//! so destroying and recreating QPs does not reset it either.

use crate::units::{Rate, Time};

/// Which defense the fabric runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Defense {
    /// None: QPs group as `fabric.granularity` says.
    #[default]
    None,
    /// Per-(NIC, tenant) congestion state plus a budget of line-rate starts.
    Tenant,
}

/// Constants of the `tenant` defense (chosen, not tuned to one number: see
/// `docs/attacks.md` for the bound each one sets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DefenseParams {
    /// Refill rate of the line-rate start budget, as a fraction of the NIC rate. It bounds
    /// what posing as short flows can gain: with fraction f against one victim, the victim
    /// keeps at least (1 - f) / 2 of the bottleneck.
    pub start_fraction: f64,
    /// Budget depth, in BDPs of the path of the QP asking.
    pub burst_bdps: u64,
    /// How long a tenant state outlives its last QP (at least).
    pub linger: Time,
}

impl Default for DefenseParams {
    fn default() -> Self {
        DefenseParams { start_fraction: 0.05, burst_bdps: 8, linger: Time::from_ms(1) }
    }
}

/// One (NIC, tenant)'s budget of bytes it may send at a fresh line-rate start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StartBudget {
    /// Bytes available at `updated`.
    pub bytes: u64,
    /// When `bytes` was last brought up to date.
    pub updated: Time,
    /// Whether the budget has been used yet (a fresh one is full).
    pub started: bool,
}

impl StartBudget {
    /// Takes `want` bytes if the budget, refilled at `refill` up to `depth`, holds them.
    pub fn try_take(&mut self, now: Time, want: u64, refill: Rate, depth: u64) -> bool {
        if !self.started {
            *self = StartBudget { bytes: depth, updated: now, started: true };
        }
        let earned = (now.0 - self.updated.0) as u128 * refill.0 as u128 / 8 / 1_000_000_000_000;
        self.bytes = (self.bytes as u128 + earned).min(depth as u128) as u64;
        self.updated = now;
        if self.bytes >= want {
            self.bytes -= want;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_starts_full_refills_at_its_rate_and_caps() {
        let mut b = StartBudget::default();
        let (r, depth) = (Rate::gbps(8), 10_000);
        assert!(b.try_take(Time::ZERO, 10_000, r, depth));
        assert!(!b.try_take(Time::ZERO, 1, r, depth));
        // 8 Gb/s = 1 byte per ns: 5000 bytes after 5 us.
        assert!(!b.try_take(Time::from_ns(4_999), 5_000, r, depth));
        assert!(b.try_take(Time::from_ns(5_000), 5_000, r, depth));
        // Capped at the depth however long it waits.
        assert!(!b.try_take(Time::from_ms(100), 10_001, r, depth));
        assert!(b.try_take(Time::from_ms(100), 10_000, r, depth));
    }
}
