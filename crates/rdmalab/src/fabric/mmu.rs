//! Shared-buffer switch MMU with ingress accounting, PFC thresholds and headroom.
//!
//! The rules are the reference simulator's (`SwitchMmu` in
//! `simulation/src/point-to-point/model/switch-mmu.cc`, driven by `SwitchNode` in
//! `switch-node.cc`): every (ingress port, class) owns a small
//! reserve; above it a packet takes shared buffer while the class stays under the dynamic
//! threshold `Th = (buffer - headroom - reserves - shared_used) >> shift`, and headroom once
//! it is over. A class that reaches the threshold, or needs headroom, pauses its upstream
//! (PFC); it resumes when its headroom is empty and its shared use has fallen
//! `resume_offset` below the threshold. In lossy mode the same threshold drops instead.
//!
//! Queue 0 (PFC frames, and ACKs when they have high priority) bypasses the MMU.
//!
//! With `[[fabric.classes]]`, PFC is a per-class choice: a class without it is admitted by
//! the same rules as a lossy fabric's (reserve, then shared buffer under the dynamic
//! threshold, then a drop; never headroom), while the other classes of the same port pause.
//! Both draw on one shared pool, so a lossy class's backlog lowers the lossless classes'
//! threshold and the other way round.

use crate::fabric::NUM_PRIOS;
use crate::units::Rate;

mod m4;
pub use m4::{m4_headroom, M4Pools};

/// Which rules a switch's buffer follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MmuRule {
    /// The reference simulator's (this module's doc).
    #[default]
    Reference,
    /// The m4 fork's SONiC-style ingress pool (`m4.rs`): no reserves, a headroom per port
    /// and lossless class capped at 80 % of the buffer in total, the PFC threshold the
    /// pool's remaining bytes (alpha 1); `payload` is the packet payload size its headroom
    /// formula takes.
    M4 {
        /// `PACKET_PAYLOAD_SIZE`.
        payload: u32,
    },
}

/// Buffer parameters of one switch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmuConfig {
    /// Shared buffer in bytes (the reference: BUFFER_SIZE MB × 2^20).
    pub buffer: u64,
    /// Reserve per (port, class) in bytes (4 KiB in the reference).
    pub reserve: u64,
    /// Hysteresis below the threshold before RESUME, bytes (3 KiB).
    pub resume_offset: u64,
    /// PFC on (lossless). Off: the threshold drops packets instead of pausing.
    pub lossless: bool,
    /// Per-class PFC (`[[fabric.classes]]`): bit `q` set, class `q` is lossless; replaces
    /// `lossless` when given.
    pub pfc_classes: Option<u8>,
    /// The hosts' NIC rate: ports faster than it get a smaller threshold shift.
    pub nic_rate: Rate,
    /// Bytes that reach a port after its PAUSE is decided besides the link's round-trip
    /// flight: the frame whose admission crossed the threshold, the largest frame this
    /// port's egress may be sending when the PAUSE is decided, the one the upstream finishes
    /// after it arrives, and the PAUSE frame itself (`headroom_needed`).
    pub serialisation: u64,
    /// Headroom of every port in bytes, in place of the derived one (`fabric.pfc_headroom_kb`).
    pub headroom: Option<u64>,
    /// The buffer's rules.
    pub rule: MmuRule,
}

impl Default for MmuConfig {
    fn default() -> Self {
        MmuConfig {
            buffer: 32 * 1024 * 1024,
            reserve: 4096,
            resume_offset: 3072,
            lossless: true,
            pfc_classes: None,
            nic_rate: Rate::gbps(100),
            serialisation: 3 * 1048 + 64,
            headroom: None,
            rule: MmuRule::Reference,
        }
    }
}

/// Outcome of admitting a packet at ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Accepted; `pause` asks the caller to send PAUSE for this class upstream.
    Accept {
        /// Send a PAUSE frame upstream.
        pause: bool,
    },
    /// No room: drop the packet.
    Drop,
}

