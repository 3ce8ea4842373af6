//! Collectives over a network of several dimensions (docs/chakra.md, "Several network
//! dimensions"), composed as ASTRA-sim's `Sys::generate_collective` composes them: the bytes
//! each rank sends against the phases' closed forms, the time on an idle star against the sum
//! of the phases' ring times to the picosecond, one dimension left as it was, and the refusals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::{Rate, Time};

use crate::chakra::{coll, star, write};
use crate::fixtures::{arrival, run_finished, scenario, tx_ack};

const S: u64 = 1 << 20;

/// Eight ranks, each one ALL_REDUCE (`comm_type` 0) of `S` bytes, and a system file of `sys`.
fn set(tag: &str, kind: i64, sys: &str) -> (PathBuf, PathBuf) {
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-dims-{tag}-{}", std::process::id()));
    let p = write(&tmp, &vec![vec![coll(0, kind, S as i64, &[])]; 8]);
    let s = tmp.join("sys.json");
    std::fs::write(&s, sys).unwrap();
    (p, s)
}

fn toml(p: &Path, s: &Path, more: &str) -> String {
    star(8, &format!("path = {:?}\nsystem = {:?}\n{more}", p.display().to_string(), s.display().to_string()))
}

/// Payload bytes each host sent.
fn sent(r: &Results) -> BTreeMap<u32, u64> {
    let mut m = BTreeMap::new();
    for f in &r.records {
        *m.entry(f.src.0).or_default() += f.size;
    }
    m
}

fn took(r: &Results) -> Time {
    crate::chakra::took(r)
}

#[test]
fn a_two_dimensional_all_reduce_sends_each_phase_s_bytes_and_takes_their_times() {
    // dims = [4, 2], ring in both, localBWAware (ASTRA-sim's examples): a ring reduce-scatter
    // of S over 4 ranks, a ring all-reduce of S/4 over 2, a ring all-gather back to S over 4.
    let sys = r#"{"all-reduce-implementation": ["ring", "ring"], "collective-optimization": "localBWAware"}"#;
    let (p, s) = set("bw", 0, sys);
    let r = run_finished(scenario(&toml(&p, &s, "dims = [4, 2]\n"), "c.toml"));
    // (n-1)/n × S for each of the reduce-scatter and the all-gather, 2(n-1)/n × S/4 for the
    // all-reduce: 3S/4 + S/4 + 3S/4.
    let each = 3 * S / 4 + S / 4 + 3 * S / 4;
    assert_eq!(sent(&r).values().copied().collect::<Vec<_>>(), vec![each; 8]);
    // On the idle star each phase takes its ring's steps (docs/collectives.md: a step is one
    // message's arrival, the steps after the first wait behind the ACK the rank returns),
    // and a phase starts as a rank's last message of the one before arrives.
    let (b, d) = (Rate::gbps(100), Time::from_ns(1000));
    let steps = |k: u64, msg: u64| k * arrival(msg, b, d).0;
    let expect = Time(steps(3, S / 4) + steps(2, S / 8) + steps(3, S / 4) + 7 * tx_ack(b).0);
    assert_eq!(took(&r), expect);
    let c = &r.collectives[0];
    assert_eq!((c.ranks, c.size), (8, S));
    // Ranks of dimension 0 are consecutive: rank 0's rings are 0..3 (it sends to 1) and
    // {0, 4} (it sends to 4).
    let mut to: Vec<u32> = r.records.iter().filter(|f| f.src.0 == 0).map(|f| f.dst.0).collect();
    to.sort();
    to.dedup();
    assert_eq!(to, [1, 4]);

    // baseline: an all-reduce of S along each dimension, 2·3/4·S + 2·1/2·S.
    let sys = r#"{"all-reduce-implementation": ["ring", "ring"], "collective-optimization": "baseline"}"#;
    let (p, s) = set("base", 0, sys);
    let r = run_finished(scenario(&toml(&p, &s, "dims = [4, 2]\n"), "c.toml"));
    assert_eq!(sent(&r).values().copied().collect::<Vec<_>>(), vec![3 * S / 2 + S; 8]);
    let expect = Time(steps(6, S / 4) + steps(2, S / 2) + 7 * tx_ack(b).0);
    assert_eq!(took(&r), expect, "baseline");
}

#[test]
fn reduce_scatter_and_all_gather_run_one_phase_per_dimension() {
    // REDUCE_SCATTER (comm_type 7) of S over dims [2, 4]: S over 2 ranks, then S/2 over 4:
    // S/2 + 3/4 · S/2 a rank. ALL_GATHER (comm_type 2) of S gathered: along dimension 1
    // first (ASTRA-sim reverses its order), S/2 gathered over 4, then S over 2.
    let sys = r#"{"reduce-scatter-implementation": ["ring", "ring"], "all-gather-implementation": ["ring", "ring"]}"#;
    let (p, s) = set("rs", 7, sys);
    let r = run_finished(scenario(&toml(&p, &s, "dims = [2, 4]\n"), "c.toml"));
    assert_eq!(sent(&r).values().copied().collect::<Vec<_>>(), vec![S / 2 + 3 * S / 8; 8]);
    let (p, s) = set("ag", 2, sys);
    let r = run_finished(scenario(&toml(&p, &s, "dims = [2, 4]\n"), "c.toml"));
    assert_eq!(sent(&r).values().copied().collect::<Vec<_>>(), vec![3 * S / 8 + S / 2; 8]);
}

