//! Links: a port's transmitter and the wire behind it. A packet is parked once in the
//! packet pool when it is first sent; each wire keeps the references of the packets on it in
//! arrival order and one pending `Arrive` event for its head. Losses on the link (its error
//! model, a failure) and in the network (no room, no route) are accounted here.

use crate::fabric::{Packet, PacketRef};
use crate::ids::PortId;
use crate::sim::{trace, Simulation};

impl Simulation {
    /// Puts `pkt` on the wire of `port`, which must be idle.
    #[inline]
    ///
    /// The `TxDone` event that ends the transmission takes its place in the event order now,
    /// but a switch port with nothing queued does not push it: it would only find the port
    /// empty. Such a port is still busy until `tx_end` (see `switch_kick`), and the first
    /// packet queued before then pushes the event with the reserved sequence number, so
    /// every event runs exactly where it would have run. About half the TxDone events of a
    /// fabric at moderate load are skipped this way. A host port's is pushed by the kick
    /// that started the packet, once the sending is done, unless its RNIC is quiet then
    /// (`nic_kick`): the same reservation, the same re-arming.
    pub(in crate::sim) fn transmit(&mut self, port: PortId, pkt: Packet) {
        let r = self.packets.park(pkt);
        self.transmit_parked(port, r);
    }

    /// `transmit` for the packet parked at `r`.
    #[inline(always)]
    pub(in crate::sim) fn transmit_parked(&mut self, port: PortId, r: PacketRef) {
        if self.trace.is_some() {
            let pkt = *self.packets.get(r);
            self.trace_event(trace::TraceEvent::Dequeue, port, &pkt);
        }
        let (wire, dst) = {
            let pkt = self.packets.get(r);
            (pkt.wire, pkt.dst)
        };
        let seq = self.queue.reserve_seq();
        let st = &mut self.ports[port.idx()];
        debug_assert!(!st.busy);
        let tx = self.clock.tx(st.rate_class, st.rate, wire);
        let done = self.now + tx;
        let arrival = done + st.delay;
        st.tx_bytes += wire as u64;
        st.tx_packets += 1;
        let was_empty = st.in_flight.is_empty();
        st.in_flight.push_back((arrival, r, dst));
        self.counters.packet_hops += 1;
        st.tx_end = (done, seq);
        if st.on_host {
            st.busy = true; // its TxDone is pushed, or skipped, by `nic_kick` (`host::tx`)
        } else if st.has_queued() {
            st.busy = true;
            self.schedule_switch_tx_done(port); // its event, or a dequeue that waits
        }
        if was_empty {
            self.push_arrive(arrival, port);
        }
    }

    /// Starts fetching what the next three events will read (hints: no effect on results),
    /// each a stage further as it comes closer. For an arrival: three events ahead, the
    /// line of its wire; two ahead, the line of the receiving switch's port that names the
    /// switch; next, the packet at the head of the wire, the wire's entry behind it, the
    /// receiving port's line a receive reads and the routing table's cell the switch looks
    /// up (its id and the packet's destination come from the lines fetched before). For a
    /// transmitter: two ahead, its port (flags and queues); next, its next packet and link.
    /// `on_arrive` also prefetches a wire's next packet, a packet time ahead: in a fabric
    /// of a thousand hosts that is thousands of events early, and the line may be gone
    /// again by the time it is read; a few events ahead, it comes in time.
    ///
    /// Only once the packets alive at one time have outgrown `PREFETCH_FROM_SLOTS` (the
    /// pool's slots: 4 MiB of packets): below that, what the next events read mostly sits
    /// in the caches already, and the hints cost some 50 instructions an event (S1, whose
    /// pool stays under it: 645 an event, 699 with them).
    #[inline(always)]
    pub(in crate::sim) fn prefetch_ahead(&self) {
        use crate::fabric::prefetch;
        use crate::sim::Event;
        const PREFETCH_FROM_SLOTS: usize = 1 << 16;
        if self.packets.slots() < PREFETCH_FROM_SLOTS {
            return;
        }
        if let Some(&Event::Arrive(p)) = self.queue.staged(2) {
            prefetch(&self.ports[p.idx()].in_flight);
        }
        match self.queue.staged(1) {
            Some(&Event::Arrive(p)) => {
                let st = &self.ports[p.idx()];
                prefetch(&st.in_flight); // in case it was not staged the round before
                if !st.peer_on_host {
                    prefetch(&self.ports[st.peer.idx()].node); // the switch, for its route
                }
            }
            Some(&Event::TxDone(p)) => {
                let st = &self.ports[p.idx()];
                prefetch(&st.in_flight);
                prefetch(&st.queues);
            }
            _ => {}
        }
        match self.queue.staged(0) {
            Some(&Event::Arrive(p)) => {
                let st = &self.ports[p.idx()];
                if let Some(&(_, r, dst)) = st.in_flight.front() {
                    self.packets.prefetch(r);
                    st.in_flight.prefetch_behind_head();
                    let peer = &self.ports[st.peer.idx()];
                    prefetch(&peer.in_flight);
                    if st.peer_on_host {
                        prefetch(&peer.rate);
                    } else if let Some(cell) = self.routes.first_cell(peer.node, dst) {
                        prefetch(cell); // `peer.node` is in the line fetched a round ago
                    }
                }
            }
            Some(&Event::TxDone(p)) => {
                if let Some(r) = self.ports[p.idx()].peek_next() {
                    self.packets.prefetch_head(r);
                }
            }
            _ => {}
        }
    }

