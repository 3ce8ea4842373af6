//! InfiniBand's credit-based link-level flow control in the event loop (`fabric::ib` holds
//! the per-port state and its rules). Reached through hooks off a RoCE run's path: the
//! RNIC's data packet (`host/tx.rs::send_data`, one test of `self.ib` per data packet), the
//! out-of-line arrival (`wire.rs::arrival_hook`, taken because every IB port is marked
//! `peer_lossy`), and the special egress of switch ports (`switch/mod.rs::switch_send::<true>`).
//! Flow-control packets go ahead of data (a switch's queue 0, the front of an RNIC's ACK
//! queue) and end at the link's far end (`on_pfc`).
//!
//! A sender stalls a VL (the port's class mask, `PortState::set_credit_blocked`) once its
//! credits fall short of the largest packet, so that any order of service among the packets
//! queued for the VL (FIFO, or input-fair) finds credits for whichever it picks.

use super::actions::Action;
use crate::config::SimConfig;
use crate::fabric::ib::{self, PortCredits};
use crate::fabric::{Packet, PacketKind, PortState};
use crate::ids::PortId;
use crate::units::Time;

/// The credit state of every port of an InfiniBand run.
#[derive(Debug)]
pub(crate) struct IbLinks {
    /// By port id; each entry belongs to its port's node.
    ports: Vec<PortCredits>,
    /// Input buffer per port and VL, blocks.
    capacity: u64,
    /// Blocks of the largest packet: a VL with fewer credits stalls.
    need: u64,
    /// Bytes of a flow-control packet on the wire (`fabric.pfc_bytes`).
    frame_bytes: u32,
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
    let frame_bytes = cfg.pfc_bytes;
    Some(Box::new(IbLinks { ports: vec![PortCredits::new(capacity); ports.len()], capacity, need, frame_bytes }))
}

/// The VL whose credits `pkt` takes, if any: data packets only. Link control frames and
/// ACKs travel outside flow control, as IB's VL15 (a choice, docs/model/infiniband.md#credits: the RNIC's
/// ACK queue obeys no VL's credits, and an ACK is 30 bytes).
#[inline]
fn vl_of(pkt: &Packet) -> Option<usize> {
    let uncredited = pkt.kind != PacketKind::Data || pkt.pg == 0;
    (!uncredited).then_some(pkt.pg as usize)
}

/// Hook "RNIC sends a data packet" (`host/tx.rs::send_data`; a WRITE's first packet already
/// carries its RETH, added before pacing) and the first half of "switch sends": the packet's
/// VL spends its blocks of `port`'s credits, and stalls the port's VL when what is left
/// falls short of the largest packet.
pub(in crate::sim) fn on_send(ib: &mut IbLinks, ports: &mut [PortState], now: Time, port: PortId, pkt: &Packet) {
    let Some(vl) = vl_of(pkt) else { return };
    if ib.ports[port.idx()].on_send(vl, ib::blocks(pkt.wire), ib.need, now) {
        ports[port.idx()].set_credit_blocked(vl, true);
    }
}

/// Hook "arrival" (`wire.rs::arrival_hook`): `pkt` arrived at `at` (and is `lost` on the
/// link). It fills `at`'s input buffer; an HCA frees it at once (the RNIC consumes what it
/// receives), and a corrupted packet is discarded, which frees it too: then the upstream
/// hears so (an `Action::Frame`).
pub(in crate::sim) fn on_arrive(
    ib: &mut IbLinks,
    ports: &[PortState],
    at: PortId,
    pkt: &Packet,
    lost: bool,
    out: &mut Vec<Action>,
) {
    let Some(vl) = vl_of(pkt) else { return };
    let b = ib::blocks(pkt.wire);
    let credits = &mut ib.ports[at.idx()];
    credits.on_receive(vl, b, ib.capacity);
    if lost || (ports[at.idx()].on_host && !credits.hold) {
        let fccl = credits.free(vl, b, ib.capacity);
        out.push(flow_control(ib, at, vl, fccl));
    }
}

/// Hook "switch sends" (`switch/mod.rs::switch_send`, special ports): egress `port` started
/// sending `pkt`, which it took from the input buffer of `ingress`: `port` spends credits,
/// the input buffer's blocks are free and the upstream hears so.
pub(in crate::sim) fn on_switch_send(
    ib: &mut IbLinks,
    ports: &mut [PortState],
    now: Time,
    (port, ingress): (PortId, PortId),
    pkt: &Packet,
    out: &mut Vec<Action>,
) {
    let Some(vl) = vl_of(pkt) else { return };
    on_send(ib, ports, now, port, pkt);
    let fccl = ib.ports[ingress.idx()].free(vl, ib::blocks(pkt.wire), ib.capacity);
    out.push(flow_control(ib, ingress, vl, fccl));
}