#[test]
fn one_dimension_runs_as_without_dims() {
    // dims = [8] or [8, 1] is one dimension: the same run, record for record.
    let sys = r#"{"all-reduce-implementation": ["ring"]}"#;
    let (p, s) = set("one", 0, sys);
    let base = run_finished(scenario(&toml(&p, &s, ""), "c.toml"));
    let one = run_finished(scenario(&toml(&p, &s, "dims = [8]\n"), "c.toml"));
    let sys2 = r#"{"all-reduce-implementation": ["ring", "ring"]}"#;
    let (p2, s2) = set("one1", 0, sys2);
    let flat = run_finished(scenario(&toml(&p2, &s2, "dims = [8, 1]\n"), "c.toml"));
    for r in [&one, &flat] {
        assert_eq!(format!("{:?}", r.records), format!("{:?}", base.records));
        assert_eq!(format!("{:?}", r.collectives), format!("{:?}", base.collectives));
    }
}

fn refused(p: &Path, s: &Path, more: &str) -> String {
    match Scenario::from_toml(&toml(p, s, more), Path::new("c.toml")) {
        Ok(_) => panic!("accepted {more}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn dims_that_do_not_fit_are_refused_by_name() {
    let (p, s) = set("bad", 0, r#"{"all-reduce-implementation": ["ring", "ring"]}"#);
    // The dims' product is not the rank count.
    let e = refused(&p, &s, "dims = [4, 4]\n");
    assert!(e.contains("traffic[0].dims") && e.contains("multiply to 16") && e.contains("8 ranks"), "{e}");
    // Two algorithms without dims, or for three dimensions.
    let e = refused(&p, &s, "");
    assert!(e.contains("sys.json") && e.contains("`all-reduce-implementation`") && e.contains("give `dims`"), "{e}");
    let e = refused(&p, &s, "dims = [2, 2, 2]\n");
    assert!(
        e.contains("`all-reduce-implementation`") && e.contains("2 algorithms") && e.contains("3 dimension"),
        "{e}"
    );
    // A list of one algorithm for two dimensions.
    let (p, s) = set("bad1", 0, r#"{"all-reduce-implementation": ["ring"]}"#);
    let e = refused(&p, &s, "dims = [4, 2]\n");
    assert!(e.contains("`all-reduce-implementation`") && e.contains("one algorithm for 2"), "{e}");
    // An algorithm a phase cannot run: the reduce-scatter along dimension 0 of a
    // localBWAware all-reduce has no double binary tree.
    let sys =
        r#"{"all-reduce-implementation": ["doubleBinaryTree", "ring"], "collective-optimization": "localBWAware"}"#;
    let (p, s) = set("dbt", 0, sys);
    let e = refused(&p, &s, "dims = [4, 2]\n");
    assert!(
        e.contains("rank 0, node 0")
            && e.contains("reduce_scatter phase along dimension 0")
            && e.contains("doubleBinaryTree")
            && e.contains("entry 0 of `all-reduce-implementation` in")
            && e.contains("sys.json"),
        "{e}"
    );
    // An all-to-all over two dimensions.
    let (p, s) = set("a2a", 6, r#"{"all-to-all-implementation": ["direct", "direct"]}"#);
    let e = refused(&p, &s, "dims = [4, 2]\n");
    assert!(e.contains("all-to-all over several network dimensions"), "{e}");
}

#[test]
fn astra_sim_s_network_file_gives_the_dims() {
    // ASTRA-sim's ns-3 network file `{"logical-dims": ["4", "2"]}` and its analytical YAML
    // `npus_count: [ 4, 2 ]` give the run of `dims = [4, 2]`; `dims` wins over the file.
    let sys = r#"{"all-reduce-implementation": ["ring", "ring"], "collective-optimization": "localBWAware"}"#;
    let (p, s) = set("net", 0, sys);
    let dir = p.parent().unwrap();
    std::fs::write(dir.join("net.json"), r#"{"logical-dims": ["4", "2"]}"#).unwrap();
    std::fs::write(dir.join("net.yml"), "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]  # two dims\n").unwrap();
    std::fs::write(dir.join("bad.yml"), "npus_count: 8\n").unwrap();
    let base = run_finished(scenario(&toml(&p, &s, "dims = [4, 2]\n"), "c.toml"));
    let net = format!("network = {:?}\n", dir.join("net.json").display().to_string());
    let yml = format!("network = {:?}\n", dir.join("net.yml").display().to_string());
    for more in [net.clone(), yml, format!("{net}dims = [4, 2]\n")] {
        let r = run_finished(scenario(&toml(&p, &s, &more), "c.toml"));
        assert_eq!(format!("{:?}", r.records), format!("{:?}", base.records), "{more}");
    }
    let e = refused(&p, &s, &format!("network = {:?}\n", dir.join("bad.yml").display().to_string()));
    assert!(e.contains("bad.yml") && e.contains("npus_count") && e.contains("[ 8, 2 ]"), "{e}");
    let e = refused(&p, &s, &format!("{net}dims = [8, 2]\n"));
    assert!(e.contains("traffic[0].dims") && e.contains("multiply to 16"), "{e}");
}
