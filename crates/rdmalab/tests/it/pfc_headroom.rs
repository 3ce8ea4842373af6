//! PFC headroom (docs/model/pfc.md, "PFC headroom"): a lossless fabric drops nothing for any
//! rate, delay, frame size, buffer, buffer model and fan-in, because each ingress keeps what
//! can still arrive after its PAUSE is decided: `2·R·d + 3·F + P`.
//!
//! CI draws 64 fabrics (`RDMALAB_HEADROOM_CASES` sets how many, `RDMALAB_HEADROOM_SEED`
//! which: the draw is seeded, so every run repeats).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rdmalab::fabric::mmu::headroom_needed;
use rdmalab::sim::{Results, StopReason};
use rdmalab::Rate;

use super::fixtures::scenario;

/// Header bytes of a data packet (`SimConfig::header_bytes`, no INT without HPCC) and the
/// PAUSE frame's.
const HEADER: u64 = 48;
const PAUSE: u64 = 64;

#[derive(Clone, Debug)]
struct Fabric {
    /// `fat_tree` (k = 4) or `leaf_spine` (leaves, spines, hosts per leaf).
    leaf_spine: Option<(u32, u32, u32)>,
    gbps: u64,
    delay_ns: u64,
    mtu: u64,
    buffer_kb: u64,
    model: &'static str,
    fan_in: u32,
    size: u64,
    background: bool,
}

impl Fabric {
    fn hosts(&self) -> u32 {
        self.leaf_spine.map_or(16, |(l, _, h)| l * h)
    }

    /// Ports of the largest switch (a fat tree's: 4).
    fn ports(&self) -> u64 {
        self.leaf_spine.map_or(4, |(l, s, h)| (h + s).max(l)) as u64
    }

    fn toml(&self, headroom_kb: Option<f64>) -> String {
        let topology = match self.leaf_spine {
            None => "kind = \"fat_tree\"\nk = 4\nhost_rate = \"{R}Gbps\"\nfabric_rate = \"{R}Gbps\"".to_string(),
            Some((l, s, h)) => format!(
                "kind = \"leaf_spine\"\nleaves = {l}\nspines = {s}\nhosts_per_leaf = {h}\n\
                 host_rate = \"{{R}}Gbps\"\nfabric_rate = \"{{R}}Gbps\""
            ),
        }
        .replace("{R}", &self.gbps.to_string());
        let senders: Vec<String> = (1..=self.fan_in).map(|s| s.to_string()).collect();
        let mut t = format!(
            "seed = 3\n[topology]\n{topology}\ndelay = \"{}ns\"\n\n[[traffic]]\nkind = \"incast\"\n\
             senders = [{}]\nreceiver = 0\nsize = {}\n",
            self.delay_ns,
            senders.join(", "),
            self.size
        );
        if self.background {
            t += &format!("\n[[traffic]]\nkind = \"permutation\"\nsize = {}\n", self.size);
        }
        t += &format!(
            "\n[fabric]\ncc = \"none\"\nmtu = {}\nbuffer_mb = {}\nbuffer_model = \"{}\"\n",
            self.mtu,
            self.buffer_kb as f64 / 1024.0,
            self.model
        );
        if let Some(kb) = headroom_kb {
            t += &format!("pfc_headroom_kb = {kb}\n");
        }
        t
    }

    /// The headroom the docs derive for this fabric's ports.
    fn bound(&self) -> u64 {
        headroom_needed(Rate::gbps(self.gbps), self.delay_ns, 3 * (self.mtu + HEADER) + PAUSE)
    }
}

fn fabric() -> impl Strategy<Value = Fabric> {
    let shape = prop_oneof![Just(None), (2u32..=4, 1u32..=3, 2u32..=5).prop_map(Some)];
    let gbps = prop_oneof![Just(10u64), Just(25), Just(40), Just(100), Just(200), Just(400)];
    let delay_ns = prop_oneof![Just(0u64), 10u64..=3000];
    let mtu = prop_oneof![Just(9000u64), Just(8192), 256u64..=9216];
    let model = prop_oneof![Just("shared"), Just("per_port"), Just("egress_dynamic")];
    (shape, gbps, delay_ns, mtu, 256u64..=4096, model, 2u32..=12, 20u64..=200, any::<bool>()).prop_map(
        |(leaf_spine, gbps, delay_ns, mtu, buffer_kb, model, fan_in, packets, background)| {
            let mut f =
                Fabric { leaf_spine, gbps, delay_ns, mtu, buffer_kb, model, fan_in, size: packets * mtu, background };
            f.fan_in = f.fan_in.min(f.hosts() - 1);
            // A buffer of at least four times its ports' headroom: a switch that is all
            // headroom pauses at every packet, and per-port buffers of nothing never resume.
            let need = (4 * f.ports() * f.bound()).div_ceil(1024);
            f.buffer_kb = f.buffer_kb.max(need);
            f
        },
    )
}

