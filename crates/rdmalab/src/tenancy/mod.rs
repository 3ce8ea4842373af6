//! Tenants: who owns which traffic, how much each one gets (the meter), and the defense
//! that makes the tenant, not the QP, the unit of congestion control.
//!
//! A tenant is a name and a set of hosts (`[[tenants]]` in a scenario). Every flow, QP and
//! delivered byte carries a tenant index; index 0 is the implicit `default` tenant (every
//! host). See `docs/attacks.md` for the attacks and the defense this serves.

pub mod defense;
pub mod meter;
pub mod pacing;

pub use defense::{Defense, DefenseParams, StartBudget};
pub use meter::{TenantBin, TenantMeter, METER_BIN};
pub use pacing::TenantPacer;

/// Name of tenant 0, which every host belongs to unless the scenario says otherwise.
pub const DEFAULT_TENANT: &str = "default";
