//! Runs an ns-3 HPCC config, or a native TOML scenario, with the Rust engine alone (no
//! Python), for profiling: `cargo run --release --example hpcc_run -- CONFIG|SCENARIO.toml`.
//! Prints counters and timing; writes the FCT and PFC files (the config's, or `fct.txt`, `pfc.txt`).

use std::time::Instant;

use rdmalab::formats::{fct, hpcc_config, pfc};
use rdmalab::sim::Simulation;

fn main() {
    if let Err(e) = run() {
        eprintln!("hpcc_run: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: hpcc_run CONFIG")?;
    let t0 = Instant::now();
    let (mut sim, fct_path, pfc_path): (Simulation, std::path::PathBuf, std::path::PathBuf) = if path.ends_with(".toml")
    {
        (rdmalab::scenario::Scenario::from_file(path.as_ref())?.simulation()?, "fct.txt".into(), "pfc.txt".into())
    } else {
        let cfg = hpcc_config::read_config(&path)?;
        let s = rdmalab::hpcc_compat::scenario_from_config(&cfg)?;
        (Simulation::new(s.topology, s.flows, s.config)?, cfg.fct_output_file.clone(), cfg.pfc_output_file.clone())
    };
    let setup = t0.elapsed();
    let reason = sim.run_to_end();
    let wall = t0.elapsed();
    let r = sim.results()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&fct_path)?);
    fct::write_fct(&mut out, &r.records)?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&pfc_path)?);
    pfc::write_pfc(&mut out, &r.pfc_events)?;
    let c = r.counters;
    println!("stop: {reason:?}  flows {}/{}", r.records.len(), r.flows_total);
    println!("setup {:.3}s  total {:.3}s", setup.as_secs_f64(), wall.as_secs_f64());
    let run = (wall - setup).as_secs_f64();
    println!(
        "events {}  ({:.2} M/s)  packet-hops {} ({:.2} M/s)",
        c.events,
        c.events as f64 / run / 1e6,
        c.packet_hops,
        c.packet_hops as f64 / run / 1e6
    );
    println!("drops {} pauses {} ecn {}", c.drops, c.pauses, c.ecn_marks);
    println!(
        "JSON {{\"events\": {}, \"packet_hops\": {}, \"flows\": {}, \"run_s\": {:.6}, \"setup_s\": {:.6}, \"sim_end_ps\": {}}}",
        c.events,
        c.packet_hops,
        r.records.len(),
        run,
        setup.as_secs_f64(),
        r.end_time.0
    );
    Ok(())
}
