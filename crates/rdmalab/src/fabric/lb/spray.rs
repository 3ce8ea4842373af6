//! Oblivious per-packet spraying: every data packet takes a uniformly random equal-cost hop.

use crate::engine::rng::RngExt;
use crate::engine::Rng;
use crate::ids::PortId;

/// A uniformly random hop of `hops` (not empty).
#[inline]
pub fn pick_hop(rng: &mut Rng, hops: &[PortId]) -> PortId {
    hops[rng.gen_range(0..hops.len())]
}
