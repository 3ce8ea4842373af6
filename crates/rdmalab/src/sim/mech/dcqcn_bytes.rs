//! DCQCN's byte counter at the sender (`[fabric.cc_params] byte_counter`, `cc::dcqcn`): the
//! bytes a congestion state sends after a cut raise an increase event every `byte_counter`
//! of them, beside the increase timer's. Reached from `host/tx.rs::send_data` only when
//! `byte_counter` > 0 (one test per packet otherwise: `counts_bytes`).

use crate::cc::{CcConfig, CcGroup, CcState};

/// True when the run's DCQCN counts bytes (the hook's one test).
#[inline]
pub(crate) fn counts_bytes(cc: &CcConfig) -> bool {
    matches!(cc, CcConfig::Dcqcn(p) if p.byte_counter > 0)
}

/// `group` sent `wire` bytes; returns true when its rate changed (the members' rates are
/// then the simulator's to update).
pub(crate) fn on_packet_sent(cc: &CcConfig, group: &mut CcGroup, wire: u64) -> bool {
    let (CcConfig::Dcqcn(p), CcState::Dcqcn(s)) = (cc, &mut group.state) else { return false };
    let old = group.rate;
    s.on_sent(p, &mut group.rate, group.max_rate, wire);
    group.rate != old
}
