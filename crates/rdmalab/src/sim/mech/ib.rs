//! InfiniBand's credit-based link-level flow control in the event loop (`fabric::ib` holds
//! the per-port state and its rules). Reached through hooks off a RoCE run's path: the
//! RNIC's data packet (`host/tx.rs::send_data`, one test of `self.ib` per data packet), the
//! out-of-line arrival (`wire.rs::arrival_hook`, taken because every IB port is marked
//! `peer_lossy`), and the special egress of switch ports (`switch.rs::switch_send::<true>`).
//! Flow-control packets go ahead of data (a switch's queue 0, the front of an RNIC's ACK
//! queue) and end at the link's far end (`on_pfc`).
//!
//! A sender stalls a VL (the port's class mask, `PortState::set_credit_blocked`) once its
//! credits fall short of the largest packet, so that any order of service among the packets
//! queued for the VL (FIFO, or input-fair) finds credits for whichever it picks.

use crate::config::SimConfig;
use crate::fabric::ib::{self, PortCredits};
use crate::fabric::{Packet, PacketKind, PacketRef, PortState};
use crate::ids::{NodeId, PortId};
use crate::sim::Simulation;

/// The credit state of every port of an InfiniBand run.
#[derive(Debug)]
pub(crate) struct IbLinks {
    /// By port id; each entry belongs to its port's node.
    ports: Vec<PortCredits>,
    /// Input buffer per port and VL, blocks.
    capacity: u64,
    /// Blocks of the largest packet: a VL with fewer credits stalls.
    need: u64,
}

impl IbLinks {
    /// Packets that arrived with no buffer for them (never, unless credits are broken).
    pub(crate) fn overruns(&self) -> u64 {
        self.ports.iter().map(|p| p.overruns).sum()
    }
    /// Most blocks one input VL buffer held, over the run.
    pub(crate) fn max_held_bytes(&self) -> u64 {
        self.ports.iter().map(|p| p.max_held).max().unwrap_or(0) * ib::BLOCK
    }
}

/// The credit state of an InfiniBand run (`None` on RoCE). Marks every port for the
/// out-of-line arrival and every switch egress for the special path.
pub(crate) fn build(cfg: &SimConfig, ports: &mut [PortState]) -> Option<Box<IbLinks>> {
    if !cfg.infiniband() {
        return None;
    }
    for p in ports.iter_mut() {
        p.peer_lossy = true;
        p.special |= !p.on_host;
    }
    let capacity = cfg.ib_vl_buffer / ib::BLOCK;
    let need = ib::blocks(cfg.data_wire(cfg.mtu) + ib::RETH);
    Some(Box::new(IbLinks { ports: vec![PortCredits::new(capacity); ports.len()], capacity, need }))
}

impl Simulation {
    /// The VL whose credits `pkt` takes, if any: data packets only. Link control frames
    /// and ACKs travel outside flow control, as IB's VL15 (a choice, docs/physics.md: the
    /// RNIC's ACK queue obeys no VL's credits, and an ACK is 30 bytes).
    #[inline]
    fn ib_vl(&self, pkt: &Packet) -> Option<usize> {
        let uncredited = pkt.kind != PacketKind::Data || pkt.pg == 0;
        (!uncredited).then_some(pkt.pg as usize)
    }

    /// Hook: an RNIC sends data packet `pkt` out of `port` (a WRITE's first packet already
    /// carries its RETH: `host/tx.rs::send_data` adds it before pacing); the packet's VL
    /// spends its credits.
    pub(in crate::sim) fn ib_on_send_data(&mut self, port: PortId, pkt: &Packet) {
        self.ib_spend(port, pkt);
    }

    /// The VL of `pkt` spends its blocks of `port`'s credits, and stalls when what is left
    /// falls short of the largest packet.
    fn ib_spend(&mut self, port: PortId, pkt: &Packet) {
        let Some(vl) = self.ib_vl(pkt) else { return };
        let ib = self.mech.ib.as_deref_mut().expect("IB hook without IB state");
        if ib.ports[port.idx()].on_send(vl, ib::blocks(pkt.wire), ib.need, self.now) {
            self.ports[port.idx()].set_credit_blocked(vl, true);
        }
    }

