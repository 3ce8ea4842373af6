//! Helpers shared by the integration tests: scenarios from TOML text, runs to their
//! results, the errors bad input gives, small topologies and the reference files.

use std::path::{Path, PathBuf};

use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, SimConfig, StopReason};
use rdmalab::topology::{builders, Topology};
use rdmalab::{Error, NodeId, PortId, Rate, Time};

/// The validated scenario of `toml`, named `file` in its errors; panics on bad input.
pub fn scenario(toml: &str, file: &str) -> Scenario {
    Scenario::from_toml(toml, Path::new(file)).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `s` to the end, which must be `Finished`; the results, conservation checked.
pub fn run_finished(s: Scenario) -> Results {
    let mut sim = s.simulation().expect("valid scenario");
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    sim.results().expect("conservation holds")
}

/// Runs `toml` (named `file`) with `threads` threads through the parallel runner, which must
/// finish; the results, conservation checked.
pub fn run_threads(toml: &str, file: &str, threads: u32) -> Results {
    let mut s = scenario(toml, file);
    s.config.threads = Some(threads);
    let mut run = rdmalab::sim::parallel::Runner::new(s).unwrap();
    assert_eq!(run.run_to_end(), StopReason::Finished);
    run.results().expect("bytes conserved")
}

/// The FCT file `r` writes, as text.
pub fn fct_text(r: &Results) -> String {
    let mut fct = Vec::new();
    rdmalab::formats::fct::write_fct(&mut fct, &r.records).unwrap();
    String::from_utf8(fct).unwrap()
}

/// Runs `toml` (named `t.toml`) to the end, however it stops, with `tweak` applied to its
/// configuration first; the results, conservation checked.
pub fn run_toml_with(toml: &str, tweak: impl FnOnce(&mut SimConfig)) -> Results {
    let mut s = Scenario::from_toml(toml, Path::new("t.toml")).expect("valid scenario");
    tweak(&mut s.config);
    let mut sim = s.simulation().unwrap();
    sim.run_to_end();
    sim.results().expect("bytes conserved")
}

/// The error that building `toml` (named `file`) into a simulation gives; panics if it builds.
pub fn build_error(toml: &str, file: &str) -> String {
    match Scenario::from_toml(toml, Path::new(file)).and_then(|s| s.simulation().map(|_| ())) {
        Ok(()) => panic!("accepted:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

/// The input error (file, line and field) that parsing `toml` as `bad.toml` gives; panics
/// on any other outcome.
pub fn input_error(toml: &str) -> String {
    match Scenario::from_toml(toml, Path::new("bad.toml")) {
        Err(e @ Error::Input { .. }) => e.to_string(),
        Err(e) => panic!("not an input error: {e}"),
        Ok(_) => panic!("accepted:\n{toml}"),
    }
}

/// The 1-based line of `text` where `needle` first occurs.
pub fn line_of(text: &str, needle: &str) -> usize {
    1 + text[..text.find(needle).expect("needle in text")].matches('\n').count()
}

/// A star of `hosts` hosts on links of `rate` and 1 µs.
pub fn star(hosts: usize, rate: Rate) -> Topology {
    builders::star(hosts, rate, Time::from_us(1)).expect("valid star")
}

/// The port of `from` whose link leads to `to`.
pub fn port_to(topo: &Topology, from: NodeId, to: NodeId) -> PortId {
    *topo.nodes[from.idx()].ports.iter().find(|p| topo.ports[p.idx()].peer_node == to).expect("adjacent")
}

/// The reference simulators' files (`hpcc/`: the ns-3 HPCC simulator's S1/S2 runs,
/// docs/validation.md; `htsim/`: htsim connection matrices), from `RDMALAB_REFERENCE`, else
/// `../shared/reference` beside the checkout.
pub fn reference() -> PathBuf {
    let dir = std::env::var_os("RDMALAB_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference"));
    assert!(dir.join("hpcc/fat.txt").exists(), "reference files not found at {}", dir.display());
    dir
}

/// Column `col` of the mechanism table `table` as integers (empty when the run kept no such
/// table); panics on a column of another type, which the test would misread.
pub fn table_u64(r: &rdmalab::sim::Results, table: &str, col: &str) -> Vec<u64> {
    r.table(table).map_or_else(Vec::new, |t| {
        t.column(col).and_then(|c| c.as_u64()).unwrap_or_else(|| panic!("{table}.{col}: no u64 column")).to_vec()
    })
}

/// Column `col` of the mechanism table `table` as floats (see `table_u64`).
pub fn table_f64(r: &rdmalab::sim::Results, table: &str, col: &str) -> Vec<f64> {
    r.table(table).map_or_else(Vec::new, |t| {
        t.column(col).and_then(|c| c.as_f64()).unwrap_or_else(|| panic!("{table}.{col}: no f64 column")).to_vec()
    })
}

/// Wire sizes of a `b`-byte message under the default MTU and headers (docs/collectives.md).
pub fn wires(b: u64) -> Vec<u64> {
    let c = SimConfig::default();
    let (mtu, h) = (c.mtu as u64, c.header_bytes as u64);
    let mut w = vec![mtu + h; (b / mtu) as usize];
    if !b.is_multiple_of(mtu) {
        w.push(b % mtu + h);
    }
    w
}

/// A(b): from a `b`-byte message's post to its last byte placed, over two store-and-forward
/// hops of rate `rate` and delay `delay` (a star; docs/collectives.md's closed form).
pub fn arrival(b: u64, rate: Rate, delay: Time) -> Time {
    let w = wires(b);
    let sum: u64 = w.iter().map(|&x| rate.tx_time(x).0).sum();
    Time(sum + rate.tx_time(*w.iter().max().unwrap()).0 + 2 * delay.0)
}

/// One ACK's serialisation at `rate`.
pub fn tx_ack(rate: Rate) -> Time {
    rate.tx_time(SimConfig::default().ack_bytes as u64)
}
