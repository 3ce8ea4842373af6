//! Blitz's interface (docs/blitz.md): `cc = "blitz"` with its `[fabric.cc_params]` keys,
//! `[fabric.iofd]`, and `rdmalab hpcc`'s `CC_MODE 20`, `DASR_*` and `IOFD_*` keys. Good input
//! runs; bad input is an error naming the file, the line and the field or key.

use std::path::{Path, PathBuf};

use rdmalab::cc::{CcConfig, DasrCount, Granularity};
use rdmalab::formats::hpcc_config::parse_config;
use rdmalab::hpcc_compat::scenario_from_config;
use rdmalab::scenario::Scenario;
use rdmalab::sim::Simulation;

use crate::fixtures::line_of;

const STAR: &str = r#"
[topology]
kind = "star"
hosts = 4

[[traffic]]
kind = "flows"
flows = [{ src = 1, dst = 0, size = 100000 }, { src = 2, dst = 0, size = 100000 }]
"#;

fn scenario(extra: &str) -> rdmalab::Result<Scenario> {
    Scenario::from_toml(&format!("{STAR}\n{extra}"), Path::new("s.toml"))
}

#[test]
fn blitz_scenario_parses_and_runs() {
    let extra = r#"
[fabric]
cc = "blitz"
granularity = "per_pair"
[fabric.cc_params]
dasr_utilization = 0.9
dasr_count = "host"
dasr_edge_ecn = true
rate_ai = "40Mb/s"
[fabric.iofd]
max_deflections = 3
threshold = 100000
paths = "nonminimal"
escape_pg = 6
resequence_kb = 512
resequence_timeout = "50us"
"#;
    let sc = scenario(extra).expect("valid");
    let CcConfig::Blitz(p) = &sc.config.cc else { panic!("not blitz: {:?}", sc.config.cc) };
    assert_eq!((p.dasr.utilization, p.dasr.count, p.dasr.edge_ecn), (0.9, DasrCount::Host, true));
    assert_eq!(p.dcqcn.rate_ai, rdmalab::Rate::mbps(40));
    assert_eq!(sc.config.granularity, Granularity::PerPair);
    let i = sc.config.iofd.expect("iofd on");
    assert_eq!((i.max_deflections, i.threshold, i.nonminimal, i.escape_pg), (3, 100_000, true, 6));
    assert_eq!((i.resequence_bytes, i.resequence_timeout), (512 * 1024, rdmalab::Time::from_us(50)));
    let mut sim = Simulation::new(sc.topology, sc.flows, sc.config).expect("builds");
    sim.run_to_end();
    assert_eq!(sim.results().expect("conserved").records.len(), 2);
}

#[test]
fn bad_blitz_scenarios_name_file_line_and_field() {
    let cases = [
        ("[fabric]\ncc = \"blitz\"\n[fabric.cc_params]\ndasr_count = \"host\"\n", "dasr_count", "per_pair"),
        ("[fabric]\ncc = \"blitz\"\ngranularity = \"per_pair\"\n", "granularity", "per_qp"),
        ("[fabric]\ncc = \"blitz\"\n[fabric.cc_params]\ndasr_count = \"tenant\"\n", "dasr_count", "\"qp\" or \"host\""),
        ("[fabric]\ncc = \"blitz\"\n[fabric.cc_params]\ndasr_utilization = 1.5\n", "dasr_utilization", "(0, 1]"),
        ("[fabric]\ncc = \"dcqcn\"\n[fabric.cc_params]\ndasr_edge_ecn = true\n", "dasr_edge_ecn", "not a parameter"),
        ("[fabric]\n[fabric.iofd]\npaths = \"sideways\"\n", "paths", "nonminimal"),
        ("[fabric]\n[fabric.iofd]\nmax_deflections = 9\n", "max_deflections", "more than"),
        ("[fabric]\n[fabric.iofd]\nescape_pg = 3\n", "escape_pg", "carries data"),
        ("[fabric]\n[fabric.iofd]\nescape_pg = 0\n", "escape_pg", "not a class"),
        ("[fabric]\n[fabric.iofd]\nresequence_timeout = \"0us\"\n", "resequence_timeout", "positive"),
        ("[fabric]\n[fabric.iofd]\nspray = true\n", "spray", "unknown field"),
        ("[fabric]\ncc = \"blitz\"\ndefense = \"tenant\"\n", "defense", "fabric.cc = \"blitz\""),
    ];
    for (extra, key, msg) in cases {
        let text = format!("{STAR}\n{extra}");
        let e = scenario(extra).expect_err(extra).to_string();
        // The line of the key, or (for a rule joining two fields) of the `cc` that asks for it.
        let line = if text.contains(&format!("{key} =")) { line_of(&text, &format!("{key} =")) } else { 0 };
        assert!(e.starts_with("s.toml:") && e.contains(key) && e.contains(msg), "{extra:?}: {e}");
        if line > 0 {
            assert!(e.starts_with(&format!("s.toml:{line}:")), "{extra:?}: want line {line}: {e}");
        }
    }
}

/// A 4-host star in the reference's formats, written to a fresh folder.
fn hpcc_files(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rdmalab-blitz-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("topo.txt"),
        "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n2 4 100Gbps 0.001ms 0\n3 4 100Gbps 0.001ms 0\n",
    )
    .unwrap();
    std::fs::write(dir.join("flows.txt"), "3\n1 0 3 100 300000 2.0\n2 0 3 100 300000 2.0\n3 0 3 100 300000 2.0\n")
        .unwrap();
    dir
}

