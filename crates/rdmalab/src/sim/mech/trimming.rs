//! Packet trimming at switches (`[fabric.trimming]`): a UET data packet that would queue past
//! the threshold in its egress class, or that the switch's buffer refuses, is cut to its
//! header and queued in the trimmed class (strict priority) instead of waiting or being
//! dropped; its receiver answers the header with a NACK naming it (`sim/host/uet_rx.rs`),
//! and its sender resends it (`mech::uet::retransmit_lost`).
//!
//! Hook: the switch's one admission on a `special` egress (`switch/mod.rs::admit::<true>`;
//! trimming turns every switch egress special, `mech::special_egress`, so a run without it
//! compiles no test into the common path), the work out of line in `switch/trim.rs`. State: the run's counts and each egress port's
//! trims (the port's switch owns its count).

use crate::config::sim_config::TrimConfig;
use crate::fabric::transport::UET_TRIMMABLE;
use crate::fabric::{Packet, PacketKind};
use crate::stats::NamedCounts;

/// Trimming's settings and counts.
#[derive(Clone, Debug)]
pub(crate) struct Trimming {
    pub cfg: TrimConfig,
    /// Packets trimmed.
    pub trims: u64,
    /// Payload bytes the trims cut off.
    pub trimmed_bytes: u64,
    /// Packets trimmed by egress port.
    pub port_trims: Vec<u64>,
    /// Payload bytes cut off by egress port.
    pub port_trimmed_bytes: Vec<u64>,
}

impl Trimming {
    pub(crate) fn new(cfg: TrimConfig, ports: usize) -> Trimming {
        Trimming { cfg, trims: 0, trimmed_bytes: 0, port_trims: vec![0; ports], port_trimmed_bytes: vec![0; ports] }
    }
}

/// A UET data packet not yet trimmed.
#[inline]
pub(in crate::sim) fn trimmable(pkt: &Packet) -> bool {
    pkt.kind == PacketKind::Data && pkt.deflections & UET_TRIMMABLE != 0 && !pkt.cnp
}

/// The threshold rule: `pkt` would find `queued` bytes in its egress class (itself added).
#[inline]
pub(in crate::sim) fn over_threshold(t: &Trimming, queued: u64, pkt: &Packet) -> bool {
    t.cfg.threshold.is_some_and(|th| queued + pkt.wire as u64 > th)
}

/// Cuts `pkt` to its header at egress port `egress`: no payload (its bytes count as
/// dropped: returned), the header's size on the wire, the trimmed class, the trimmed flag
/// (`mech::uet::trimmed`).
pub(in crate::sim) fn trim(t: &mut Trimming, pkt: &mut Packet, egress: usize) -> u64 {
    let lost = pkt.payload as u64;
    t.trims += 1;
    t.trimmed_bytes += lost;
    t.port_trims[egress] += 1;
    t.port_trimmed_bytes[egress] += lost;
    pkt.payload = 0;
    pkt.wire = t.cfg.header_bytes;
    pkt.pg = t.cfg.class;
    pkt.cnp = true;
    lost
}

/// Trimming's counts (`res.counters`), in runs with trimming only.
pub(super) fn counters(t: Option<&Trimming>, c: &mut NamedCounts) {
    let Some(t) = t else { return };
    c.push_conditional("trims", t.trims);
    c.push_conditional("trimmed_bytes", t.trimmed_bytes);
}

/// Trims per egress port (`PortCounters::trims`, `trimmed_bytes`), into `counters`; a run
/// without trimming leaves them 0. Each port's switch counted its own, so in a parallel run
/// the partition that owns the port holds its count (`sim::parallel::merge` keeps it).
pub(in crate::sim) fn port_counters(t: Option<&Trimming>, counters: &mut [crate::fabric::PortCounters]) {
    let Some(t) = t else { return };
    for ((c, &n), &b) in counters.iter_mut().zip(&t.port_trims).zip(&t.port_trimmed_bytes) {
        (c.trims, c.trimmed_bytes) = (n, b);
    }
}