/// Buffer state of one switch. Ports are indexed by their position on the switch.
///
/// Laid out by hand (`repr(C)`): what admitting and releasing a packet read of the switch
/// (the pool, its use, the reserve, where the records are) fills the first cache line, and
/// the configuration follows. In Rust's own order they fell on two lines, read at every hop.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct SwitchMmu {
    /// The buffer less every port's headroom and reserve (at least 0): what the shared
    /// pool can hold.
    pool: u64,
    shared_used: u64,
    /// A copy of `cfg.reserve` (the configuration never changes after `with_records`),
    /// so that admission reads it from this line.
    reserve: u64,
    /// Per ingress port and class seen, everything admission touches, together: one cache
    /// line per packet instead of one per field (this is on every switch hop). Port `p`'s
    /// record of class `q` is `acct[p * stride + slot[q]]`. A class gets its records when
    /// its first packet arrives (`add_class`): a run whose packets use two classes keeps
    /// two records a port, not eight (at a million hosts, 0.9 GB less).
    acct: Vec<ClassAcct>,
    /// Per class, its place in each port's run of records in `acct` (`NO_SLOT`: no packet
    /// of the class has reached the switch yet, and the class has no record).
    slot: [u8; NUM_PRIOS],
    /// Records per port: the classes seen so far.
    stride: u8,
    /// The classes with PFC, one bit each.
    pfc: u8,
    // --- the second line on
    cfg: MmuConfig,
    /// Per ingress port, what a class's record starts with.
    params: Vec<PortParams>,
    /// The m4 fork's pools under `MmuRule::M4` (then `pool` is its ingress pool and
    /// `shared_used` every byte not in headroom).
    m4: Option<M4Pools>,
}

/// `SwitchMmu::slot` of a class without records.
const NO_SLOT: u8 = u8::MAX;

/// An ingress port's own parameters, copied into each of its class records so that
/// admitting a packet reads one 32-byte record.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PortParams {
    /// PFC headroom, bytes.
    headroom: u64,
    /// Threshold shift.
    shift: u32,
}

/// Accounting of one (ingress port, class). 32 bytes, 32-aligned: never across a line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(32))]
struct ClassAcct {
    /// Bytes held in reserve and shared buffer.
    ingress: u64,
    /// Bytes held in headroom.
    hdrm: u64,
    /// PFC headroom of the port, bytes (the same in every class of the port).
    headroom: u64,
    /// Threshold shift of the port (faster ports get a smaller share).
    shift: u32,
    /// This class has paused its upstream.
    paused: bool,
    /// PFC on for the class (kept here, beside what admission reads anyway, rather than
    /// in the config: no extra load per packet).
    pfc: bool,
}

impl SwitchMmu {
    /// Bytes its per-port accounting holds (memory estimates).
    pub fn heap_bytes(&self) -> usize {
        self.acct.capacity() * std::mem::size_of::<ClassAcct>()
            + self.params.capacity() * std::mem::size_of::<PortParams>()
    }

    /// A switch's buffer state from its ports' parameters and, per port, its class records
    /// in class order (all `NUM_PRIOS` of them, or none: then each class gets its records
    /// when its first packet arrives).
    fn with_records(cfg: MmuConfig, pool: u64, pfc: u8, params: Vec<PortParams>, acct: Vec<ClassAcct>) -> SwitchMmu {
        let all = !acct.is_empty();
        debug_assert!(!all || acct.len() == params.len() * NUM_PRIOS);
        let slot = if all { std::array::from_fn(|q| q as u8) } else { [NO_SLOT; NUM_PRIOS] };
        let stride = if all { NUM_PRIOS as u8 } else { 0 };
        SwitchMmu { pool, shared_used: 0, reserve: cfg.reserve, acct, slot, stride, pfc, cfg, params, m4: None }
    }

    /// Index in `acct` of port `p`'s record of class `q`, giving the class its records
    /// first if it has none. Always inlined: admission and release run it on every hop.
    #[inline(always)]
    fn index(&mut self, p: usize, q: usize) -> usize {
        let mut s = self.slot[q];
        if s == NO_SLOT {
            s = self.add_class(q);
        }
        p * self.stride as usize + s as usize
    }