fn hpcc_config(dir: &Path, keys: &str) -> String {
    format!(
        "TOPOLOGY_FILE {}\nFLOW_FILE {}\nENABLE_TRACE 0\nQLEN_MON_START 0\nQLEN_MON_END 0\nRATE_AI 20Mb/s\n\
         RATE_HAI 200Mb/s\nRP_TIMER 300\nEWMA_GAIN 0.00390625\nKMAX_MAP 1 100000000000 1600\n\
         KMIN_MAP 1 100000000000 400\nPMAX_MAP 1 100000000000 0.2\nSIMULATOR_STOP_TIME 3.0\n{keys}",
        dir.join("topo.txt").display(),
        dir.join("flows.txt").display()
    )
}

#[test]
fn cc_mode_20_and_iofd_keys_run() {
    let dir = hpcc_files("ok");
    let text = hpcc_config(&dir, "CC_MODE 20\nDASR_UTILIZATION 0.95\nDASR_COUNT 1\nIOFD_ENABLE 1\nIOFD_RESEQ_KB 64\n");
    let cfg = parse_config(&text, &dir.join("config.txt")).expect("parses");
    let sc = scenario_from_config(&cfg).expect("builds");
    assert_eq!(sc.config.granularity, Granularity::PerPair, "per-host shares imply per-pair groups");
    assert_eq!(sc.config.cc.dasr().map(|d| d.utilization), Some(0.95));
    assert_eq!(sc.config.iofd.map(|i| i.resequence_bytes), Some(64 * 1024));
    let mut sim = Simulation::new(sc.topology, sc.flows, sc.config).expect("valid");
    sim.run_to_end();
    assert_eq!(sim.results().expect("conserved").records.len(), 3);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn misplaced_and_out_of_range_hpcc_keys_name_key_and_line() {
    let dir = hpcc_files("bad");
    let cases = [
        ("CC_MODE 1\nDASR_UTILIZATION 0.5\n", "DASR_UTILIZATION", "CC_MODE 20"),
        ("CC_MODE 3\nDASR_EDGE_ECN 1\n", "DASR_EDGE_ECN", "CC_MODE 20"),
        ("CC_MODE 20\nDASR_UTILIZATION 1.5\n", "DASR_UTILIZATION", "(0, 1]"),
        ("CC_MODE 20\nDASR_COUNT 2\n", "DASR_COUNT", "0 counts QPs"),
        ("CC_MODE 1\nIOFD_THRESHOLD 1000\n", "IOFD_THRESHOLD", "IOFD_ENABLE 1"),
        ("CC_MODE 1\nIOFD_ENABLE 1\nIOFD_MAX_DEFLECTIONS 9\n", "IOFD_MAX_DEFLECTIONS", "more than"),
    ];
    for (keys, key, msg) in cases {
        let text = hpcc_config(&dir, keys);
        let line = line_of(&text, key);
        let path = dir.join("config.txt");
        let e = parse_config(&text, &path).and_then(|c| scenario_from_config(&c)).expect_err(keys).to_string();
        let want = format!("{}:{line}: field `{key}`", path.display());
        assert!(e.starts_with(&want) && e.contains(msg), "{keys:?}: want {want} .. {msg}: {e}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn incast_rounds_repeat_with_bounded_jitter() {
    let text = r#"
[topology]
kind = "star"
hosts = 5

[[traffic]]
kind = "incast_rounds"
senders = [1, 2, 3]
receiver = 0
size = 256000
period = "5ms"
rounds = 4
jitter = "100us"
start = "1ms"
"#;
    let sc = Scenario::from_toml(text, Path::new("s.toml")).expect("valid");
    assert_eq!(sc.flows.len(), 12);
    for f in &sc.flows {
        let into = (f.start.0 - 1_000_000_000) % 5_000_000_000;
        assert!(into <= 100_000_000, "start {:?} outside its round's jitter", f.start);
        assert_eq!((f.dst.0, f.size, f.dport), (0, 256_000, 200));
    }
    let distinct: std::collections::BTreeSet<_> = sc.flows.iter().map(|f| f.start).collect();
    assert!(distinct.len() > 6, "jitter spreads the starts");
    let bad = text.replace("rounds = 4", "rounds = 0");
    let e = Scenario::from_toml(&bad, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.starts_with("s.toml:12: field `traffic[0].rounds`"), "{e}");
    let bad = text.replace("jitter = \"100us\"", "jitter = \"6ms\"");
    let e = Scenario::from_toml(&bad, Path::new("s.toml")).unwrap_err().to_string();
    assert!(e.contains("traffic[0].jitter"), "{e}");
}

#[test]
fn the_queue_monitor_needs_its_file_only_when_asked_for() {
    // A config that names no QLEN_MON_* key has no monitor (the reference's 2.0-2.1 s
    // defaults do not make a file name mandatory); giving the window without the file is
    // an error naming QLEN_MON_FILE.
    let dir = hpcc_files("qlen");
    let without = hpcc_config(&dir, "").replace("QLEN_MON_START 0\nQLEN_MON_END 0\n", "");
    let cfg = parse_config(&without, &dir.join("config.txt")).expect("parses");
    let sc = scenario_from_config(&cfg).expect("no monitor keys: no error");
    assert!(sc.config.qlen_monitor.is_none(), "and no monitor");
    let window = hpcc_config(&dir, "").replace("QLEN_MON_END 0", "QLEN_MON_END 1000");
    let cfg = parse_config(&window, &dir.join("config.txt")).expect("parses");
    let e = scenario_from_config(&cfg).expect_err("a window without a file").to_string();
    assert!(e.contains("QLEN_MON_FILE"), "{e}");
}
