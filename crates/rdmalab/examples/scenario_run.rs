//! Runs a TOML scenario with the Rust engine alone (no Python), for benchmarks:
//! `cargo run --release --example scenario_run -- SCENARIO.toml
//! [--threads N]`. Prints counters, timing and a
//! `JSON {...}` line that `bench/run.py` reads.

use std::path::Path;
use std::time::Instant;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;

fn main() {
    if let Err(e) = run() {
        eprintln!("scenario_run: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: scenario_run SCENARIO.toml [--threads N]";
    let path = args.first().ok_or(usage)?;
    let t0 = Instant::now();
    let mut s = Scenario::from_file(Path::new(path))?;
    match args.get(1).map(String::as_str) {
        Some("--threads") => s.config.threads = Some(args.get(2).ok_or(usage)?.parse()?),
        Some(_) => return Err(usage.into()),
        None => {}
    }
    let mut sim = Runner::new(s)?;
    if let Runner::Many(p) = &sim {
        println!("{}", p.describe_cut());
    }
    let setup = t0.elapsed();
    let reason = sim.run_to_end();
    let wall = t0.elapsed();
    if let Runner::Many(p) = &sim {
        println!("{}", p.describe_split());
    }
    let r = sim.results()?;
    let c = r.counters;
    let run = (wall - setup).as_secs_f64();
    println!(
        "stop: {reason:?}  flows {}/{}  QPs opened {} (at most {} alive)",
        r.records.len(),
        r.flows_total,
        c.qps_opened,
        c.qps_peak
    );
    if let Some(cause) = &r.stall_cause {
        println!("stalled: {cause}");
    }
    println!("events {} ({:.2} M/s)", c.events, c.events as f64 / run / 1e6);
    println!(
        "JSON {{\"events\": {}, \"packet_hops\": {}, \"flows\": {}, \"run_s\": {run}, \"setup_s\": {}, \"qps_opened\": {}, \"qps_peak\": {}}}",
        c.events,
        c.packet_hops,
        r.records.len(),
        setup.as_secs_f64(),
        c.qps_opened,
        c.qps_peak
    );
    Ok(())
}
