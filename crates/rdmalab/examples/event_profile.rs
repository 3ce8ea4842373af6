//! Runs a TOML scenario on the sequential engine and prints what it spent its events on:
//! `cargo run --release -p rdmalab --features event-profile --example event_profile --
//! SCENARIO.toml`. One `JSON {...}` line: the wall time of the run, the events by kind
//! (`Simulation::events_by_kind`) and the packet counters that explain them. Used by
//! `bench/blitz_cost.py` (docs/benchmarks.md, "What a full blitz-incast costs").

use rdmalab_alloc as _; // jemalloc on huge pages, as `rdmalab run` has
use std::path::Path;
use std::time::Instant;

use rdmalab::scenario::Scenario;

fn main() {
    if let Err(e) = run() {
        eprintln!("event_profile: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: event_profile SCENARIO.toml")?;
    let s = Scenario::from_file(Path::new(&path))?;
    let mut sim = s.simulation()?;
    let t0 = Instant::now();
    let reason = sim.run_to_end();
    let wall = t0.elapsed().as_secs_f64();
    let kinds: Vec<String> = sim.events_by_kind().iter().map(|(k, n)| format!("\"{k}\": {n}")).collect();
    let r = sim.results()?;
    let c = &r.counters;
    println!("stop: {reason:?}, {} events in {wall:.2} s", c.events);
    println!(
        "JSON {{\"wall_s\": {wall:.3}, \"events\": {}, \"data_packets_sent\": {}, \"packet_hops\": {}, \"by_kind\": {{{}}}}}",
        c.events,
        c.data_packets_sent,
        c.packet_hops,
        kinds.join(", ")
    );
    Ok(())
}
