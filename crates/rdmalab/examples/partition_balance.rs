//! How evenly the parallel engine's maps split a scenario's events:
//! `cargo run --release --example partition_balance -- SCENARIO.toml|HPCC_CONFIG.txt [N]`
//! runs it cut into N partitions (default 2) by host counts (`auto_map`) and by expected work
//! (`work_map`, what `--threads N` uses), and prints for each the events per partition, the
//! windows, the critical path (per window, the most events one partition ran, summed) and the
//! speed-up it bounds, and the CPU each thread used. Every number but the CPU does not depend
//! on the machine's load; the results of both runs are the same.

use rdmalab_alloc as _; // jemalloc on huge pages, as `rdmalab run` has
use std::path::Path;

use rdmalab::config::Scenario as Validated;
use rdmalab::formats::hpcc_config;
use rdmalab::sim::parallel::{auto_map, lookahead, work_map, Estimate, ParallelRun};

fn main() {
    if let Err(e) = run() {
        eprintln!("partition_balance: {e}");
        std::process::exit(1);
    }
}

fn scenario(path: &str) -> Result<Validated, Box<dyn std::error::Error>> {
    if path.ends_with(".toml") {
        return Ok(rdmalab::scenario::Scenario::from_file(Path::new(path))?);
    }
    Ok(rdmalab::hpcc_compat::scenario_from_config(&hpcc_config::read_config(path)?)?)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or("usage: partition_balance SCENARIO.toml|HPCC_CONFIG.txt [N]")?;
    let parts: u32 = args.get(1).map_or(Ok(2), |n| n.parse())?;
    let s = scenario(path)?;
    let maps =
        [("host counts (auto_map)", auto_map(&s.topology, parts)), ("expected work (work_map)", work_map(&s, parts))];
    for (name, (map, n)) in maps {
        let estimate = Estimate::new(&s, &map, lookahead(&s.topology, &map)?);
        let mut s = s.clone();
        s.config.threads = Some(n);
        let mut run = ParallelRun::with_map(s, map)?;
        let stop = run.run_to_end();
        println!("{name}: {n} partitions, estimated largest share {:.3}; {stop:?}", estimate.largest_share);
        let events = run.events_per_partition();
        let largest = *events.iter().max().unwrap_or(&0) as f64 / events.iter().sum::<u64>().max(1) as f64;
        println!("  largest share {largest:.3}; {}", run.describe_split());
    }
    Ok(())
}
