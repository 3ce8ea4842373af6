//! Switch buffers counted per egress port: static (`fabric.buffer_model = "per_port"`) or a
//! shared pool with a dynamic threshold per egress port (`"egress_dynamic"`).
//!
//! The default MMU (`fabric::mmu`, the reference's) pools one switch's buffer among all its
//! ports and admits a packet while its ingress stays under a dynamic threshold, a fraction of
//! what the pool has left: a port's admission depends on how full the others are. Older
//! switches and NIC-based testbeds partition the memory statically instead; `docs/virtuoso.md`
//! hypothesises that the Virtuoso paper's ConnectX-3 testbed did ("each path (egress queue) had most
//! of a buffer of its own"). Here each egress port owns `capacity` bytes and decides on its
//! own occupancy alone, with no dynamic threshold:
//!
//! - a lossy class drops a packet that would take the port over its capacity;
//! - a lossless class (PFC) that finds the port full pauses the ingress the packet came
//!   from; what that upstream sends before the PAUSE takes effect lands in the ingress's
//!   PFC headroom (the MMU's rule: three link flights, at least a round trip's flight plus
//!   three frames and the PAUSE, `mmu::headroom_needed`), counted per (ingress, class) as the
//!   reference counts it.
//!   The egress records which (ingress, class) it paused; once it has drained
//!   `resume_offset` below its capacity (or is empty) it lets them go, and an ingress resumes
//!   when no egress holds it and its headroom is empty.
//!
//! Under `egress_dynamic` the ports share one pool instead, and a port's size is not fixed: it
//! may hold `alpha` times what the pool has left (Choudhury and Hahne's dynamic threshold,
//! the buffer-sharing scheme of most shared-memory switch chips). N ports that fill together
//! settle at `alpha B / (1 + alpha N)` each, so a port gets less the more ports are busy, but
//! never loses its share to another port's backlog outright. The same drop, pause and resume
//! rules apply against that moving size.
//!
//! Queue 0 (PFC frames, high-priority ACKs) bypasses it, as it bypasses the MMU.

use crate::fabric::mmu::Admission;
use crate::fabric::NUM_PRIOS;

/// Where a switch's buffer is counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BufferModel {
    /// One pool per switch with the reference's dynamic threshold per ingress (`fabric::mmu`).
    #[default]
    Shared,
    /// A fixed share per egress port, admission on that port's occupancy alone.
    PerPort,
    /// One pool per switch; an egress port may hold `dt_alpha` times the pool's free bytes.
    EgressDynamic,
}

impl BufferModel {
    /// True when buffers are counted per egress port (`PortBuffers`), not by the shared MMU.
    pub fn per_egress(self) -> bool {
        self != BufferModel::Shared
    }
}

/// How large an egress port may grow.
#[derive(Clone, Copy, Debug)]
pub enum PortLimit {
    /// A fixed number of bytes per port.
    Static(u64),
    /// `alpha` times the free bytes of a pool shared by the switch's ports.
    Dynamic {
        /// The pool, bytes (the switch's buffer less its PFC headroom).
        pool: u64,
        /// The threshold's multiplier.
        alpha: f64,
    },
}

/// Per-egress-port buffers of one switch. Ports are indexed by their position on the switch.
#[derive(Clone, Debug)]
pub struct PortBuffers {
    /// How large each egress port may grow.
    limit: PortLimit,
    /// Bytes queued over all ports outside PFC headroom: the sum of `used` less the sum of
    /// the ingresses' headroom bytes, what the dynamic threshold subtracts from the pool.
    total: u64,
    /// Hysteresis below the capacity before a paused ingress may go again.
    resume_offset: u64,
    /// Bit `q` set: class `q` is lossless.
    pfc: u8,
    /// Bytes queued per egress port (all classes but 0), headroom included.
    used: Vec<u64>,
    /// PFC headroom of each ingress port, bytes.
    headroom: Vec<u64>,
    /// Per ingress port and class: headroom bytes in use, how many egresses hold it
    /// paused, and whether it has paused its upstream.
    ingress: Vec<[IngressClass; NUM_PRIOS]>,
    /// Per egress port: the (ingress, class) pairs it paused.
    holding: Vec<Vec<(u16, u8)>>,
    /// (ingress, class) pairs to resume, filled by `release` and emptied by `next_resume`.
    resumes: Vec<(u16, u8)>,
}

#[derive(Clone, Copy, Debug, Default)]
struct IngressClass {
    hdrm: u64,
    holds: u16,
    paused: bool,
}

impl PortBuffers {
    /// Buffers of `capacity` bytes per port for a switch whose ports have the given PFC
    /// `headroom`s; `pfc`: the lossless classes as a bit mask.
    pub fn new(capacity: u64, headroom: Vec<u64>, pfc: u8, resume_offset: u64) -> PortBuffers {
        PortBuffers::with_limit(PortLimit::Static(capacity), headroom, pfc, resume_offset)
    }

