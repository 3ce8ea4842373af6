//! Fuzz test of every `rdmalab::formats` reader and of native TOML scenarios: random byte strings and random mutations
//! (truncation, token swaps, character changes, token deletion and duplication) of the real
//! reference files must give `Ok` or `Err`, never a panic, and each parse must stay fast.
//!
//! Every `Err` must name where: the file, and the field (a key, a column, a scenario field),
//! as every input error of rdmalab does.
//!
//! proptest drives the inputs; the run is kept to a few seconds in total. Mutations start
//! from the reference files so that most inputs get deep into the parsers instead of failing
//! on the first token.

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use rdmalab::formats::{fct, hpcc_config, hpcc_flow, hpcc_topology, htsim_cm, pfc, simai, units_parse};
use rdmalab::scenario::Scenario;
use rdmalab::sim::Simulation;
use rdmalab::topology::Topology;
use rdmalab::{Error, NodeId};

use crate::fixtures::reference;

/// The simulator's checks of a built scenario name the field (they know no file).
fn names_a_scenario_field<T>(r: rdmalab::Result<T>, text: &str) {
    if let Err(e) = r {
        assert!(matches!(&e, Error::Scenario { field, .. } if !field.is_empty()), "error naming no field: {e}\n{text}");
    }
}

/// The longest one parse of a fuzzed input may take (generous: debug builds, shared CPU).
const BUDGET: Duration = Duration::from_secs(2);

/// Seed texts per reader: the small real files whole, the large ones cut to their head.
struct Seeds {
    topology: Vec<String>,
    flow: Vec<String>,
    config: Vec<String>,
    cm: Vec<String>,
    fct: Vec<String>,
    simai: Vec<String>,
    fat: Topology,
}

fn head(text: &str, lines: usize) -> String {
    text.lines().take(lines).map(|l| format!("{l}\n")).collect()
}

/// The first `k` records of a flow file, with the count line rewritten to `k`.
fn flow_seed(text: &str, k: usize) -> String {
    format!("{k}\n{}", head(&text.lines().skip(1).map(|l| format!("{l}\n")).collect::<String>(), k))
}

/// The first `k` connections of a matrix of `nodes` nodes, with the header rewritten.
fn cm_seed(text: &str, nodes: usize, k: usize) -> String {
    let body: String = text.lines().skip(2).take(k).map(|l| format!("{l}\n")).collect();
    format!("Nodes {nodes}\nConnections {k}\n{body}")
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let r = reference();
        let read = |p: &str| std::fs::read_to_string(r.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        let fat_text = read("hpcc/fat.txt");
        let fat = hpcc_topology::parse_topology(&fat_text, Path::new("fat.txt")).expect("fat.txt parses");
        Seeds {
            topology: vec![fat_text, read("hpcc/topology.txt")],
            flow: vec![flow_seed(&read("hpcc/S1_flow.txt"), 60), flow_seed(&read("hpcc/S2_flow.txt"), 60)],
            config: vec![read("hpcc/S1_dcqcn_config.txt"), read("hpcc/S2_hpcc_config.txt")],
            cm: vec![
                cm_seed(&read("htsim/tm16_ws50_20ms.cm"), 16, 60),
                cm_seed(&read("htsim/tm128_perm_t0.cm"), 128, 60),
                // Triggers: a relay chain and a barrier (examples/htsim_triggers.cm).
                std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/htsim_triggers.cm"))
                    .expect("examples/htsim_triggers.cm"),
            ],
            fct: vec![head(&read("hpcc/S1_dcqcn_fct.txt"), 60)],
            simai: vec![std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/simai_tiny.txt"),
            )
            .expect("examples/simai_tiny.txt")],
            fat,
        }
    })
}

