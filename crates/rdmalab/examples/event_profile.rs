//! Runs a TOML scenario, or an ns-3 HPCC config (S1, S2), on the sequential engine and prints
//! what it spent its events on: `cargo run --release -p rdmalab --features event-profile
//! --example event_profile -- SCENARIO.toml|CONFIG [--threads 1]` (`--threads 1`: the origin order, which `rdmalab run
//! --threads 1` runs in; without, the reference's FIFO order). One `JSON {...}` line: the
//! wall time of the run, the events by kind (`Simulation::events_by_kind`) and the packet
//! counters that explain them. Used by
//! `bench/blitz_cost.py` (what a full `blitz-incast` spends its events on).

use rdmalab_alloc as _; // jemalloc on huge pages, as `rdmalab run` has
use std::path::Path;
use std::time::Instant;

use rdmalab::formats::hpcc_config;
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;

fn main() {
    if let Err(e) = run() {
        eprintln!("event_profile: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: event_profile SCENARIO.toml|CONFIG [--threads 1]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or(usage)?;
    let origin_order = match args.get(1..).unwrap_or_default() {
        [] => false,
        [flag, one] if flag == "--threads" && one == "1" => true,
        _ => return Err(usage.into()),
    };
    let s = if path.ends_with(".toml") {
        Scenario::from_file(Path::new(path))?
    } else {
        rdmalab::hpcc_compat::scenario_from_config(&hpcc_config::read_config(path)?)?
    };
    let mut sim = match Runner::with_threads(s, origin_order.then_some(1))? {
        Runner::One(sim) => sim,
        Runner::Many(_) => return Err("one thread runs one simulation".into()),
    };
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
