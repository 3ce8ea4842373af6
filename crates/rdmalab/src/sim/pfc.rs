//! PFC frames, sent and received by any node: a PAUSE or RESUME out of a port (queue 0,
//! ahead of all data), and one arriving that pauses or resumes the port's transmitter
//! (InfiniBand's flow-control packets take the same door, `mech/ib.rs`).

use super::Simulation;
use crate::fabric::{Packet, PacketKind};
use crate::ids::PortId;
use crate::stats::PfcEvent;

impl Simulation {
    /// Sends a PFC frame out of `port` (queue 0: ahead of all data); none crosses a
    /// failed link.
    pub(super) fn send_pfc(&mut self, port: PortId, kind: PacketKind, class: u8) {
        if self.ports[port.idx()].down {
            return;
        }
        let frame = Packet::pfc(kind, class, self.cfg.pfc_bytes);
        let st = &mut self.ports[port.idx()];
        if kind == PacketKind::Pause {
            st.counters.pause_sent += 1;
            self.counters.pauses += 1;
            if let Some(c) = st.classes.as_deref_mut() {
                c.stats[class as usize].pauses += 1;
            }
        } else {
            self.counters.resumes += 1;
        }
        st.enqueue(0, frame, &mut self.packets);
        if self.mech.pfc_pause.is_some() {
            self.pfc_pause_hook(port, class, kind == PacketKind::Pause, true);
        }
        self.switch_kick(port);
    }

    /// A PFC frame arrived at port `at`: pause or resume that port's transmitter.
    pub(super) fn on_pfc(&mut self, at: PortId, pkt: Packet) {
        if pkt.kind == PacketKind::FlowControl {
            let mech = &mut self.mech;
            let from = mech.actions.len();
            let ib = mech.ib.as_deref_mut().expect("flow control without IB state");
            super::mech::ib::on_flow_control(ib, &mut self.ports, self.now, at, &pkt, &mut mech.actions);
            return self.carry_out(from);
        }
        let pause = pkt.kind == PacketKind::Pause;
        if self.mech.pfc_watchdog.is_some() && !self.ports[at.idx()].on_host && self.pfc_watchdog_swallows(at, &pkt) {
            return;
        }
        if self.trace.is_some() {
            use super::trace::TraceEvent::{Pause, Resume};
            self.trace_event(if pause { Pause } else { Resume }, at, &pkt);
        }
        if self.mech.pfc_pause.is_some() {
            self.pfc_pause_hook(at, pkt.pg, pause, false);
        }
        let st = &mut self.ports[at.idx()];
        let q = pkt.pg as usize;
        let changed = st.paused[q] != pause;
        st.set_paused(q, pause, self.now);
        if changed && !st.on_host {
            self.watch.pause_changed(at, q, pause, self.now, self.cfg.deadlock_timeout);
        }
        let st = &mut self.ports[at.idx()];
        if pause {
            st.counters.pause_received += 1;
        }
        let node = st.node;
        self.pfc_events.push(PfcEvent {
            time: self.now,
            node,
            node_is_switch: !self.switch_of[node.idx()].is_none(),
            ifindex: self.topo.ports[at.idx()].ifindex,
            pause,
        });
        if !pause {
            self.kick(at);
        }
    }

    /// The pause time's hook (`mech::pfc_pause`) for a frame for `class` at `port`: `sent`
    /// by it (the refresh) or arrived at it (the expiry).
    #[cold]
    #[inline(never)]
    fn pfc_pause_hook(&mut self, port: PortId, class: u8, pause: bool, sent: bool) {
        use super::mech::pfc_pause::{on_frame, on_sent};
        let rate = self.topo.port_rate(port);
        let mech = &mut self.mech;
        let from = mech.actions.len();
        let p = mech.pfc_pause.as_deref_mut().expect("tested by the caller");
        let hook = if sent { on_sent } else { on_frame };
        hook(p, self.now, port, class, pause, rate, &mut mech.actions);
        self.carry_out(from);
    }

    /// A pause `at`'s transmitter obeyed for `class` ran out (`mech::pfc_pause`): it resumes
    /// as at a RESUME, but no frame arrived, so none is recorded.
    pub(in crate::sim) fn pause_expired(&mut self, at: PortId, class: u8) {
        let st = &mut self.ports[at.idx()];
        st.set_paused(class as usize, false, self.now);
        if !st.on_host {
            self.watch.pause_changed(at, class as usize, false, self.now, self.cfg.deadlock_timeout);
        }
        self.kick(at);
    }

    /// The PFC watchdog's hook for a frame at switch port `at`: true when it swallows it.
    #[cold]
    #[inline(never)]
    fn pfc_watchdog_swallows(&mut self, at: PortId, pkt: &Packet) -> bool {
        let mech = &mut self.mech;
        let from = mech.actions.len();
        let w = mech.pfc_watchdog.as_deref_mut().expect("tested by the caller");
        let pause = pkt.kind == PacketKind::Pause;
        let swallowed = super::mech::pfc_watchdog::on_frame(w, self.now, at, pkt.pg, pause, &mut mech.actions);
        self.carry_out(from);
        swallowed
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
