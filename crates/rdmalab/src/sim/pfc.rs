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