fn run(toml: &str) -> (StopReason, Result<Results, rdmalab::Error>) {
    let mut sim = scenario(toml, "headroom.toml").simulation().expect("valid scenario");
    let stop = sim.run_to_end();
    (stop, sim.results())
}

fn seed() -> [u8; 32] {
    let n: u64 = std::env::var("RDMALAB_HEADROOM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(68);
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&n.to_le_bytes());
    seed
}

fn cases() -> u32 {
    std::env::var("RDMALAB_HEADROOM_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64)
}

#[test]
fn no_fabric_drops_under_pfc_whatever_its_frames() {
    let cases = cases();
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed()));
    let paused = std::cell::Cell::new(0u32);
    runner
        .run(&fabric(), |f| {
            let toml = f.toml(None);
            let (stop, r) = run(&toml);
            let r = r.map_err(|e| TestCaseError::fail(format!("{e}\n{toml}")))?;
            prop_assert_eq!(stop, StopReason::Finished, "{}", toml);
            prop_assert_eq!(r.counters.drops, 0, "{}", toml);
            prop_assert_eq!(r.records.len(), r.flows_total, "{}", toml);
            paused.set(paused.get() + (r.counters.pauses > 0) as u32);
            Ok(())
        })
        .unwrap();
    // The draw must exercise PFC: most fabrics pause (an incast of 2+ senders at line rate).
    let paused = paused.get();
    assert!(paused * 2 >= cases, "only {paused} of {cases} fabrics paused");
}

#[test]
fn the_same_fabrics_drop_with_a_frame_less() {
    // Every port's headroom one frame short of the bound (what it was before the frame whose
    // admission crossed the threshold was counted): some fabric of the same draw drops, and
    // the check names where.
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed()));
    let dropped = std::cell::Cell::new(0u32);
    runner
        .run(&fabric(), |f| {
            let short = f.bound() - (f.mtu + HEADER);
            if let (_, Err(e)) = run(&f.toml(Some(short as f64 / 1024.0))) {
                prop_assert!(e.to_string().contains("packets dropped in lossless mode; the first at switch"), "{}", e);
                dropped.set(dropped.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    assert!(dropped.get() > 0, "no fabric of the draw needs the last frame of headroom");
}

/// Jumbo frames on a fat tree, small: a k = 4 fat tree with 9,000-byte frames on 100 Gb/s, 1 µs links
/// and a 1 MiB buffer, an 8-to-1 incast over a permutation.
fn jumbo(headroom_kb: Option<f64>) -> String {
    let f = Fabric {
        leaf_spine: None,
        gbps: 100,
        delay_ns: 1000,
        mtu: 9000,
        buffer_kb: 1024,
        model: "shared",
        fan_in: 8,
        size: 500_000,
        background: true,
    };
    f.toml(headroom_kb)
}

#[test]
fn jumbo_frames_on_a_fat_tree_lose_nothing() {
    let (stop, r) = run(&jumbo(None));
    let r = r.expect("no drop in lossless mode");
    assert_eq!(stop, StopReason::Finished);
    assert_eq!((r.counters.drops, r.records.len()), (0, r.flows_total));
    assert!(r.counters.pauses > 0, "the incast must pause");
    // 2 · 12,500 + 3 · 9,048 + 64: more than the reference's 3 · 12,500.
    assert_eq!(headroom_needed(Rate::gbps(100), 1000, 3 * 9048 + 64), 52_208);
}

#[test]
fn jumbo_frames_a_frame_short_drop_and_the_check_names_the_first() {
    // 52,208 - 9,048: the round trip, two frames and the PAUSE, the headroom before the frame
    // that crossed the threshold was counted.
    let mut sim = scenario(&jumbo(Some(43_160.0 / 1024.0)), "headroom.toml").simulation().unwrap();
    sim.run_to_end();
    let (r, e) = (sim.snapshot(), sim.results().expect_err("drops in lossless mode"));
    let site = r.first_loss.expect("a lossless drop was noted");
    let want = format!(
        "invariant violated: {} packets dropped in lossless mode; the first at switch {} ingress port {} class 3 at",
        r.counters.drops, site.node.0, site.port
    );
    assert!(e.to_string().starts_with(&want), "{e}");
    assert!(r.counters.drops > 0 && site.class == 3 && site.time <= r.end_time);
}

#[test]
fn the_first_drop_is_the_same_for_any_thread_count() {
    // The parallel engine merges its partitions' first drops by (time, node, port, class).
    let message = |threads| {
        let mut s = scenario(&jumbo(Some(43_160.0 / 1024.0)), "headroom.toml");
        s.config.threads = Some(threads);
        let mut run = rdmalab::sim::parallel::Runner::new(s).unwrap();
        run.run_to_end();
        let (r, e) = run.checked_results();
        (r.first_loss, e.expect("drops in lossless mode").to_string())
    };
    let one = message(1);
    assert!(one.0.is_some());
    for threads in [2, 4] {
        assert_eq!(message(threads), one, "{threads} threads");
    }
}
