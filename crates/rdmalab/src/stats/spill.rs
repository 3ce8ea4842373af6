//! Completed flows' records streamed to disk: a run holds at most
//! `SimConfig::records_in_memory` of them; the rest wait in a temporary file, written in
//! runs of that many records (each run sorted when the run's records are), and come back in
//! the run's order only when someone reads them (the FCT file, the Python table).
//!
//! A run in the partition-independent origin order reports its records sorted by
//! (completion time, flow): each run on disk is sorted so, and reading back is a k-way merge
//! of every run of every partition and the records still held. A sequential run reports
//! them in completion order as pushed: its runs are read back one after another. Flows are
//! unique per record, so the merged order does not depend on where the runs came from.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{FlowRecord, RxFlowCounts};
use crate::ids::NodeId;
use crate::units::Time;

/// Bytes of one record on disk (its fields, little-endian; the receiver's counts are joined
/// when read back, never stored).
const RECORD_BYTES: usize = 70;

/// Records decoded at a time from one run when reading back (4,096 x 70 B per run).
const READ_BLOCK: u64 = 4096;

/// The order a run's records are reported in, and so the key its sorted runs are merged by.
pub fn output_key(r: &FlowRecord) -> (Time, u32) {
    (r.start + r.fct, r.flow)
}

/// A temporary file, removed when the last handle on it goes.
#[derive(Debug)]
struct TempFile {
    file: File,
    path: PathBuf,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where one run lies in its file: its first byte and its records.
#[derive(Clone, Copy, Debug)]
struct Run {
    offset: u64,
    len: u64,
}

/// One partition's spilled records: a file and the runs written to it so far. Cloning it
/// (a snapshot of the results) shares the file and copies the list of runs.
#[derive(Clone, Debug)]
pub struct Spill {
    file: Arc<TempFile>,
    runs: Vec<Run>,
    end: u64,
}

impl Spill {
    /// A new, empty spill file in the system's temporary directory.
    pub fn create() -> io::Result<Spill> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("rdmalab-flows-{}-{n}.bin", std::process::id()));
        let file = File::options().read(true).write(true).create_new(true).open(&path)?;
        Ok(Spill { file: Arc::new(TempFile { file, path }), runs: Vec::new(), end: 0 })
    }

    /// Writes `records` as one run after the others.
    pub fn write_run(&mut self, records: &[FlowRecord]) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(records.len() * RECORD_BYTES);
        for r in records {
            encode(r, &mut bytes);
        }
        self.file.file.write_all_at(&bytes, self.end)?;
        self.runs.push(Run { offset: self.end, len: records.len() as u64 });
        self.end += bytes.len() as u64;
        Ok(())
    }

    /// Records written so far.
    pub fn len(&self) -> u64 {
        self.runs.iter().map(|r| r.len).sum()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

/// The records a run completed: those spilled by each partition and those still held, with
/// the order to read them back in.
#[derive(Clone, Debug, Default)]
pub struct SpilledRecords {
    /// Each partition's spill, in partition order (empty when nothing was spilled).
    pub parts: Vec<Spill>,
    /// True: every run is sorted by `output_key` and so is the held tail (merge them);
    /// false: one partition's runs in push order, then the tail (concatenate them).
    pub sorted: bool,
}

impl SpilledRecords {
    /// Records on disk.
    pub fn len(&self) -> u64 {
        self.parts.iter().map(Spill::len).sum()
    }

    /// True when nothing is on disk.
    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(Spill::is_empty)
    }

    /// Calls `f` with every record, those on disk and then or among them `held`, in the
    /// run's order, each with its receiver's counts joined from `rx` (indexed by flow).
    pub fn for_each(
        &self,
        held: &[FlowRecord],
        rx: &[RxFlowCounts],
        mut f: impl FnMut(&FlowRecord) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut emit = |mut r: FlowRecord| {
            r.rx = rx.get(r.flow as usize).copied().unwrap_or_default();
            f(&r)
        };
        let mut sources: Vec<Source> =
            self.parts.iter().flat_map(|s| s.runs.iter().map(|&run| Source::run(&s.file, run))).collect();
        sources.push(Source::Held(held.iter()));
        if !self.sorted {
            for s in &mut sources {
                while let Some(r) = s.next()? {
                    emit(r)?;
                }
            }
            return Ok(());
        }
        // The k-way merge: the heap holds each source's next record's key.
        let mut heads: Vec<Option<FlowRecord>> = Vec::with_capacity(sources.len());
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (i, s) in sources.iter_mut().enumerate() {
            let head = s.next()?;
            if let Some(r) = &head {
                heap.push(Reverse((output_key(r), i)));
            }
            heads.push(head);
        }
        while let Some(Reverse((_, i))) = heap.pop() {
            let r = heads[i].take().expect("a source in the heap has a head");
            heads[i] = sources[i].next()?;
            if let Some(n) = &heads[i] {
                heap.push(Reverse((output_key(n), i)));
            }
            emit(r)?;
        }
        Ok(())
    }
}

/// Where the merge reads records from: a run on disk, a block at a time, or the held ones.
enum Source<'a> {
    Run { file: Arc<TempFile>, next: u64, left: u64, block: std::vec::IntoIter<FlowRecord> },
    Held(std::slice::Iter<'a, FlowRecord>),
}

