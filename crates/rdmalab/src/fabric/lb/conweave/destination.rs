//! ConWeave's destination ToR: per data packet whether it goes on, waits in a reorder queue
//! or releases one; the replies it sends back; the queues and their occupancy.

use super::causes::{DEADLINE, EPOCH_HELD, MOVED, OTHER, UNHELD};
use super::flow_table::{Claim, TableKind};
use super::header::{after, control, stamp_gap, Header, CLEAR, EPOCH_MASK, INIT, NOTIFY, RTT_REPLY, TAIL};
use super::{data_key, ConWeave, FlushTimer, ReorderRow, RxAction, RxEntry, Tally, NONE, RX_EMPTY};
use crate::fabric::{Packet, PacketRef};
use crate::ids::{NodeId, PortId};
use crate::units::Time;

impl ConWeave {
    /// The destination ToR's rule for data packet `pkt` arriving at `node` for host port
    /// `egress`: what to do with it, the control packets to send back (into `outbox`), the
    /// flush timer to set. Clears the header.
    pub fn destination(
        &mut self,
        now: Time,
        node: NodeId,
        egress: PortId,
        pkt: &mut Packet,
        timer: &mut Option<FlushTimer>,
        tally: &mut Tally,
    ) -> RxAction {
        let h = Header::read(pkt);
        let ts = h.ts;
        pkt.int_hops = 0;
        pkt.deflections = 0;
        if h.flag == 0 {
            return RxAction::Forward;
        }
        let leaf = self.leaf_of[node.idx()] as usize;
        let p = self.p;
        let Some(i) = self.rx_entry(now, leaf, pkt, h.epoch, tally) else {
            return RxAction::Forward;
        };
        // A REROUTED packet follows packets of its flow on the old path, which passed here
        // tracked unless the direct table left them out (their slot another flow's).
        let behind = h.phase == 1 && self.rx.kind() == TableKind::Exact;
        let e = &mut self.rx[i];
        e.active = now;
        let new_epoch = after(h.epoch, e.epoch);
        e.seen.on_tag(h.tag, new_epoch, behind);
        if !new_epoch && h.epoch != e.epoch {
            e.seen.forward(pkt.seq, pkt.payload, OTHER, &mut self.causes);
            return RxAction::Forward; // an earlier epoch's straggler
        }
        let epoch_held = new_epoch && e.queue != NONE;
        if new_epoch {
            e.epoch = h.epoch;
        }
        if h.phase == 0 {
            e.phase0_tx = ts;
            e.phase0_rx = now;
        }
        let mut out_of_order = false;
        if new_epoch {
            e.phase = if h.flag == TAIL { 1 } else { 0 };
            out_of_order = h.phase > e.phase;
            e.phase0 = h.phase == 0;
        } else {
            if h.flag == TAIL {
                if e.queue == NONE {
                    e.phase = 1;
                }
            } else if e.phase < h.phase {
                out_of_order = true;
            }
            if h.phase == 0 {
                e.phase0 = true;
            }
        }
        if h.flag == TAIL || h.phase == 1 {
            e.tail = ts;
        }
        // When the old path's TAIL is expected: the send-time gap between the last phase-0
        // packet and the TAIL, added to that packet's arrival, plus a margin.
        let gap = if e.phase0 { stamp_gap(e.tail, e.phase0_tx) } else { Time::from_ns(p.default_wait) };
        let extra = Time::from_ns(p.flush_extra);
        let deadline = if h.phase == 1 {
            if e.phase0 {
                e.phase0_rx + gap + extra
            } else {
                now + gap + extra
            }
        } else if h.flag == TAIL {
            now
        } else {
            now + gap + extra
        };
        let mut action = RxAction::Forward;
        if h.phase == 0 {
            if e.queue != NONE {
                let q = e.queue;
                if h.flag == TAIL {
                    action = RxAction::ForwardThenRelease(q);
                } else {
                    let g = &mut self.queue[q as usize].generation;
                    *g = g.wrapping_add(1);
                    *timer = Some(FlushTimer { queue: q, generation: *g, at: deadline });
                }
            }
        } else if out_of_order {
            if e.queue == NONE {
                match self.free_queue(egress) {
                    Some(q) => {
                        self.rx[i].queue = q;
                        let rq = &mut self.queue[q as usize];
                        rq.owner = i as u32;
                        rq.generation = rq.generation.wrapping_add(1);
                        *timer = Some(FlushTimer { queue: q, generation: rq.generation, at: deadline });
                        self.held[leaf].queues += 1;
                    }
                    None => tally.unheld += 1,
                }
            }
            if self.rx[i].queue != NONE {
                action = RxAction::Hold(self.rx[i].queue);
            }
        }
        // Why this packet, sent on now, would open a gap at the host (`causes.rs`).
        let e = &mut self.rx[i];
        let cause = if out_of_order {
            UNHELD
        } else if epoch_held {
            EPOCH_HELD
        } else if e.seen.moved && h.phase == 0 {
            MOVED
        } else {
            OTHER
        };
        match action {
            RxAction::Hold(q) => self.queue[q as usize].seqs.push_back((pkt.seq, pkt.payload)),
            RxAction::Forward => e.seen.forward(pkt.seq, pkt.payload, cause, &mut self.causes),
            RxAction::ForwardThenRelease(q) => {
                e.seen.forward(pkt.seq, pkt.payload, cause, &mut self.causes);
                self.queue[q as usize].by_tail = true;
            }
        }
        let (src, out) = (pkt, &mut self.outbox);
        if src.ce {
            out.push(control(src, Header { flag: NOTIFY, tag: h.tag, ..Header::default() }));
        }
        if h.flag == INIT {
            out.push(control(src, Header { flag: RTT_REPLY, tag: h.tag, epoch: h.epoch, ..Header::default() }));
        } else if h.flag == TAIL {
            out.push(control(src, Header { flag: CLEAR, phase: 1, tag: h.tag, epoch: h.epoch, ts: 0 }));
        }
        tally.control += out.len() as u64;
        action
    }