/// One way to damage a text.
#[derive(Clone, Debug)]
enum Mutation {
    /// Keep the first `n` per-mille of the bytes.
    Truncate(u16),
    /// Swap two whitespace-separated tokens (indices modulo the token count).
    SwapTokens(usize, usize),
    /// Replace the byte at a position (modulo the length) with a character.
    SetChar(usize, char),
    /// Delete a token.
    DeleteToken(usize),
    /// Duplicate a token in place.
    DuplicateToken(usize),
    /// Insert a random token before a token.
    InsertToken(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![
        Just('-'),
        Just('.'),
        Just('e'),
        Just('\n'),
        Just(' '),
        Just('9'),
        Just('0'),
        Just('>'),
        any::<char>()
    ];
    prop_oneof![
        (0u16..=1000).prop_map(Mutation::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        (any::<usize>(), interesting).prop_map(|(i, c)| Mutation::SetChar(i, c)),
        any::<usize>().prop_map(Mutation::DeleteToken),
        any::<usize>().prop_map(Mutation::DuplicateToken),
        (any::<usize>(), "[-+0-9a-zA-Z./>#]{0,12}").prop_map(|(i, t)| Mutation::InsertToken(i, t)),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut toks: Vec<String> = text.split_inclusive([' ', '\n']).map(str::to_string).collect();
    let n = toks.len().max(1);
    match m {
        Mutation::Truncate(per_mille) => {
            let cut = text.len() * usize::from(*per_mille) / 1000;
            let mut cut = cut.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
        Mutation::SetChar(i, c) => {
            let mut chars: Vec<char> = text.chars().collect();
            if !chars.is_empty() {
                let k = i % chars.len();
                chars[k] = *c;
            }
            return chars.into_iter().collect();
        }
        Mutation::SwapTokens(a, b) if !toks.is_empty() => toks.swap(a % n, b % n),
        Mutation::DeleteToken(i) if !toks.is_empty() => drop(toks.remove(i % n)),
        Mutation::DuplicateToken(i) if !toks.is_empty() => {
            let t = toks[i % n].clone();
            toks.insert(i % n, t);
        }
        Mutation::InsertToken(i, t) => toks.insert(i % (toks.len() + 1), format!("{t} ")),
        _ => {}
    }
    toks.concat()
}

/// An error must be an input error naming the file and a field.
fn names_a_field<T>(r: rdmalab::Result<T>, file: &Path, text: &str) {
    if let Err(e) = r {
        match &e {
            Error::Input { loc, .. } if loc.file == file && !loc.field.is_empty() => {}
            // Features of a format we do not simulate, named with file, line and keyword.
            Error::Unsupported(m) if m.starts_with(&format!("{}:", file.display())) => {}
            _ => panic!("error naming no field of {}: {e}\ninput:\n{text}", file.display()),
        }
    }
}

/// Feeds `text` to every reader; they must return (`Ok` or `Err` naming a field) within the
/// budget.
fn feed_all(text: &str) {
    let s = seeds();
    let p = Path::new("fuzz.txt");
    let hosts: Vec<NodeId> = (0..128).map(NodeId).collect();
    let t0 = Instant::now();
    names_a_field(hpcc_topology::parse_topology(text, p), p, text);
    names_a_field(hpcc_flow::parse_flows(text, p, &s.fat), p, text);
    match hpcc_config::parse_config(text, p) {
        Ok(c) => names_a_field(c.check_ecn_maps(&s.fat), p, text),
        e => names_a_field(e, p, text),
    }
    names_a_field(htsim_cm::parse_cm(text, p, &hosts), p, text);
    names_a_field(htsim_cm::parse_cm(text, p, &hosts[..3]), p, text);
    names_a_field(htsim_cm::parse_cm_traffic(text, p, &hosts), p, text);
    names_a_field(fct::read_fct(text, p), p, text);
    names_a_field(pfc::parse_pfc(text, p), p, text);
    match simai::parse_simai(text, p) {
        // A small workload also becomes its iteration, one loop per collective (a chunk
        // above every size, so that a mutated size costs no time).
        Ok(w) if w.all_gpus <= 16 && w.layers.iter().all(|l| [l.fwd, l.ig, l.wg].iter().all(|p| p.bytes < 1 << 40)) => {
            let layout = simai::Layout {
                hosts: (0..w.all_gpus).map(NodeId).collect(),
                algorithm: rdmalab::app::collective::Algorithm::Ring,
                channels: 1,
                chunk: 1 << 40,
                start: rdmalab::Time::ZERO,
                nvls: Vec::new(),
                rings: None,
            };
            names_a_field(simai::iteration(&w, p, &layout), p, text);
        }
        r => names_a_field(r, p, text),
    }
    for tok in text.split_whitespace().take(50) {
        let _ = units_parse::parse_rate(tok);
        let _ = units_parse::parse_time(tok);
        let _ = units_parse::parse_start_seconds(tok);
    }
    let took = t0.elapsed();
    assert!(took < BUDGET, "parsing {} bytes took {took:?}", text.len());
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

/// Runs `cases` random mutations (1 to 4 each) of the seeds `pick` chooses.
fn fuzz_mutations(pick: fn(&Seeds) -> &Vec<String>, cases: u32) {
    let n = pick(seeds()).len();
    let strategy = (0..n, prop::collection::vec(mutation(), 1..5));
    runner(cases)
        .run(&strategy, |(i, muts)| {
            let mut text = pick(seeds())[i].clone();
            for m in &muts {
                text = apply(&text, m);
            }
            feed_all(&text);
            Ok(())
        })
        .expect("no reader may panic");
}

#[test]
fn random_bytes_never_panic() {
    runner(1000)
        .run(&prop::collection::vec(any::<u8>(), 0..400), |bytes| {
            feed_all(&String::from_utf8_lossy(&bytes));
            Ok(())
        })
        .expect("no reader may panic");
}

/// Words the readers give meaning to, and edge cases of numbers.
const VOCAB: &[&str] = &[
    "\n",
    "-1",
    ".",
    "1e400",
    "nan",
    "inf",
    "0",
    "1",
    "7",
    "8",
    "65536",
    "4294967296",
    "2.000000067",
    "0.001ms",
    "100Gbps",
    "0Gbps",
    "20Mb/s",
    "1000ns",
    "Nodes",
    "Connections",
    "Triggers",
    "start",
    "size",
    "id",
    "prio",
    "addon",
    "trigger",
    "#",
    "CC_MODE",
    "KMAX_MAP",
    "KMIN_MAP",
    "PMAX_MAP",
    "LINK_DOWN",
    "RATE_AI",
    "0b000d01",
    "HYBRID_TRANSFORMER",
    "model_parallel_NPU_group:",
    "all_gpus:",
    "ALLREDUCE",
    "ALLTOALL_EP",
    "NONE",
];

const UNITS: &[&str] = &["Gbps", "Mb/s", "bps", "ns", "us", "ms", "s", "ps", "fs", "x"];

fn soup_token() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(VOCAB).prop_map(str::to_string),
        any::<u16>().prop_map(|v| v.to_string()),
        (0u16..400, 0u16..400).prop_map(|(a, b)| format!("{a}->{b}")),
        (0u32..5000, prop::sample::select(UNITS)).prop_map(|(v, u)| format!("{v}{u}")),
        any::<f32>().prop_map(|f| f.to_string()),
    ]
}

#[test]
fn random_token_soup_never_panics() {
    runner(600)
        .run(&prop::collection::vec(soup_token(), 0..60), |toks| {
            feed_all(&toks.join(" "));
            Ok(())
        })
        .expect("no reader may panic");
}

#[test]
fn mutated_simai_workloads_never_panic() {
    fuzz_mutations(|s| &s.simai, 300);
}

#[test]
fn mutated_topologies_never_panic() {
    fuzz_mutations(|s| &s.topology, 200);
}

#[test]
fn mutated_flow_files_never_panic() {
    fuzz_mutations(|s| &s.flow, 300);
}

#[test]
fn mutated_configs_never_panic() {
    fuzz_mutations(|s| &s.config, 300);
}

#[test]
fn mutated_connection_matrices_never_panic() {
    fuzz_mutations(|s| &s.cm, 300);
}

#[test]
fn mutated_fct_files_never_panic() {
    fuzz_mutations(|s| &s.fct, 300);
}

/// Native scenarios touching every part of the scenario builder and its error locating, small
/// enough that any mutation of theirs builds fast (no Poisson traffic: a mutated duration
/// could ask for millions of flows, which is slow, not wrong).
const SCENARIO_SEEDS: [&str; 3] = [
    "seed = 3\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100Gbps\"\nips_per_host = 2\n\
     [[traffic]]\nkind = \"flows\"\nflows = [\n  { src = 1, dst = 2, size = 5, src_ip_index = 1 },\n  \
     { src = 2, dst = 1, size = 1000, start = \"1us\", pg = 3, sport = 7 },\n]\n\
     [fabric]\nmtu = 1000\nrto = \"1ms\"\ncc = \"dcqcn\"\n[fabric.cc_params]\nrate_ai = \"20Mb/s\"\n",
    "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
     [[traffic]]\nkind = \"incast\"\nsenders = [1, 2]\nreceiver = 0\nsize = 10\n\
     [[traffic]]\nkind = \"permutation\"\nsize = 100\nstart = \"2us\"\n",
    "stop_time = \"1ms\"\n[topology]\nkind = \"fat_tree\"\nk = 4\ndelay = \"1us\"\n\
     [fabric]\nlossless = false\nbuffer_mb = 1.5\nqp_cache_entries = 4\n",
];

#[test]
fn mutated_scenarios_never_panic() {
    let p = Path::new("fuzz.toml");
    for text in SCENARIO_SEEDS {
        Scenario::from_toml(text, p).unwrap_or_else(|e| panic!("seed does not parse: {e}"));
    }
    let strategy = (0..SCENARIO_SEEDS.len(), prop::collection::vec(mutation(), 1..5));
    runner(400)
        .run(&strategy, |(i, muts)| {
            let mut text = SCENARIO_SEEDS[i].to_string();
            for m in &muts {
                text = apply(&text, m);
            }
            let t0 = Instant::now();
            // A scenario that builds must also pass or fail the simulator's own checks
            // with a named field.
            match Scenario::from_toml(&text, p) {
                Ok(sc) => names_a_scenario_field(Simulation::new(sc.topology, sc.flows, sc.config), &text),
                e => names_a_field(e, p, &text),
            }
            let _ = Scenario::from_json(&text, Path::new(""));
            assert!(t0.elapsed() < BUDGET, "building took {:?}:\n{text}", t0.elapsed());
            Ok(())
        })
        .expect("building a scenario may not panic");
}

#[test]
fn the_seeds_themselves_parse() {
    // A check that the mutations start from valid inputs (else the fuzzing is shallow).
    let s = seeds();
    let p = Path::new("seed");
    for t in &s.topology {
        hpcc_topology::parse_topology(t, p).expect("topology seed");
    }
    for c in &s.config {
        hpcc_config::parse_config(c, p).expect("config seed");
    }
    for f in &s.fct {
        fct::read_fct(f, p).expect("fct seed");
    }
    for f in &s.flow {
        assert_eq!(hpcc_flow::parse_flows(f, p, &s.fat).expect("flow seed").len(), 60);
    }
    let hosts: Vec<NodeId> = (0..128).map(NodeId).collect();
    for c in &s.cm[..2] {
        assert_eq!(htsim_cm::parse_cm(c, p, &hosts).expect("cm seed").len(), 60);
    }
    let t = htsim_cm::parse_cm_traffic(&s.cm[2], p, &hosts).expect("triggered cm seed");
    assert_eq!((t.flows.len(), t.job.map(|j| j.transfers().len())), (1, Some(6)));
}