/// Hook "switch discards" (`switch/mod.rs::drop_at_ingress`: a packet routed to a failed
/// link; `switch/carry_out.rs`: the queue of a port whose link failed, a mechanism's
/// deliberate drop): `pkt` leaves the input buffer of `ingress`, the port it came in on,
/// without being sent. Its blocks are free and the upstream hears so, as after a send;
/// otherwise the upstream's credits for them would be gone for good, and a VL that lost a
/// buffer's worth would stall for the rest of the run.
pub(in crate::sim) fn on_switch_discard(ib: &mut IbLinks, ingress: PortId, pkt: &Packet, out: &mut Vec<Action>) {
    let Some(vl) = vl_of(pkt) else { return };
    let fccl = ib.ports[ingress.idx()].free(vl, ib::blocks(pkt.wire), ib.capacity);
    out.push(flow_control(ib, ingress, vl, fccl));
}

/// Hook "link failure" (`wire.rs::lose_wire`): `pkt`, sent out of `port`, was on the wire
/// when the link failed. It never reaches the peer's input buffer, so the peer never frees
/// its blocks: they are `port`'s again, or the VL would lack them for the rest of the run.
pub(in crate::sim) fn on_wire_lost(ib: &mut IbLinks, port: PortId, pkt: &Packet) {
    let Some(vl) = vl_of(pkt) else { return };
    ib.ports[port.idx()].unsend(vl, ib::blocks(pkt.wire));
}

/// After `port`'s link failed (its wire emptied, `on_wire_lost`): each VL stalls as its
/// credits say. Losing carrier cleared the port's PAUSE mask, which under InfiniBand stands
/// for credits: left so, a VL short of credits would send into a full buffer once the link
/// is back.
pub(in crate::sim) fn restall(ib: &mut IbLinks, ports: &mut [PortState], now: Time, port: PortId) {
    let stalled = ib.ports[port.idx()].restall(ib.need, now);
    for vl in 1..crate::fabric::NUM_PRIOS {
        ports[port.idx()].set_credit_blocked(vl, stalled & (1 << vl) != 0);
    }
}

/// Hook "link up" (`wire.rs::on_link_event`): `port`'s input buffer advertises its credit
/// limit on every VL, as a link does when it initialises (§7.9.4): what it freed while the
/// link was down could not be told across it.
pub(in crate::sim) fn on_link_up(ib: &IbLinks, port: PortId, out: &mut Vec<Action>) {
    for vl in 1..crate::fabric::NUM_PRIOS {
        out.push(flow_control(ib, port, vl, ib.ports[port.idx()].fccl(vl, ib.capacity)));
    }
}

/// A flow-control packet for `vl` with credit limit `fccl` out of `port`, ahead of any
/// data (the carry-out's `Frame`).
fn flow_control(ib: &IbLinks, port: PortId, vl: usize, fccl: u64) -> Action {
    let mut frame = Packet::pfc(PacketKind::FlowControl, vl as u8, ib.frame_bytes);
    frame.seq = fccl;
    Action::Frame { port, frame }
}

/// Hook "flow control arrives" (`pfc.rs::on_pfc`): `frame` reached `at`, the sending side
/// of its link; a VL with credits again resumes (the port is kicked).
pub(in crate::sim) fn on_flow_control(
    ib: &mut IbLinks,
    ports: &mut [PortState],
    now: Time,
    at: PortId,
    frame: &Packet,
    out: &mut Vec<Action>,
) {
    let vl = frame.pg as usize;
    if ib.ports[at.idx()].on_credit(vl, frame.seq, ib.need, now) {
        ports[at.idx()].set_credit_blocked(vl, false);
        out.push(Action::Kick(at));
    }
}

/// Credit stalls per port (`PortCounters::credit_stall_ps`) up to `now`, into `counters`.
pub(in crate::sim) fn stall_counters(ib: Option<&IbLinks>, now: Time, counters: &mut [crate::fabric::PortCounters]) {
    let Some(ib) = ib else { return };
    for (c, credits) in counters.iter_mut().zip(&ib.ports) {
        c.credit_stall_ps = credits.stall_ps(now);
    }
}

/// Test lever: the input buffer of `port` stops draining (its RNIC returns no more credits),
/// as a receiver that stopped consuming.
pub(in crate::sim) fn hold_credits(ib: &mut IbLinks, port: PortId) {
    ib.ports[port.idx()].hold = true;
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
