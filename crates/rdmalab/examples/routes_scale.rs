//! Routing tables at scale: builds a k-ary fat tree, its routes, and the routes after one
//! aggregation-core link fails (in full, then as an update of the tables for three kinds
//! of failure), and prints the CPU seconds of each step (the process's user
//! and system time, which a loaded machine does not inflate as it does wall time) and the
//! tables' bytes.
//!
//! ```sh
//! cargo run --release -p rdmalab --example routes_scale -- 74
//! ```

use rdmalab_alloc as _; // jemalloc on huge pages, as `rdmalab run` has
use std::time::Instant;

use rdmalab::topology::builders::fat_tree;
use rdmalab::topology::routing::{NeighborOrder, Routes};
use rdmalab::{Rate, Time};

/// This process's user + system CPU seconds (`/proc/self/stat`, clock ticks of 1/100 s).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0 // utime, stime: fields 14 and 15 of the line
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let (c0, w0) = (cpu_s(), Instant::now());
    let out = f();
    println!("{what}: {:.2} CPU s ({:.2} s wall)", cpu_s() - c0, w0.elapsed().as_secs_f64());
    out
}

fn main() {
    let k: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let t = timed("fat tree", || fat_tree(k, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).expect("fat tree"));
    let hosts = k * k * k / 4;
    let r = timed("routes", || Routes::compute(&t, NeighborOrder::Ascending).expect("routes"));
    println!(
        "k = {k}: {hosts} hosts, {} switches, {} classes in {} groups, tables {:.1} MB ({:.0} B per host)",
        t.switches().count(),
        r.n_classes(),
        r.n_groups(),
        r.table_bytes() as f64 / 1e6,
        r.table_bytes() as f64 / hosts as f64
    );
    // The first aggregation switch's link to the first core (the builders' link order:
    // hosts, then edge-aggregation, then aggregation-core links).
    let down = hosts + k * (k / 2) * (k / 2);
    let after = timed("reroute (one aggregation-core link down)", || {
        Routes::compute_without_down_links(&t, NeighborOrder::Ascending, &|l| l != down).expect("routes")
    });
    println!("tables after: {:.1} MB", after.table_bytes() as f64 / 1e6);
    // The same failures as updates of the tables (`Routes::reroute`): the first edge's link
    // to its first aggregation switch, and the first aggregation switch's links to its first
    // core (the worst case: the first parent it hears from) and to its second.
    for (what, l) in
        [("edge-aggregation", hosts), ("aggregation-first core", down), ("aggregation-second core", down + 1)]
    {
        let mut r = r.clone();
        let work =
            timed(&format!("incremental reroute ({what} link down)"), || r.reroute(&t, &|x| x != l).expect("routes"));
        println!("  {work:?}, tables {:.1} MB", r.table_bytes() as f64 / 1e6);
    }
}