    /// The index of the Rx entry of `pkt`'s flow at leaf `leaf`, made if new (in the epoch
    /// before `epoch`, so that the packet opens one); `None` when the flow is not tracked.
    fn rx_entry(&mut self, now: Time, leaf: usize, pkt: &Packet, epoch: u8, tally: &mut Tally) -> Option<usize> {
        let hash = data_key(pkt.sip, pkt.dip, pkt.sport, pkt.dport);
        let key = self.rx.key(hash, pkt.sip, pkt.dip, pkt.sport, pkt.dport);
        let expiry = self.p.tx_expiry.ps();
        // Free: idle past the expiry with no reorder queue (a queue's packets need it).
        let dead = |e: &RxEntry| e.queue == NONE && now.ps().saturating_sub(e.active.ps()) > expiry;
        let init = RxEntry { epoch: epoch.wrapping_sub(1) & EPOCH_MASK, ..RX_EMPTY };
        // A reorder queue names its entry's index: it follows the entry when deletion moves it.
        let queues = &mut self.queue;
        let moved = |e: &RxEntry, to: usize| {
            if e.queue != NONE {
                queues[e.queue as usize].owner = to as u32;
            }
        };
        match self.rx.claim(leaf, key, hash, dead, init, moved) {
            Claim::Found(i) | Claim::New(i) => Some(i),
            Claim::Busy => {
                tally.untracked += 1;
                tally.table_full += u64::from(self.rx.kind() == TableKind::Exact);
                None
            }
        }
    }

    /// A free reorder queue of host port `egress`.
    fn free_queue(&self, egress: PortId) -> Option<u32> {
        let first = self.first_queue[egress.idx()];
        if first == NONE {
            return None;
        }
        (first..first + self.p.queues as u32).find(|&q| self.queue[q as usize].owner == NONE)
    }