    /// As `new`, with ports sized by `limit`.
    pub fn with_limit(limit: PortLimit, headroom: Vec<u64>, pfc: u8, resume_offset: u64) -> PortBuffers {
        let n = headroom.len();
        PortBuffers {
            limit,
            total: 0,
            resume_offset,
            pfc,
            used: vec![0; n],
            headroom,
            ingress: vec![Default::default(); n],
            holding: vec![Vec::new(); n],
            resumes: Vec::new(),
        }
    }

    /// Bytes an egress port may hold now: fixed, or `alpha` times the pool's free bytes.
    pub fn capacity(&self) -> u64 {
        match self.limit {
            PortLimit::Static(bytes) => bytes,
            PortLimit::Dynamic { pool, alpha } => (alpha * pool.saturating_sub(self.total) as f64) as u64,
        }
    }

    /// Bytes queued at egress port `e`.
    pub fn used(&self, e: usize) -> u64 {
        self.used[e]
    }

    /// Admits `size` bytes of class `q` (q != 0) arriving on ingress `i` for egress `e`.
    pub fn admit(&mut self, i: usize, e: usize, q: usize, size: u64) -> Admission {
        let capacity = self.capacity();
        let fits = self.used[e] + size <= capacity;
        if self.pfc & (1 << q) == 0 {
            if !fits {
                return Admission::Drop;
            }
            self.used[e] += size;
            self.total += size;
            return Admission::Accept { pause: false };
        }
        let c = &mut self.ingress[i][q];
        if !fits {
            if c.hdrm + size > self.headroom[i] {
                return Admission::Drop; // more than the headroom: the upstream ignored a PAUSE
            }
            c.hdrm += size;
        } else {
            self.total += size; // headroom is reserved apart from the pool
        }
        self.used[e] += size;
        if self.used[e] < capacity {
            return Admission::Accept { pause: false };
        }
        // The port is full: it holds this ingress paused until it drains.
        let key = (i as u16, q as u8);
        if !self.holding[e].contains(&key) {
            self.holding[e].push(key);
            c.holds += 1;
        }
        let pause = !c.paused;
        c.paused = true;
        Admission::Accept { pause }
    }

    /// Releases `size` bytes of class `q` from ingress `i` leaving egress `e`. True when
    /// some ingress should resume its upstream: take them with `next_resume`.
    pub fn release(&mut self, i: usize, e: usize, q: usize, size: u64) -> bool {
        self.used[e] -= size;
        let c = &mut self.ingress[i][q];
        // An ingress's headroom bytes never exceed what it has queued, so `total` (queued
        // less headroom) cannot go below zero here.
        let from_headroom = size.min(c.hdrm);
        c.hdrm -= from_headroom;
        self.total -= size - from_headroom;
        // An empty port lets its inputs go whatever its capacity: a port whose size is below
        // `resume_offset` (a pool all taken by headroom, or a tiny static share) would
        // otherwise hold them paused with nothing queued, for ever (the shared MMU's rule too).
        let drained = self.used[e] == 0 || self.used[e] + self.resume_offset <= self.capacity();
        if !self.holding[e].is_empty() && drained {
            for (j, k) in self.holding[e].drain(..) {
                let h = &mut self.ingress[j as usize][k as usize];
                h.holds -= 1;
                if h.holds == 0 && h.hdrm == 0 && h.paused {
                    h.paused = false;
                    self.resumes.push((j, k));
                }
            }
        }
        let c = &mut self.ingress[i][q];
        if c.paused && c.holds == 0 && c.hdrm == 0 {
            c.paused = false;
            self.resumes.push((i as u16, q as u8));
        }
        !self.resumes.is_empty()
    }