    pub(in crate::sim) fn on_tx_done(&mut self, port: PortId) {
        self.ports[port.idx()].busy = false;
        self.kick(port);
    }

    /// Lets the transmitter of `port` send its next packet if it is idle.
    #[inline]
    pub(in crate::sim) fn kick(&mut self, port: PortId) {
        let st = &self.ports[port.idx()];
        if st.on_host {
            self.nic_kick(st.nic());
        } else {
            self.switch_kick(port);
        }
    }

    /// Link `l` fails or is repaired (`Event::LinkDown`, `LinkUp`): `mech::failures`'s hooks,
    /// then their actions.
    pub(in crate::sim) fn on_link_event(&mut self, l: crate::ids::LinkId, down: bool) {
        let from = self.mech.actions.len();
        let times = (self.now, self.cfg.reroute_delay);
        let mech = &mut self.mech;
        let out = &mut mech.actions;
        if down {
            super::mech::failures::link_down(&mut self.ports, &mut mech.failures, times, l, out);
        } else {
            let came_up = super::mech::failures::link_up(&mut self.ports, times, l, out);
            // Only when the link did come up; each end from its own node.
            if let (Some(ib), true) = (mech.ib.as_deref(), came_up) {
                for p in [2 * l.idx(), 2 * l.idx() + 1].map(crate::ids::PortId::new) {
                    if self.part.as_ref().is_none_or(|q| q.owns(self.topo.ports[p.idx()].node)) {
                        super::mech::ib::on_link_up(ib, p, out);
                    }
                }
            }
        }
        self.carry_out(from);
    }

    /// The control plane's new routes (`Event::Reroute`), then the QPs given up.
    pub(in crate::sim) fn on_reroute(&mut self) {
        let from = self.mech.actions.len();
        let fabric = (&mut self.routes, &self.topo, &self.ports[..]);
        let mech = &mut self.mech;
        super::mech::failures::reroute(fabric, &self.qps, &mut mech.failures, &mut mech.actions);
        self.carry_out(from);
    }

    /// The packets on the wire leaving `p` never arrive: its link failed (their `Arrive`
    /// event finds the wire empty, or a later packet not yet due, and does nothing).
    pub(in crate::sim) fn lose_wire(&mut self, p: PortId) {
        if self.trace.is_some() && self.part.is_some() {
            self.trace_cut_wire_lost(p);
        }
        while let Some((_, parked, _)) = self.ports[p.idx()].in_flight.pop_front() {
            let pkt = self.packets.take(parked);
            if let Some(ib) = self.mech.ib.as_deref_mut() {
                super::mech::ib::on_wire_lost(ib, p, &pkt);
            }
            self.lose(p, &pkt);
        }
        if let Some(ib) = self.mech.ib.as_deref_mut() {
            super::mech::ib::restall(ib, &mut self.ports, self.now, p);
        }
    }

    /// Accounts a packet lost to a link failure.
    pub(in crate::sim) fn lose(&mut self, p: PortId, pkt: &Packet) {
        self.counters.link_down_losses += 1;
        self.drop_packet(p, pkt);
    }