    /// Holds the admitted packet `r` (`wire` bytes, admitted in `class`) in queue `q`.
    pub fn hold(&mut self, now: Time, q: u32, r: PacketRef, class: u8, wire: u32) {
        let rq = &mut self.queue[q as usize];
        rq.packets.push_back((r, class, wire));
        rq.bytes += wire as u64;
        let leaf = self.queue_leaf[q as usize] as usize;
        let o = &mut self.held[leaf];
        o.packets += 1;
        o.bytes += wire as u64;
        self.note(now, leaf);
    }

    /// Whether timer (`q`, `generation`) still stands.
    pub fn timer_live(&self, q: u32, generation: u32) -> bool {
        let rq = &self.queue[q as usize];
        rq.owner != NONE && rq.generation == generation
    }

    /// Empties queue `q` (its flow's entry back to phase 1, not reordering), its packets
    /// into `released` in arrival order; its port.
    pub fn release(&mut self, now: Time, q: u32, released: &mut Vec<(PacketRef, u8, u32)>) -> PortId {
        let rq = &mut self.queue[q as usize];
        let owner = rq.owner as usize;
        rq.owner = NONE;
        rq.generation = rq.generation.wrapping_add(1);
        released.extend(rq.packets.drain(..));
        let bytes = std::mem::take(&mut rq.bytes);
        let e = &mut self.rx[owner];
        // The exact table moves entries (`rx_entry` follows each move): a queue and its
        // entry must still name each other.
        assert_eq!(e.queue, q, "reorder queue {q} lost its flow entry");
        let cause = if std::mem::take(&mut rq.by_tail) { OTHER } else { DEADLINE };
        for (seq, payload) in rq.seqs.drain(..) {
            e.seen.forward(seq, payload, cause, &mut self.causes);
        }
        e.queue = NONE;
        e.phase = 1;
        let port = self.queue_port[q as usize];
        let leaf = self.queue_leaf[q as usize] as usize;
        let o = &mut self.held[leaf];
        o.queues -= 1;
        o.packets -= released.len() as u64;
        o.bytes -= bytes;
        self.note(now, leaf);
        port
    }

    /// Payload bytes of the data packets held now.
    pub fn held_payload(&self, pool: &crate::fabric::PacketPool) -> u64 {
        self.queue.iter().flat_map(|q| q.packets.iter()).map(|&(r, _, _)| pool.get(r).payload as u64).sum()
    }

    /// The host port of queue `q` (its timer runs at that port's switch).
    pub fn queue_port(&self, q: u32) -> PortId {
        self.queue_port[q as usize]
    }

    /// Occupancy of `leaf` changed at `now`: the open window's peaks, a row per window
    /// closed.
    fn note(&mut self, now: Time, leaf: usize) {
        let w = now.ps() / self.window.ps();
        let o = &mut self.held[leaf];
        if w != o.window {
            if o.peak != (0, 0, 0) {
                let (queues, packets, bytes) = o.peak;
                let window_start = Time::from_ps(o.window * self.window.ps());
                self.rows.push(ReorderRow { window_start, switch: self.leaf_node[leaf], queues, packets, bytes });
            }
            o.window = w;
            o.peak = (0, 0, 0);
        }
        o.peak = (o.peak.0.max(o.queues), o.peak.1.max(o.packets), o.peak.2.max(o.bytes));
    }

    /// The reorder-occupancy rows so far, open windows included, by (window, switch).
    pub fn rows(&self) -> Vec<ReorderRow> {
        let mut rows = self.rows.clone();
        for (leaf, o) in self.held.iter().enumerate() {
            if o.peak != (0, 0, 0) {
                let (queues, packets, bytes) = o.peak;
                let window_start = Time::from_ps(o.window * self.window.ps());
                rows.push(ReorderRow { window_start, switch: self.leaf_node[leaf], queues, packets, bytes });
            }
        }
        rows.sort_by_key(|r| (r.window_start, r.switch));
        rows
    }
}
