//! Runs a TOML scenario with the Rust engine alone (no Python), for benchmarks:
//! `cargo run --release --example scenario_run -- SCENARIO.toml
//! [--threads N|auto]`. Prints auto's estimate, counters, timing and a
//! `JSON {...}` line that `bench/run.py` reads. With `RDMALAB_DUMP=FILE` it also writes
//! everything the run measured (`Results`, debug-printed) to FILE, so that two builds'
//! outputs on a native scenario can be compared byte for byte (`cmp`).

use rdmalab_alloc as _; // jemalloc on huge pages, as `rdmalab run` has
use std::path::Path;
use std::time::Instant;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::{lookahead, work_map, Estimate, Runner};

fn main() {
    if let Err(e) = run() {
        eprintln!("scenario_run: {e}");
        std::process::exit(1);
    }
}

/// The process's CPU seconds so far, user + system, every thread (`/proc/self/stat`, in
/// clock ticks of 1/100 s; 0 where there is no such file).
fn process_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let mut fields = rest.split_whitespace().skip(11); // utime is the 14th field of the line
    let mut tick = || fields.next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick() + tick()) / 100.0
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: scenario_run SCENARIO.toml [--threads N|auto]";
    let path = args.first().ok_or(usage)?;
    let t0 = Instant::now();
    let s = Scenario::from_file(Path::new(path))?;
    let threads = match args.get(1).map(String::as_str) {
        Some("--threads") => args.get(2).ok_or(usage)?.as_str(),
        Some(_) => return Err(usage.into()),
        None => "",
    };
    // `auto`'s cut on this machine: its cores, capped by the map.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let (map, parts) = work_map(&s, cores);
    if let (true, Ok(l)) = (parts > 1, lookahead(&s.topology, &map)) {
        let e = Estimate::new(&s, &map, l);
        println!("auto's estimate ({parts} partitions): {e:?}, speed-up {:.2}", e.speed_up());
    }
    let mut sim = match threads {
        "auto" => Runner::auto(s)?,
        "" => Runner::new(s)?,
        n => Runner::with_threads(s, Some(n.parse()?))?,
    };
    println!("engine: {}", sim.describe());
    let setup = t0.elapsed();
    let cpu0 = process_cpu_s();
    let reason = sim.run_to_end();
    let wall = t0.elapsed();
    let cpu_run = process_cpu_s() - cpu0;
    if let Runner::Many(p) = &sim {
        println!("{}", p.describe_split());
        // Per power of two of the spread between the partitions' events in a window (bucket i:
        // [2^i, 2^(i+1))), how many windows: what the early thread waits for at the barrier.
        println!("window spread: windows by events between partitions, per power of two {:?}", p.window_spread());
    }
    let r = sim.results()?;
    if let Ok(p) = std::env::var("RDMALAB_DUMP") {
        std::fs::write(p, format!("{:#?}", r))?;
    }
    let c = r.counters;
    let run = (wall - setup).as_secs_f64();
    println!(
        "stop: {reason:?}  flows {}/{}  QPs opened {} (at most {} alive)",
        r.flows_completed(),
        r.flows_total,
        c.qps_opened,
        c.qps_peak
    );
    if let Some(cause) = &r.stall_cause {
        println!("stalled: {cause}");
    }
    println!("events {} ({:.2} M/s), data packets {}", c.events, c.events as f64 / run / 1e6, c.data_packets_sent);
    println!("CPU s: setup {cpu0:.2}, run {cpu_run:.2} (every thread, user + system)");
    // A collective's own result, so that a benchmark of one says what it simulated.
    for k in &r.collectives {
        let took = k.end.map_or("unfinished".into(), |e| format!("{:.3} us", (e - k.start).ps() as f64 / 1e6));
        println!(
            "collective {}: {} {} over {} ranks, {} B: {took}, algbw {:.2} Gbit/s, busbw {:.2} Gbit/s",
            k.name, k.kind, k.algorithm, k.ranks, k.size, k.algbw_gbps, k.busbw_gbps
        );
    }
    println!(
        "JSON {{\"events\": {}, \"packet_hops\": {}, \"flows\": {}, \"run_s\": {run}, \"setup_s\": {}, \"qps_opened\": {}, \"qps_peak\": {}}}",
        c.events,
        c.packet_hops,
        r.flows_completed(),
        setup.as_secs_f64(),
        c.qps_opened,
        c.qps_peak
    );
    Ok(())
}
