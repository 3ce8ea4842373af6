//! Congestion control: the interface every algorithm implements, and the registry.
//!
//! A congestion-control state (`CcGroup`) belongs to one QP by default, or is shared by
//! several QPs (per destination, per source-destination pair: seed 002's enforcement
//! granularity). The sender calls it on every ACK/NACK and on its own timers; it answers
//! with a new rate (and, through the rate, a window when VAR_WIN is on). Algorithms are
//! enum variants dispatched by `match`, one file each, so adding one touches this file's
//! registry and its own file only.
//!
//! This foundation ships `None` (line rate); DCQCN, HPCC, TIMELY, DCTCP and DASR plug in
//! as further variants.

use crate::fabric::IntHeader;
use crate::units::{Rate, Time};

/// Which algorithm, with its parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CcConfig {
    /// No congestion control: every QP sends at line rate (a documented extension of the
    /// reference's CC_MODE, numbered 0).
    #[default]
    None,
}

impl CcConfig {
    /// Bytes of INT header this algorithm needs on data packets.
    pub fn int_bytes(&self) -> u32 {
        match self {
            CcConfig::None => 0,
        }
    }
    /// Whether switches must stamp INT records.
    pub fn needs_int(&self) -> bool {
        false
    }
    /// The algorithm called `name` with the reference's default parameters.
    pub fn from_name(name: &str) -> std::result::Result<CcConfig, String> {
        match name {
            "none" => Ok(CcConfig::None),
            "dcqcn" | "hpcc" | "timely" | "dctcp" => {
                Err(format!("congestion control `{name}` is not supported yet (only `none`)"))
            }
            other => Err(format!("unknown congestion control `{other}` (known: none)")),
        }
    }
    /// A display name.
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::None => "none",
        }
    }
}

/// Which QPs share one congestion-control state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One state per QP (what RNICs do by default).
    #[default]
    PerQp,
    /// One state per destination host, its rate split evenly among the QPs.
    PerDestination,
    /// One state per (source host, destination host) pair, rate split evenly.
    PerPair,
    /// Per destination, but the rate applied to every QP unsplit (seed 002's ConnectX-5).
    PerDestinationUnsplit,
}

/// What a sender tells the algorithm about an ACK or NACK.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent<'a> {
    /// Arrival time.
    pub now: Time,
    /// Cumulative sequence acknowledged.
    pub seq: u64,
    /// The QP's next byte to send.
    pub snd_nxt: u64,
    /// The ACK carries the CNP flag (ECN echo).
    pub cnp: bool,
    /// It is a NACK.
    pub nack: bool,
    /// The INT header echoed by the receiver, when INT is on.
    pub int: Option<&'a IntHeader>,
}

/// The per-group state.
#[derive(Clone, Debug, Default)]
pub enum CcState {
    /// Line rate, nothing to keep.
    #[default]
    None,
}

/// A congestion-control state shared by the QPs of one group.
#[derive(Clone, Debug)]
pub struct CcGroup {
    /// The rate the group may send at.
    pub rate: Rate,
    /// Line rate.
    pub max_rate: Rate,
    /// Algorithm state.
    pub state: CcState,
    /// QPs currently in the group.
    pub members: u32,
}

impl CcGroup {
    /// A fresh group at line rate.
    pub fn new(cfg: &CcConfig, line: Rate) -> CcGroup {
        let state = match cfg {
            CcConfig::None => CcState::None,
        };
        CcGroup { rate: line, max_rate: line, state, members: 0 }
    }

    /// Reacts to an ACK/NACK; returns the new group rate if it changed.
    pub fn on_ack(&mut self, _ack: &AckEvent<'_>) -> Option<Rate> {
        match self.state {
            CcState::None => None,
        }
    }
}
