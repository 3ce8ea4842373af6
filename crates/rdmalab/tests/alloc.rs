//! The hot path allocates nothing per packet: count heap allocations during a run.
//!
//! Queues and slabs grow to their high-water mark (a logarithmic number of reallocations)
//! and admitting a flow allocates its QP's bookkeeping; nothing else may allocate, so the
//! count must stay far below the number of packets.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rdmalab::sim::{SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Tests in this binary run on parallel threads but the counter is global: each holds
/// this lock for its whole body.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// (allocations during the run, packet-hops, rate samples) for `flows` flows of `size`
/// bytes on a k=4 fat tree.
fn allocations_during_run(cc: &str, flows: usize, size: u64, rate_sample_interval: Option<Time>) -> (u64, u64, usize) {
    let topo = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::from_ns(1000)).unwrap();
    let specs = (0..flows)
        .map(|i| {
            FlowSpec::new(NodeId((i % 16) as u32), NodeId(((i * 7 + 3) % 16) as u32), size, Time::from_us(i as u64))
        })
        .filter(|f| f.src != f.dst)
        .collect();
    let cc = rdmalab::cc::CcConfig::from_name(cc).unwrap();
    let cfg = SimConfig { cc, rate_sample_interval, ..SimConfig::default() };
    let mut sim = Simulation::new(topo, specs, cfg).unwrap();
    let before = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let r = sim.results().unwrap();
    (allocs, r.counters.packet_hops, r.rate_samples.len())
}

#[test]
fn packets_do_not_allocate() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for cc in ["none", "dcqcn", "hpcc"] {
        let (allocs, packet_hops, _) = allocations_during_run(cc, 40, 2_000_000, None);
        assert!(packet_hops > 300_000, "{cc}: {packet_hops}");
        // 40 flows may allocate a few dozen times each (QP, message and record growth);
        // one allocation per packet would be over 300,000.
        eprintln!("{cc}: {allocs} allocations for {packet_hops} packet-hops");
        assert!(allocs < 40 * 40, "{cc}: {allocs} allocations for {packet_hops} packet-hops");
    }
}

/// Rate sampling allocates only as its sample table grows (amortized `Vec` growth), never
/// per packet or per sample: the same run with and without it.
#[test]
fn rate_sampling_allocates_only_as_its_table_grows() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (off, _, none) = allocations_during_run("dcqcn", 40, 2_000_000, None);
    let (on, _, samples) = allocations_during_run("dcqcn", 40, 2_000_000, Some(Time::from_ns(500)));
    assert_eq!(none, 0);
    assert!(samples > 10_000, "{samples} samples");
    // Growing two vectors by doubling: about log2(samples) + log2(QPs) reallocations each.
    let extra = on.saturating_sub(off);
    assert!(extra < 100, "{extra} extra allocations for {samples} samples ({off} without sampling)");
}
