//! The reference's S1 experiment end to end through the `rdmalab hpcc` path: its DCQCN config
//! with `CC_MODE 0`, run on copies of its files in a scratch folder, as `bench/run.py` does.
//!
//! The config names its files relative to the current directory (as ns-3's `third` reads
//! them), so the test changes directory. That is why this binary holds this one test only:
//! tests of one binary share the process and its working directory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rdmalab::formats::fct::{read_fct_file, write_fct};
use rdmalab::formats::hpcc_config::read_config;
use rdmalab::formats::pfc::write_pfc;
use rdmalab::hpcc_compat::scenario_from_config;
use rdmalab::sim::{Simulation, StopReason};

/// The ns-3 HPCC simulator's S1/S2 files (docs/validation.md says what they are):
/// `shared/reference/hpcc`, beside the repository (override with `RDMALAB_REFERENCE`).
fn reference() -> PathBuf {
    let dir = std::env::var_os("RDMALAB_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference"));
    let hpcc = dir.join("hpcc");
    assert!(hpcc.join("S1_dcqcn_config.txt").exists(), "reference files not found at {}", dir.display());
    hpcc
}

/// Copies S1's inputs into a fresh folder and writes `s1_config.txt` there: the DCQCN config
/// with `CC_MODE 0`, every other line as the reference has it.
fn prepare(reference: &Path) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rdmalab-hpcc-s1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["fat.txt", "trace.txt", "S1_flow.txt"] {
        std::fs::copy(reference.join(name), dir.join(name)).unwrap();
    }
    let text = std::fs::read_to_string(reference.join("S1_dcqcn_config.txt")).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("CC_MODE ")).count(), 1, "one CC_MODE line");
    let lines: Vec<&str> = text.lines().map(|l| if l.starts_with("CC_MODE ") { "CC_MODE 0" } else { l }).collect();
    std::fs::write(dir.join("s1_config.txt"), lines.join("\n") + "\n").unwrap();
    dir
}

#[test]
fn s1_without_cc_completes_every_flow_without_drops() {
    let reference = reference();
    let dir = prepare(&reference);
    std::env::set_current_dir(&dir).unwrap();
    let cfg = read_config("s1_config.txt").expect("the S1 config parses");
    let s = scenario_from_config(&cfg).expect("S1 builds with CC_MODE 0");
    let mut sim = Simulation::new(s.topology, s.flows, s.config).expect("valid simulation");
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().expect("bytes conserved, nothing dropped in lossless mode");
    // S1_flow.txt's header: 9,672 flows; PFC is on, so not one packet may be lost.
    assert_eq!((r.flows_total, r.records.len()), (9672, 9672));
    assert_eq!(r.counters.drops, 0);
    assert_eq!(r.counters.payload_bytes_sent, r.counters.payload_bytes_delivered);
    // The outputs land where the config says, and name the same flows as the reference's run.
    write_fct(&mut std::fs::File::create(&cfg.fct_output_file).unwrap(), &r.records).unwrap();
    write_pfc(&mut std::fs::File::create(&cfg.pfc_output_file).unwrap(), &r.pfc_events).unwrap();
    let key = |l: &rdmalab::formats::fct::FctLine| (l.sip, l.dip, l.sport, l.size, l.start_ns);
    let ours: HashSet<_> = read_fct_file(dir.join("S1_dcqcn_fct.txt")).unwrap().iter().map(key).collect();
    let theirs: HashSet<_> = read_fct_file(reference.join("S1_dcqcn_fct.txt")).unwrap().iter().map(key).collect();
    assert_eq!(ours.len(), 9672);
    assert_eq!(ours, theirs);
    assert!(dir.join("S1_dcqcn_pfc.txt").exists());
    std::env::set_current_dir(std::env::temp_dir()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