    /// Gives class `q` a record on every port (each port's parameters, nothing held) at
    /// the end of each port's run; returns its slot. Once per class and switch.
    #[cold]
    #[inline(never)]
    fn add_class(&mut self, q: usize) -> u8 {
        let (old, s) = (self.stride as usize, self.stride);
        let fresh = |p: &PortParams| ClassAcct {
            headroom: p.headroom,
            shift: p.shift,
            pfc: self.pfc & (1 << q) != 0,
            ..ClassAcct::default()
        };
        let mut acct = Vec::with_capacity(self.params.len() * (old + 1));
        for (p, params) in self.params.iter().enumerate() {
            acct.extend_from_slice(&self.acct[p * old..(p + 1) * old]);
            acct.push(fresh(params));
        }
        self.acct = acct;
        self.stride += 1;
        self.slot[q] = s;
        s
    }

    /// Port `p`'s record of class `q` (a fresh one where the class has no records yet).
    #[inline]
    fn record(&self, p: usize, q: usize) -> ClassAcct {
        match self.slot[q] {
            NO_SLOT => ClassAcct {
                headroom: self.params[p].headroom,
                shift: self.params[p].shift,
                pfc: self.pfc & (1 << q) != 0,
                ..ClassAcct::default()
            },
            s => self.acct[p * self.stride as usize + s as usize],
        }
    }

    /// A switch whose ports have the given (rate, propagation delay in ns) links.
    pub fn new(cfg: MmuConfig, ports: &[(Rate, u64)]) -> SwitchMmu {
        if let MmuRule::M4 { payload } = cfg.rule {
            return m4::new(cfg, payload, ports);
        }
        // Headroom: three times the bytes in flight on the link during one propagation
        // delay (the reference's rule), but at least what can arrive after the PAUSE is
        // decided (`headroom_needed`). The reference's rule holds that whenever one delay's
        // flight exceeds three frames and the PAUSE (100 Gb/s, 1 µs, 1 KB frames: 12.5 KB);
        // on slow or short links, or with large frames, it does not (10 Gb/s and 1 µs:
        // 3.75 KB against 5.7 KB; 9 KB frames at 100 Gb/s and 1 µs: 37.5 KB against 52.2 KB).
        let pfc = cfg.pfc_classes.unwrap_or(if cfg.lossless { u8::MAX } else { 0 });
        // Ports alike (a fat tree's, all of them) share one record, computed once: the two
        // 128-bit divisions per port add up at five million switch ports.
        let mut last: Option<((Rate, u64), PortParams)> = None;
        let params: Vec<PortParams> = ports
            .iter()
            .map(|&(rate, delay_ns)| {
                if let Some((key, port)) = last {
                    if key == (rate, delay_ns) {
                        return port;
                    }
                }
                let flight = (rate.0 as u128 * delay_ns as u128 / 8 / 1_000_000_000) as u64;
                // A port without PFC never takes headroom; it keeps the reference's
                // reservation so that lossy buffers (and the sizes fitted to them) stay put.
                let floor = if pfc == 0 { 0 } else { headroom_needed(rate, delay_ns, cfg.serialisation) };
                let headroom = cfg.headroom.unwrap_or((3 * flight).max(floor));
                let shift = threshold_shift(rate, cfg.nic_rate);
                let port = PortParams { headroom, shift };
                last = Some(((rate, delay_ns), port));
                port
            })
            .collect();
        let total_hdrm: u64 = params.iter().map(|p| p.headroom).sum();
        // As in the reference: one reserve per port, although each (port, class) has one.
        let total_rsrv = params.len() as u64 * cfg.reserve;
        let pool = cfg.buffer.saturating_sub(total_hdrm + total_rsrv);
        SwitchMmu::with_records(cfg, pool, pfc, params, Vec::new())
    }

    /// The dynamic PFC (or drop) threshold of ingress port `p`.
    #[inline]
    pub fn threshold(&self, p: usize) -> u64 {
        self.threshold_of(p, 0)
    }