    /// Hook: the packet at `parked` arrived at `at` (and is `lost` on the link). It fills
    /// `at`'s input buffer; an HCA frees it at once (the RNIC consumes what it receives),
    /// and a corrupted packet is discarded, which frees it too.
    pub(in crate::sim) fn ib_on_arrive(&mut self, at: PortId, parked: PacketRef, lost: bool) {
        let pkt = *self.packets.get(parked);
        let Some(vl) = self.ib_vl(&pkt) else { return };
        let ib = self.mech.ib.as_deref_mut().expect("IB hook without IB state");
        let b = ib::blocks(pkt.wire);
        let credits = &mut ib.ports[at.idx()];
        credits.on_receive(vl, b, ib.capacity);
        if lost || (self.ports[at.idx()].on_host && !credits.hold) {
            let fccl = credits.free(vl, b, ib.capacity);
            self.send_flow_control(at, vl, fccl);
        }
    }

    /// Hook: a switch's egress `port` started sending the packet at `r`, which it took
    /// from the input buffer of `ingress`: `port` spends credits, the input buffer's blocks
    /// are free and the upstream hears so.
    pub(in crate::sim) fn ib_on_switch_send(&mut self, port: PortId, ingress: PortId, r: PacketRef) {
        let pkt = *self.packets.get(r);
        let Some(vl) = self.ib_vl(&pkt) else { return };
        self.ib_spend(port, &pkt);
        let ib = self.mech.ib.as_deref_mut().expect("IB hook without IB state");
        let fccl = ib.ports[ingress.idx()].free(vl, ib::blocks(pkt.wire), ib.capacity);
        self.send_flow_control(ingress, vl, fccl);
    }

    /// Sends a flow-control packet for `vl` with credit limit `fccl` out of `port`, ahead
    /// of any data: a switch's queue 0, or the front of an RNIC's ACK queue.
    fn send_flow_control(&mut self, port: PortId, vl: usize, fccl: u64) {
        let st = &mut self.ports[port.idx()];
        if st.down {
            return;
        }
        let mut frame = Packet::pfc(PacketKind::FlowControl, vl as u8, self.cfg.pfc_bytes);
        frame.seq = fccl;
        if st.on_host {
            self.nics[st.unit as usize].acks.push_front(frame);
        } else {
            st.enqueue(0, frame, &mut self.packets);
        }
        self.kick(port);
    }

    /// A flow-control packet reached `at`, the sending side of its link.
    pub(in crate::sim) fn ib_on_flow_control(&mut self, at: PortId, frame: Packet) {
        let ib = self.mech.ib.as_deref_mut().expect("flow control without IB state");
        let vl = frame.pg as usize;
        if ib.ports[at.idx()].on_credit(vl, frame.seq, ib.need, self.now) {
            self.ports[at.idx()].set_credit_blocked(vl, false);
            self.kick(at);
        }
    }

    /// Credit stalls per port (`PortCounters::credit_stall_ps`) up to now, into `ports`.
    pub(in crate::sim) fn ib_stall_counters(&self, ports: &mut [crate::fabric::PortCounters]) {
        let Some(ib) = self.mech.ib.as_deref() else { return };
        for (c, credits) in ports.iter_mut().zip(&ib.ports) {
            c.credit_stall_ps = credits.stall_ps(self.now);
        }
    }

    /// Test hook: the input buffer of `host`'s port stops draining (its RNIC returns no
    /// more credits), as a receiver that stopped consuming.
    #[doc(hidden)]
    pub fn ib_hold_credits(&mut self, host: NodeId) {
        let port = self.topo.nodes[host.idx()].ports[0];
        if let Some(ib) = self.mech.ib.as_deref_mut() {
            ib.ports[port.idx()].hold = true;
        }
    }

    /// Packets that found no room in an input buffer, and the most bytes one input VL
    /// buffer held (`None` on RoCE). Checks of the credit loop for tests.
    #[doc(hidden)]
    pub fn ib_buffer_check(&self) -> Option<(u64, u64)> {
        self.mech.ib.as_deref().map(|ib| (ib.overruns(), ib.max_held_bytes()))
    }
}

/// The shared-buffer MMU of an InfiniBand switch: it only counts. Credits bound every
/// input buffer (`ib_vl_buffer` per port and VL), so no PAUSE is sent and nothing is
/// dropped; a pool no run can fill stands for "no shared-buffer limit".
pub(crate) fn mmu_config(cfg: &SimConfig, roce: crate::fabric::MmuConfig) -> crate::fabric::MmuConfig {
    if !cfg.infiniband() {
        return roce;
    }
    crate::fabric::MmuConfig { buffer: 1 << 50, pfc_classes: Some(0), ..roce }
}
