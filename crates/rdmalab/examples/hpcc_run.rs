//! Runs an ns-3 HPCC config, or a native TOML scenario, with the Rust engine alone (no
//! Python), for profiling: `cargo run --release --example hpcc_run -- CONFIG|SCENARIO.toml
//! [--threads N]` (`--threads`: the parallel engine's event order, `SimConfig::threads`).
//! Prints counters and timing; writes the FCT file (the config's, or `fct.txt`) and an HPCC
//! config's PFC file.

use rdmalab_alloc as _; // jemalloc on huge pages, as `rdmalab run` has
use std::time::Instant;

use rdmalab::formats::hpcc_config;
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;

fn main() {
    if let Err(e) = run() {
        eprintln!("hpcc_run: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: hpcc_run CONFIG|SCENARIO.toml [--threads N]";
    let path = args.first().ok_or(usage)?.clone();
    let threads = match args.get(1).map(String::as_str) {
        Some("--threads") => Some(args.get(2).ok_or(usage)?.parse::<u32>()?),
        Some(_) => return Err(usage.into()),
        None => None,
    };
    let t0 = Instant::now();
    let (mut s, fct_path, pfc_path): (Scenario, std::path::PathBuf, Option<std::path::PathBuf>) =
        if path.ends_with(".toml") {
            (Scenario::from_file(path.as_ref())?, "fct.txt".into(), None)
        } else {
            let cfg = hpcc_config::read_config(&path)?;
            let s = rdmalab::hpcc_compat::scenario_from_config(&cfg)?;
            (s, cfg.fct_output_file.clone(), Some(cfg.pfc_output_file.clone()))
        };
    s.config.threads = threads.or(s.config.threads);
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
    let mut out = std::io::BufWriter::new(std::fs::File::create(&fct_path)?);
    r.write_fct(&mut out)?;
    if let Some(pfc_path) = pfc_path {
        let mut out = std::io::BufWriter::new(std::fs::File::create(pfc_path)?);
        rdmalab::formats::pfc::write_pfc(&mut out, &r.pfc_events)?;
    }
    let c = r.counters;
    println!("stop: {reason:?}  flows {}/{}", r.flows_completed(), r.flows_total);
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
        r.flows_completed(),
        run,
        setup.as_secs_f64(),
        r.end_time.0
    );
    Ok(())
}
