//! The switch side of `fabric.buffer_model = "per_port"` and `"egress_dynamic"`
//! (`fabric::buffer_model`): building each switch's port buffers, and admission, release and
//! PFC RESUME frames against them.
//! Reached from `sim/switch/mod.rs` in place of the shared MMU when `Mechanisms::port_buffers`
//! is set (one test per admission and release otherwise); the RESUME frames a release asks
//! for are sent by `sim/pfc.rs::send_resumes`.

use crate::config::SimConfig;
use crate::fabric::buffer_model::{BufferModel, PortBuffers, PortLimit};
use crate::fabric::{Admission, PortState, SwitchMmu};
use crate::ids::PortId;
use crate::topology::Topology;

/// Every switch's port buffers, in switch order (the MMUs' order), or `None` under the
/// shared model. Under `per_port` a port owns `port_buffer_bytes` if given, else its
/// switch's buffer less the PFC headroom of its ports, split evenly among them; under
/// `egress_dynamic` the buffer less the headroom is the pool the ports' thresholds share.
pub(in crate::sim) fn build(topo: &Topology, cfg: &SimConfig, mmus: &[SwitchMmu]) -> Option<Box<[PortBuffers]>> {
    if !cfg.buffer_model.per_egress() {
        return None;
    }
    let pfc = cfg.classes.as_ref().map_or(if cfg.lossless { u8::MAX } else { 0 }, |t| t.pfc_mask());
    let buffers = topo.switches().zip(mmus).map(|(s, mmu)| {
        let ports = topo.nodes[s.idx()].ports.len();
        let headroom: Vec<u64> = (0..ports).map(|p| if pfc == 0 { 0 } else { mmu.headroom(p) }).collect();
        let pool = cfg.buffer_bytes.saturating_sub(headroom.iter().sum());
        let limit = match cfg.buffer_model {
            BufferModel::EgressDynamic => PortLimit::Dynamic { pool, alpha: cfg.dt_alpha },
            _ => PortLimit::Static(cfg.port_buffer_bytes.unwrap_or(pool / ports.max(1) as u64)),
        };
        PortBuffers::with_limit(limit, headroom, pfc, cfg.resume_offset_bytes)
    });
    Some(buffers.collect())
}

/// Admission of `wire` bytes of `class` from ingress `ingress_local` of switch `sw` into
/// the buffer of `egress` (the switch's one admission, `switch/mod.rs::admit`, in place of the
/// shared MMU).
#[inline(never)]
pub(in crate::sim) fn admit(
    buffers: &mut [PortBuffers],
    ports: &[PortState],
    sw: usize,
    ingress_local: u16,
    egress: PortId,
    class: usize,
    wire: u32,
) -> Admission {
    let e = ports[egress.idx()].local as usize;
    buffers[sw].admit(ingress_local as usize, e, class, wire as u64)
}

/// Release of a packet of `class` from ingress `ingress_local` leaving `egress` of switch
/// `sw`; true when some ingress should resume (`pfc.rs::send_resumes`).
#[inline(never)]
pub(in crate::sim) fn release(
    buffers: &mut [PortBuffers],
    ports: &[PortState],
    sw: usize,
    ingress_local: u16,
    egress: PortId,
    class: usize,
    wire: u32,
) -> bool {
    let e = ports[egress.idx()].local as usize;
    buffers[sw].release(ingress_local as usize, e, class, wire as u64)
}
