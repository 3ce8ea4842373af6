//! In-band network telemetry (INT) for HPCC, and TIMELY's echoed send timestamp.
//!
//! Switches stamp, at dequeue, one hop record per switch into the data packet; the receiver
//! copies the header into the ACK. Headers live in a slab so that `Packet` stays small;
//! a packet carries only its slot index. A slot is taken when a data packet is built and
//! returned when its ACK has been processed (or the packet is dropped), so the slab's size
//! follows the number of packets in flight and nothing is allocated per packet once warm.

/// Hop slots in one header (the reference's `maxHop`).
pub const MAX_HOPS: usize = 5;

/// One hop's record, with the reference's field widths applied at stamping time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Egress line rate in bit/s.
    pub line_rate: u64,
    /// Dequeue time in ns, modulo 2^24.
    pub time_ns: u32,
    /// Bytes the port had sent before this packet, in units of `128 * int_multi`, mod 2^20.
    pub tx_bytes: u32,
    /// Bytes queued on the port after removing this packet, in units of `80 * int_multi`,
    /// mod 2^17.
    pub qlen: u32,
}

/// The whole INT header of one packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHeader {
    /// Hops stamped so far (may exceed `MAX_HOPS`; slot `nhop % MAX_HOPS` is written).
    pub nhop: u16,
    /// The records.
    pub hops: [IntHop; MAX_HOPS],
    /// When the sender's NIC put the data packet on the wire (TIMELY's 8-byte timestamp,
    /// stamped by the `SeqTsHeader` the reference's `RdmaHw::GetNxtPacket` builds); the ACK
    /// echoes it.
    pub sent_at: crate::units::Time,
}

impl IntHeader {
    /// Appends a hop record.
    #[inline]
    pub fn push(&mut self, hop: IntHop) {
        self.put(self.nhop, hop);
        self.nhop += 1;
    }

    /// Writes the record of hop number `n` (counted from 0) without touching `nhop`: the
    /// packet counts its hops (`Packet::int_hops`) and the receiver sets `nhop`.
    #[inline]
    pub fn put(&mut self, n: u16, hop: IntHop) {
        self.hops[n as usize % MAX_HOPS] = hop;
    }
}

/// A slab of INT headers with a free list.
#[derive(Debug, Default)]
pub struct IntSlab {
    headers: Vec<IntHeader>,
    free: Vec<u32>,
}

impl IntSlab {
    /// Takes a cleared slot.
    #[inline]
    pub fn alloc(&mut self) -> u32 {
        if let Some(slot) = self.free.pop() {
            // Readers stop at `nhop`: clearing the count and the timestamp is a reset,
            // without rewriting the 120 bytes of stale hop records.
            let h = &mut self.headers[slot as usize];
            h.nhop = 0;
            h.sent_at = crate::units::Time::ZERO;
            slot
        } else {
            self.headers.push(IntHeader::default());
            (self.headers.len() - 1) as u32
        }
    }
    /// Returns a slot.
    #[inline]
    pub fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }
    /// The header in `slot`.
    #[inline]
    pub fn get(&self, slot: u32) -> &IntHeader {
        &self.headers[slot as usize]
    }
    /// The header in `slot`, mutable.
    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> &mut IntHeader {
        &mut self.headers[slot as usize]
    }
    /// Slots in use.
    pub fn in_use(&self) -> usize {
        self.headers.len() - self.free.len()
    }
}
