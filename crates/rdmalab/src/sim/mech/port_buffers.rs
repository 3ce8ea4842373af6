//! The switch side of `fabric.buffer_model = "per_port"` and `"egress_dynamic"`
//! (`fabric::buffer_model`): building each switch's port buffers, and admission, release and
//! PFC RESUME frames against them.
//! Reached from `sim/switch.rs` in place of the shared MMU when `Simulation::port_buffers`
//! is set (one test per admission and release otherwise).

use crate::config::SimConfig;
use crate::fabric::buffer_model::{BufferModel, PortBuffers, PortLimit};
use crate::fabric::{Admission, PacketKind, SwitchMmu};
use crate::ids::PortId;
use crate::sim::Simulation;
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

impl Simulation {
    /// Switch `sw`'s port buffers and `egress`'s index among that switch's ports.
    #[inline]
    fn port_buffer_of(&mut self, sw: usize, egress: PortId) -> (&mut PortBuffers, usize) {
        let e = self.ports[egress.idx()].local as usize;
        (&mut self.mech.port_buffers.as_deref_mut().expect("per-port buffers")[sw], e)
    }

    /// Admission of `wire` bytes of `class` from ingress `ingress_local` of switch `sw` into
    /// the buffer of `egress`.
    #[inline(never)]
    pub(in crate::sim) fn port_buffer_admit(
        &mut self,
        sw: usize,
        ingress_local: u16,
        egress: PortId,
        class: usize,
        wire: u32,
    ) -> Admission {
        let (b, e) = self.port_buffer_of(sw, egress);
        b.admit(ingress_local as usize, e, class, wire as u64)
    }

    /// Release of a packet of `class` from ingress `ingress_local` leaving `egress` of
    /// switch `sw`; true when some ingress should resume (`send_resumes`).
    #[inline(never)]
    pub(in crate::sim) fn port_buffer_release(
        &mut self,
        sw: usize,
        ingress_local: u16,
        egress: PortId,
        class: usize,
        wire: u32,
    ) -> bool {
        let (b, e) = self.port_buffer_of(sw, egress);
        b.release(ingress_local as usize, e, class, wire as u64)
    }

    /// The RESUME frames a release at `egress` of switch `sw` asked for: to `ingress` for
    /// `class` under the shared MMU, to every ingress the port buffers let go otherwise.
    pub(in crate::sim) fn send_resumes(&mut self, sw: usize, egress: PortId, ingress: PortId, class: u8) {
        if self.mech.port_buffers.is_none() {
            return self.send_pfc(ingress, PacketKind::Resume, class);
        }
        let node = self.ports[egress.idx()].node.idx();
        while let Some((i, q)) = self.mech.port_buffers.as_deref_mut().and_then(|b| b[sw].next_resume()) {
            let port = self.topo.nodes[node].ports[i as usize];
            self.send_pfc(port, PacketKind::Resume, q);
        }
    }
}