    /// `threshold(p)`, read from class `q`'s record (the one admission touches anyway).
    #[inline(always)]
    fn threshold_of(&self, p: usize, q: usize) -> u64 {
        self.pool.saturating_sub(self.shared_used) >> self.record(p, q).shift
    }

    #[cfg(test)]
    fn shared_of(&self, p: usize, q: usize) -> u64 {
        self.record(p, q).ingress.saturating_sub(self.reserve)
    }

    /// Admits `size` bytes arriving on ingress port `p`, class `q` (q != 0). Always inlined:
    /// it runs on every switch hop.
    #[inline(always)]
    pub fn admit(&mut self, p: usize, q: usize, size: u64) -> Admission {
        if self.m4.is_some() {
            return self.admit_m4(p, q, size);
        }
        self.admit_shared(p, q, size)
    }

    /// Whether the switch runs the m4 fork's pools: its ports then take the switch's
    /// out-of-line (`special`) path, so that the common path's `admit_shared` and
    /// `release_shared` need not test for them on every hop.
    pub fn is_m4(&self) -> bool {
        self.m4.is_some()
    }

    /// `admit` for a switch known not to run the m4 pools (`is_m4` false).
    #[inline(always)]
    pub fn admit_shared(&mut self, p: usize, q: usize, size: u64) -> Admission {
        debug_assert!(self.m4.is_none(), "an m4 switch on the common path");
        let (reserve, fixed) = (self.reserve, self.pool);
        let mut shared_used = self.shared_used;
        let i = self.index(p, q);
        let c = &mut self.acct[i];
        let th = fixed.saturating_sub(shared_used) >> c.shift;
        let n = c.ingress + size;
        let over = n > reserve && n - reserve > th;
        let lossless = c.pfc;
        if !lossless {
            if over {
                return Admission::Drop;
            }
        } else if size + c.hdrm > c.headroom && size + c.ingress.saturating_sub(reserve) > th {
            return Admission::Drop;
        }
        if n <= reserve {
            c.ingress = n;
        } else if over {
            c.hdrm += size;
        } else {
            shared_used += size.min(n - reserve);
            c.ingress = n;
        }
        let th = fixed.saturating_sub(shared_used) >> c.shift;
        let pause = lossless && !c.paused && (c.hdrm > 0 || c.ingress.saturating_sub(reserve) >= th);
        if pause {
            c.paused = true;
        }
        self.shared_used = shared_used;
        Admission::Accept { pause }
    }

    /// Whether `size` more bytes on (p, q) would go over the dynamic threshold: into
    /// headroom in a lossless class, dropped in a lossy one (`admit`'s rule, without
    /// admitting). For a holder that can wait instead (IOFD's re-sequencer): headroom is
    /// kept for what upstream sends after a PAUSE, so a packet that was already in the
    /// switch must not take it. Kept apart from `admit` so that the hot path stays as it
    /// is; `over_threshold_as_admit_decides` checks that the two agree.
    pub fn over_threshold(&self, p: usize, q: usize, size: u64) -> bool {
        let n = self.record(p, q).ingress + size;
        n > self.reserve && n - self.reserve > self.threshold(p)
    }

    /// The PFC headroom of ingress port `p`, bytes (per-port buffers keep the same).
    pub fn headroom(&self, p: usize) -> u64 {
        self.params[p].headroom
    }

    /// Whether class `q` has PFC (the same on every port).
    pub fn lossless(&self, q: usize) -> bool {
        !self.params.is_empty() && self.pfc & (1 << q) != 0
    }

    /// Releases `size` bytes of ingress (p, q) when the packet leaves the switch.
    /// Returns true when the caller should send RESUME for (p, q) upstream.
    #[inline]
    pub fn release(&mut self, p: usize, q: usize, size: u64) -> bool {
        if self.m4.is_some() {
            return self.release_m4(p, q, size);
        }
        self.release_shared(p, q, size)
    }

