//! Rate sampling allocates only as its sample table grows (amortized `Vec` growth), never
//! per packet or per sample: count heap allocations of the same run with and without it.
//! (Its own test binary: the counting allocator is global.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// (allocations during the run, rate samples taken) for 40 DCQCN flows on a k=4 fat tree.
fn run(rate_sample_interval: Option<Time>) -> (u64, usize) {
    let topo = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::from_ns(1000)).unwrap();
    let specs = (0..40)
        .map(|i| FlowSpec::new(NodeId(i % 16), NodeId((i * 7 + 3) % 16), 2_000_000, Time::from_us(i as u64)))
        .filter(|f| f.src != f.dst)
        .collect();
    let cc = rdmalab::cc::CcConfig::from_name("dcqcn").unwrap();
    let cfg = SimConfig { cc, rate_sample_interval, ..SimConfig::default() };
    let mut sim = Simulation::new(topo, specs, cfg).unwrap();
    let before = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    (allocs, sim.snapshot().rate_samples.len())
}

#[test]
fn rate_sampling_allocates_only_as_its_table_grows() {
    let (off, none) = run(None);
    let (on, samples) = run(Some(Time::from_ns(500)));
    assert_eq!(none, 0);
    assert!(samples > 10_000, "{samples} samples");
    // Growing two vectors by doubling: about log2(samples) + log2(QPs) reallocations each.
    let extra = on.saturating_sub(off);
    assert!(extra < 100, "{extra} extra allocations for {samples} samples ({off} without sampling)");
}