    pub(in crate::sim) fn on_arrive(&mut self, port: PortId) {
        let st = &mut self.ports[port.idx()];
        // A wire emptied by a link failure leaves its `Arrive` event behind: it finds the
        // wire empty, or a packet sent after the repair that is not due yet.
        let Some(&(due, parked, dst)) = st.in_flight.front() else {
            return;
        };
        if due != self.now {
            return;
        }
        st.in_flight.pop_front();
        let next = st.in_flight.front().map(|&(next, next_pkt, _)| (next, next_pkt));
        let (at, to_host, lossy) = (st.peer, st.peer_on_host, st.peer_lossy);
        if let Some((next, next_pkt)) = next {
            self.packets.prefetch(next_pkt); // that arrival reads it, a packet time from now
            self.push_arrive(next, port);
        }
        if lossy && self.arrival_hook(at, parked) {
            self.counters.link_error_losses += 1;
            let pkt = self.packets.take(parked);
            self.counters.pause_frames_lost += u64::from(pkt.kind == crate::fabric::PacketKind::Pause);
            self.drop_packet(at, &pkt);
            return;
        }
        if self.packets.get(parked).is_pfc() {
            let pkt = self.packets.take(parked);
            self.on_pfc(at, pkt);
        } else if to_host {
            let pkt = self.packets.take(parked);
            self.host_receive(pkt);
        } else {
            self.switch_receive(at, parked, dst); // stays parked: a switch moves only the reference
        }
    }

    /// The out-of-line part of an arrival at `at`, for ports marked `peer_lossy`: the
    /// link's error model, then InfiniBand's input buffer (`mech::ib`). True if the packet
    /// is lost on the link.
    #[cold]
    #[inline(never)]
    fn arrival_hook(&mut self, at: PortId, parked: PacketRef) -> bool {
        let lost = self.lost_on_link(at);
        let mech = &mut self.mech;
        if let Some(ib) = mech.ib.as_deref_mut() {
            let from = mech.actions.len();
            super::mech::ib::on_arrive(ib, &self.ports, at, self.packets.get(parked), lost, &mut mech.actions);
            self.carry_out(from);
        }
        lost
    }

    /// The link's error model: true if the packet arriving at `at` is corrupted.
    #[inline]
    pub(in crate::sim) fn lost_on_link(&mut self, at: PortId) -> bool {
        use crate::engine::rng::RngExt;
        match &mut self.mech.error_rngs[at.idx()] {
            None => false,
            Some(rng) => {
                let link = self.topo.ports[at.idx()].link;
                rng.gen::<f64>() < self.topo.links[link.idx()].error_rate
            }
        }
    }

    /// Accounts a packet lost in the network (buffer overflow, link error or failure, no
    /// route).
    pub(in crate::sim) fn drop_packet(&mut self, at: PortId, pkt: &Packet) {
        if self.trace.is_some() {
            self.trace_event(trace::TraceEvent::Drop, at, pkt);
        }
        self.counters.drops += 1;
        self.ports[at.idx()].counters.drops += 1;
        if matches!(
            pkt.kind,
            crate::fabric::PacketKind::Data | crate::fabric::PacketKind::Ack | crate::fabric::PacketKind::Nack
        ) {
            // Only the sender's partition has the QP's count (a parallel run reuses no slot,
            // so the others need none); the run's count of live QPs learns of a drop
            // elsewhere from the partition's log (`sim::parallel::peak`).
            if self.holds_sender_of(pkt) {
                self.qps[pkt.qp.idx()].in_flight = self.qps[pkt.qp.idx()].in_flight.wrapping_sub(1);
                self.hint_quiet_after_drop(pkt.qp);
                self.release_if_quiet(pkt.qp);
            } else {
                if self.shares_slot(pkt.qp) {
                    // Partitions' counts of a setup QP sum to its packets in the network (a
                    // stall's cause names them; `sim::parallel::stall`).
                    self.qps[pkt.qp.idx()].in_flight = self.qps[pkt.qp.idx()].in_flight.wrapping_sub(1);
                }
                self.log_left_network(pkt);
            }
        }
        if pkt.kind == crate::fabric::PacketKind::Data {
            self.counters.payload_bytes_dropped += pkt.payload as u64;
        }
        if pkt.int_slot != crate::fabric::packet::NO_INT {
            self.int.release(pkt.int_slot);
        }
    }
}