    /// The next (ingress, class) to resume after `release`.
    pub fn next_resume(&mut self) -> Option<(u16, u8)> {
        self.resumes.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lossy(capacity: u64) -> PortBuffers {
        PortBuffers::new(capacity, vec![0; 4], 0, 3072)
    }

    #[test]
    fn a_lossy_port_drops_at_its_own_capacity_whatever_the_others_hold() {
        let mut b = lossy(10_000);
        // Port 2 full...
        for _ in 0..10 {
            assert_eq!(b.admit(0, 2, 3, 1000), Admission::Accept { pause: false });
        }
        assert_eq!(b.admit(1, 2, 3, 1000), Admission::Drop);
        // ...port 3 still takes its whole capacity.
        for _ in 0..10 {
            assert_eq!(b.admit(1, 3, 3, 1000), Admission::Accept { pause: false });
        }
        assert_eq!(b.admit(0, 3, 3, 1), Admission::Drop);
        assert!(!b.release(0, 2, 3, 1000));
        assert_eq!(b.admit(1, 2, 3, 1000), Admission::Accept { pause: false });
    }

    fn dynamic(pool: u64, alpha: f64) -> PortBuffers {
        PortBuffers::with_limit(PortLimit::Dynamic { pool, alpha }, vec![0; 10], 0, 3072)
    }

    /// Fills ports `0..n` in turn, 100 B at a time, until every one drops; the bytes each holds.
    /// Admission compares with the free bytes before the packet, so a port may end up to
    /// `alpha` x 100 B above the closed form, and the last to close 100 B above the others.
    fn fill_together(b: &mut PortBuffers, n: usize) -> Vec<u64> {
        let mut open = vec![true; n];
        while open.iter().any(|&o| o) {
            for (e, o) in open.iter_mut().enumerate() {
                if *o && b.admit(9, e, 3, 100) == Admission::Drop {
                    *o = false;
                }
            }
        }
        (0..n).map(|e| b.used(e)).collect()
    }

    #[test]
    fn dynamic_threshold_ports_filling_together_settle_at_alpha_b_over_one_plus_alpha_n() {
        // Choudhury and Hahne: q = alpha (B - N q)  =>  q = alpha B / (1 + alpha N).
        let pool = 1_000_000;
        for (alpha, n) in [(1.0, 1), (1.0, 4), (0.5, 2), (2.0, 9), (0.25, 6)] {
            let mut b = dynamic(pool, alpha);
            let want = alpha * pool as f64 / (1.0 + alpha * n as f64);
            for q in fill_together(&mut b, n) {
                assert!((q as f64 - want).abs() <= 100.0 * (1.0 + alpha), "alpha {alpha}, {n} ports: {q} vs {want}");
            }
        }
    }

    #[test]
    fn a_dynamic_port_takes_back_room_as_another_port_drains() {
        let mut b = dynamic(1_000_000, 1.0);
        let full = fill_together(&mut b, 2); // 333 kB each
        assert_eq!(b.admit(9, 0, 3, 100), Admission::Drop);
        for _ in 0..full[1] / 100 {
            b.release(9, 1, 3, 100);
        }
        // Port 1 empty: port 0 may grow to alpha (B - q0) = 1 MB - q0, i.e. to 500 kB.
        let grown = fill_together(&mut b, 1)[0];
        assert!((grown as i64 - 500_000).abs() <= 200, "{grown}");
    }

    #[test]
    fn a_full_lossless_port_pauses_its_inputs_and_resumes_them_after_draining() {
        let mut b = PortBuffers::new(10_000, vec![5000; 4], 1 << 3, 3000);
        let mut pauses = 0;
        for k in 0..10 {
            let i = k % 2; // two inputs feed egress 3
            if let Admission::Accept { pause: true } = b.admit(i, 3, 3, 1000) {
                pauses += 1;
            }
        }
        assert_eq!(pauses, 1, "the input that filled the port");
        // Both keep sending (their PAUSE is in flight): headroom, and a PAUSE for input 0.
        assert_eq!(b.admit(0, 3, 3, 1000), Admission::Accept { pause: true });
        assert_eq!(b.admit(1, 3, 3, 1000), Admission::Accept { pause: false });
        for _ in 0..4 {
            assert!(matches!(b.admit(1, 3, 3, 1000), Admission::Accept { .. }));
        }
        assert_eq!(b.admit(1, 3, 3, 1000), Admission::Drop, "headroom of input 1 exhausted");
        assert_eq!(b.used(3), 16_000);
        // Drain: both resume once the port is 3 KB below capacity and their headroom empty.
        let mut resumed = Vec::new();
        for k in 0..16 {
            if b.release(if k < 6 { 1 } else { k % 2 }, 3, 3, 1000) {
                while let Some(r) = b.next_resume() {
                    resumed.push((b.used(3), r));
                }
            }
        }
        resumed.sort();
        assert_eq!(resumed.len(), 2, "{resumed:?}");
        assert!(resumed.iter().all(|&(used, _)| used + 3000 <= 10_000), "{resumed:?}");
        assert_eq!(b.used(3), 0);
    }

    #[test]
    fn an_empty_port_resumes_its_inputs_even_when_its_size_is_below_the_resume_offset() {
        // A pool that headroom took whole: the port's size is 0, so the first packet pauses its
        // input. Drained to empty, the port must let it go; `used + offset <= capacity` never
        // holds here, and the input stayed paused with nothing queued.
        let mut b = PortBuffers::with_limit(PortLimit::Dynamic { pool: 0, alpha: 1.0 }, vec![5000; 4], 1 << 3, 3072);
        assert_eq!(b.admit(0, 3, 3, 1000), Admission::Accept { pause: true });
        assert!(b.release(0, 3, 3, 1000), "the empty port resumes its input");
        assert_eq!(b.next_resume(), Some((0, 3)));
        // A static share smaller than the offset behaves alike.
        let mut b = PortBuffers::new(2000, vec![5000; 4], 1 << 3, 3072);
        assert_eq!(b.admit(1, 2, 3, 1000), Admission::Accept { pause: false });
        assert_eq!(b.admit(1, 2, 3, 1000), Admission::Accept { pause: true });
        assert!(!b.release(1, 2, 3, 1000), "1000 B still queued: 1000 + 3072 > 2000");
        assert!(b.release(1, 2, 3, 1000));
        assert_eq!(b.next_resume(), Some((1, 3)));
    }
}