impl Source<'_> {
    fn run(file: &Arc<TempFile>, run: Run) -> Self {
        Source::Run { file: file.clone(), next: run.offset, left: run.len, block: Vec::new().into_iter() }
    }

    fn next(&mut self) -> io::Result<Option<FlowRecord>> {
        match self {
            Source::Held(it) => Ok(it.next().copied()),
            Source::Run { file, next, left, block } => {
                if block.len() == 0 && *left > 0 {
                    let n = (*left).min(READ_BLOCK);
                    let mut bytes = vec![0u8; n as usize * RECORD_BYTES];
                    file.file.read_exact_at(&mut bytes, *next)?;
                    *next += bytes.len() as u64;
                    *left -= n;
                    *block = bytes.chunks_exact(RECORD_BYTES).map(decode).collect::<Vec<_>>().into_iter();
                }
                Ok(block.next())
            }
        }
    }
}

fn encode(r: &FlowRecord, out: &mut Vec<u8>) {
    for v in [r.flow, r.src.0, r.dst.0, r.sip, r.dip] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&r.sport.to_le_bytes());
    out.extend_from_slice(&r.dport.to_le_bytes());
    for v in [r.size, r.start.0, r.fct.0, r.ideal.0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&r.tenant.to_le_bytes());
    out.extend_from_slice(&r.retx_packets.to_le_bytes());
    out.extend_from_slice(&r.nacks.to_le_bytes());
    out.extend_from_slice(&r.timeouts.to_le_bytes());
}

fn decode(b: &[u8]) -> FlowRecord {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let u16_at = |i: usize| u16::from_le_bytes(b[i..i + 2].try_into().expect("2 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    FlowRecord {
        flow: u32_at(0),
        src: NodeId(u32_at(4)),
        dst: NodeId(u32_at(8)),
        sip: u32_at(12),
        dip: u32_at(16),
        sport: u16_at(20),
        dport: u16_at(22),
        size: u64_at(24),
        start: Time(u64_at(32)),
        fct: Time(u64_at(40)),
        ideal: Time(u64_at(48)),
        tenant: u16_at(56),
        retx_packets: u32_at(58),
        nacks: u32_at(62),
        timeouts: u32_at(66),
        rx: RxFlowCounts::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(flow: u32, done: u64) -> FlowRecord {
        FlowRecord {
            flow,
            src: NodeId(flow + 1),
            dst: NodeId(u32::MAX - flow),
            sip: 0x0b00_0001 + flow,
            dip: 0x0b00_0101,
            sport: 10_000 + flow as u16,
            dport: 100,
            size: 1 << 40 | flow as u64,
            start: Time(7),
            fct: Time(done - 7),
            ideal: Time(3 + flow as u64),
            tenant: 65_535,
            retx_packets: u32::MAX - 1,
            nacks: 9,
            timeouts: 7,
            rx: RxFlowCounts::default(),
        }
    }

    #[test]
    fn a_record_survives_the_disk_bit_for_bit() {
        let r = record(12_345, 1 << 50);
        let mut b = Vec::new();
        encode(&r, &mut b);
        assert_eq!(b.len(), RECORD_BYTES);
        assert_eq!(decode(&b), r);
    }

    #[test]
    fn sorted_runs_and_the_held_tail_merge_into_the_global_order() {
        // Three runs in two partitions and a held tail, each sorted, interleaved in time.
        let all: Vec<FlowRecord> = (0..5_000u32).map(|f| record(f, 100 + (f as u64 * 7919) % 3001)).collect();
        let mut want = all.clone();
        want.sort_by_key(output_key);
        let mut chunks: Vec<Vec<FlowRecord>> = all.chunks(1_300).map(<[_]>::to_vec).collect();
        chunks.iter_mut().for_each(|c| c.sort_by_key(output_key));
        let held = chunks.pop().unwrap();
        let (mut a, mut b) = (Spill::create().unwrap(), Spill::create().unwrap());
        a.write_run(&chunks[0]).unwrap();
        b.write_run(&chunks[1]).unwrap();
        a.write_run(&chunks[2]).unwrap();
        let s = SpilledRecords { parts: vec![a, b], sorted: true };
        assert_eq!(s.len(), 3 * 1_300);
        let rx = vec![RxFlowCounts { ooo_packets: 4, cnps_ecn: 5, cnps_ooo: 6, ..Default::default() }; 10];
        let mut got = Vec::new();
        s.for_each(&held, &rx, |r| {
            got.push(*r);
            Ok(())
        })
        .unwrap();
        assert_eq!(got.len(), want.len());
        assert_eq!(got[3].rx, if got[3].flow < 10 { rx[0] } else { RxFlowCounts::default() });
        got.iter_mut().for_each(|r| r.rx = RxFlowCounts::default());
        assert_eq!(got, want);
    }

    #[test]
    fn unsorted_runs_come_back_in_push_order_and_the_file_goes_with_the_last_handle() {
        let all: Vec<FlowRecord> = (0..9_000u32).rev().map(|f| record(f, 50 + f as u64)).collect();
        let mut s = Spill::create().unwrap();
        s.write_run(&all[..4_500]).unwrap();
        s.write_run(&all[4_500..8_000]).unwrap();
        let path = s.file.path.clone();
        let spilled = SpilledRecords { parts: vec![s.clone()], sorted: false };
        drop(s);
        let mut got = Vec::new();
        spilled
            .for_each(&all[8_000..], &[], |r| {
                got.push(*r);
                Ok(())
            })
            .unwrap();
        assert_eq!(got, all);
        assert!(path.exists());
        drop(spilled);
        assert!(!path.exists(), "the temporary file outlived its records");
    }
}