    /// True when admitting `size` bytes of class `q` on ingress port `p` and releasing them
    /// at once (a packet sent as it arrives) would leave every count as it found it: the
    /// packet is neither dropped nor put in headroom, sends no PAUSE, and its release sends
    /// no RESUME (the record holds no headroom and has not paused). Reads only; false for a
    /// class without records yet. The same arithmetic as `admit_shared`, then
    /// `release_shared`, which give back exactly what was taken in these cases.
    #[inline(always)]
    pub fn passes(&self, p: usize, q: usize, size: u64) -> bool {
        debug_assert!(self.m4.is_none(), "an m4 switch on the common path");
        let s = self.slot[q];
        if s == NO_SLOT {
            return false;
        }
        let c = &self.acct[p * self.stride as usize + s as usize];
        if c.hdrm != 0 || c.paused {
            return false;
        }
        let (reserve, fixed) = (self.reserve, self.pool);
        let th = fixed.saturating_sub(self.shared_used) >> c.shift;
        let n = c.ingress + size;
        if n > reserve && n - reserve > th {
            return false; // dropped, or admitted into headroom
        }
        if !c.pfc {
            return true;
        }
        if size > c.headroom && size + c.ingress.saturating_sub(reserve) > th {
            return false; // dropped
        }
        let shared_used = if n <= reserve { self.shared_used } else { self.shared_used + size.min(n - reserve) };
        n.saturating_sub(reserve) < fixed.saturating_sub(shared_used) >> c.shift
    }

    /// `release` for a switch known not to run the m4 pools (`is_m4` false). Always
    /// inlined, as `admit_shared` is: a call on every switch hop cost more than its body.
    #[inline(always)]
    pub fn release_shared(&mut self, p: usize, q: usize, size: u64) -> bool {
        debug_assert!(self.m4.is_none(), "an m4 switch on the common path");
        let (reserve, fixed) = (self.reserve, self.pool);
        let i = self.index(p, q);
        let c = &mut self.acct[i];
        let from_hdrm = size.min(c.hdrm);
        c.hdrm -= from_hdrm;
        let rest = size - from_hdrm;
        let shared = c.ingress.saturating_sub(reserve);
        self.shared_used -= rest.min(shared);
        c.ingress -= rest.min(c.ingress);
        if c.paused && c.hdrm == 0 {
            let sh = c.ingress.saturating_sub(reserve);
            let th = fixed.saturating_sub(self.shared_used) >> c.shift;
            if sh == 0 || sh + self.cfg.resume_offset <= th {
                c.paused = false;
                return true;
            }
        }
        false
    }

    /// Bytes of shared buffer in use.
    pub fn shared_used(&self) -> u64 {
        self.shared_used
    }

    /// Total bytes accounted to ingress port `p` (reserve, shared and headroom).
    pub fn ingress_bytes(&self, p: usize) -> u64 {
        let stride = self.stride as usize;
        self.acct[p * stride..(p + 1) * stride].iter().map(|c| c.ingress + c.hdrm).sum()
    }
}

/// Bytes that can still reach an ingress port of `rate` on a link of `delay_ns` after it
/// decides to PAUSE its upstream (docs/model/pfc.md, "PFC headroom"): the round trip's flight,
/// `2 · rate · delay` rounded up (the PAUSE crosses the link one way, and everything already
/// on the wire the other way still lands), plus `serialisation`: the frame whose admission
/// crossed the threshold, the frame this port is sending when the PAUSE is queued (it waits
/// its turn), the frame the upstream is sending when the PAUSE lands (it finishes it), and
/// the PAUSE frame's own time on the wire.
pub fn headroom_needed(rate: Rate, delay_ns: u64, serialisation: u64) -> u64 {
    let round_trip = (rate.0 as u128 * 2 * delay_ns as u128).div_ceil(8 * 1_000_000_000) as u64;
    round_trip + serialisation
}

/// The reference's threshold shift: 3 at or below the NIC rate, one less per doubling above.
fn threshold_shift(rate: Rate, nic: Rate) -> u32 {
    let mut shift = 3u32;
    let mut r = nic.0.max(1);
    while r < rate.0 && shift > 0 {
        r *= 2;
        shift -= 1;
    }
    shift
}

#[cfg(test)]
mod tests;
