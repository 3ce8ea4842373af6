//! One answer for any thread count, on drawn scenarios: each case draws a multi-partition
//! fabric (a k = 4 fat tree, a leaf-spine, a rail fabric with or without NVLink), one or two
//! traffic entries of any plain kind (flows with SEND or WRITE, incast, incast rounds,
//! permutation, random pairs, Poisson, a collective) and `[rnic]` and `[fabric]` options
//! (receive queues, shared or not, with processing, repost delays, RNR timers and retries;
//! congestion control, lossless or lossy with timeouts and retry limits, buffers and their
//! models, ACK coalescing, MTU, path selection, link errors, windows, ECN off, InfiniBand's
//! link layer, IRN, the PFC watchdog, UC), then compares everything the
//! run measured at 1, 2 and 4 threads (`parallel_outputs::everything`: every table and
//! counter the CLI writes, less the two documented to differ).
//!
//! The draws come from a fixed seed, so a failure names a case that reproduces (its TOML is
//! printed). Cases the engine refuses (an option that does not fit the fabric, or one the
//! parallel engine does not split) are drawn again; at least `CASES` are compared. With
//! `DRAWN_DUMP=DIR` in the environment, a differing case writes both outputs to `DIR`
//! (`one.txt`, `many.txt`) for a diff.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::work_map;

use crate::parallel_outputs::everything;

/// Cases compared (each run at 1, 2 and 4 threads).
const CASES: usize = 80;

/// xorshift64*: the draws, reproducible from the seed.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.next() as usize % xs.len()]
    }
    /// True with probability `p` percent.
    fn chance(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
    /// Two distinct hosts of `0..hosts`.
    fn pair(&mut self, hosts: u64) -> (u64, u64) {
        let a = self.int(0, hosts - 1);
        let b = (a + self.int(1, hosts - 1)) % hosts;
        (a, b)
    }
}

/// The topology section and its host count.
fn topology(d: &mut Draw) -> (String, u64) {
    match d.int(0, 2) {
        0 => ("[topology]\nkind = \"fat_tree\"\nk = 4\n".into(), 16),
        1 => {
            let (leaves, per) = (d.int(2, 4), d.int(2, 4));
            let t = format!(
                "[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nspines = {}\nhosts_per_leaf = {per}\n\
                 host_rate = \"100Gbps\"\nfabric_rate = \"{}\"\ndelay = \"{}\"\n",
                d.int(1, 3),
                d.pick(&["100Gbps", "200Gbps", "400Gbps"]),
                d.pick(&["1us", "500ns", "2us"]),
            );
            (t, leaves * per)
        }
        _ => {
            let nvlink = if d.chance(50) { "nvlink_rate = \"400Gbps\"\nnvlink_latency = \"300ns\"\n" } else { "" };
            let t = format!(
                "[topology]\nkind = \"rail\"\nservers = 2\ngpus_per_server = 4\nspines = 2\nhost_rate = \"100Gbps\"\n\
                 fabric_rate = \"100Gbps\"\n{nvlink}"
            );
            (t, 8)
        }
    }
}

/// One `[[traffic]]` or `[[collective]]` entry; `verb` (SEND or WRITE) where a kind takes it.
fn traffic(d: &mut Draw, hosts: u64, i: usize) -> String {
    let verb = d.pick(&["send", "send", "write"]);
    let size = d.int(1, 40) * 1000 + d.int(0, 999);
    let start = format!("{}ns", d.int(0, 5) * 1000);
    match d.int(0, 6) {
        0 => {
            let flows: Vec<String> = (0..d.int(1, 6))
                .map(|_| {
                    let (s, t) = d.pair(hosts);
                    format!(
                        "{{ src = {s}, dst = {t}, size = {}, start = \"{}ns\" }}",
                        d.int(500, 30_000),
                        d.int(0, 8000)
                    )
                })
                .collect();
            // A WRITE may go on an unreliable connection (UC).
            let uc = if verb == "write" && d.chance(30) { "transport = \"uc\"\n" } else { "" };
            format!("[[traffic]]\nkind = \"flows\"\nverb = \"{verb}\"\n{uc}flows = [{}]\n", flows.join(", "))
        }
        1 => {
            let receiver = d.int(0, hosts - 1);
            let mut senders: Vec<u64> = (0..hosts).filter(|&h| h != receiver && d.chance(40)).collect();
            if senders.is_empty() {
                senders.push((receiver + 1) % hosts);
            }
            format!(
                "[[traffic]]\nkind = \"incast\"\nsenders = {senders:?}\nreceiver = {receiver}\nsize = {size}\n\
                 start = \"{start}\"\nverb = \"{verb}\"\n"
            )
        }
        2 => {
            let receiver = d.int(0, hosts - 1);
            let senders: Vec<u64> = (1..=d.int(2, 4)).map(|k| (receiver + k) % hosts).collect();
            format!(
                "[[traffic]]\nkind = \"incast_rounds\"\nsenders = {senders:?}\nreceiver = {receiver}\nsize = {}\n\
                 period = \"{}us\"\nrounds = {}\nverb = \"{verb}\"\n",
                d.int(1, 8) * 1000,
                d.int(2, 10),
                d.int(2, 3)
            )
        }
        3 => format!("[[traffic]]\nkind = \"permutation\"\nsize = {size}\nstart = \"{start}\"\nverb = \"{verb}\"\n"),
        4 => format!(
            "[[traffic]]\nkind = \"random_pairs\"\ncount = {}\nsize = {size}\nwindow = \"{}us\"\nverb = \"{verb}\"\n",
            d.int(2, 12),
            d.int(1, 20)
        ),
        5 => format!(
            "[[traffic]]\nkind = \"poisson\"\ncdf = \"{}\"\nload = 0.{}\nduration = \"{}us\"\nverb = \"{verb}\"\n",
            d.pick(&["web_search", "fb_hadoop"]),
            d.int(1, 5),
            d.int(10, 30)
        ),
        _ => {
            let n = d.int(2, hosts.min(8));
            let first = d.int(0, hosts - n);
            let (kind, algorithm) = d.pick(&[
                ("allreduce", "ring"),
                ("allreduce", "double_binary_tree"),
                ("allgather", "ring"),
                ("alltoall", "direct"),
                ("broadcast", "ring"),
            ]);
            format!(
                "[[collective]]\nname = \"c{i}\"\nkind = \"{kind}\"\nalgorithm = \"{algorithm}\"\n\
                 ranks = {{ hosts = \"{first}..{}\" }}\nsize = \"{}KiB\"\nchunk = \"{}KiB\"\nchannels = {}\n",
                first + n - 1,
                d.int(8, 64),
                d.pick(&["4", "16", "512"]),
                d.int(1, 2)
            )
        }
    }
}

/// The `[rnic]` section, or nothing.
fn rnic(d: &mut Draw) -> String {
    if d.chance(30) {
        return String::new();
    }
    let mut s = String::from("[rnic]\n");
    if d.chance(75) {
        s += &format!("recv_queue_depth = {}\n", d.int(1, 3));
    } else {
        s += &format!("srq_depth = {}\n", d.int(1, 6));
    }
    s += &format!("min_rnr_timer = {}\n", d.int(1, 4));
    if d.chance(40) {
        s += &format!("recv_repost_delay = \"{}ns\"\n", d.int(0, 8) * 500);
    }
    if d.chance(40) {
        s += &format!("recv_processing = \"{}ns\"\n", d.int(1, 6) * 400);
    }
    if d.chance(30) {
        s += &format!("rnr_retry = {}\n", d.int(0, 7));
    }
    s
}

/// The `[fabric]` section.
fn fabric(d: &mut Draw) -> String {
    let mut s = format!("[fabric]\ncc = \"{}\"\n", d.pick(&["none", "dcqcn", "dcqcn", "hpcc", "timely", "dctcp"]));
    s += &format!("mtu = {}\nack_interval = {}\n", d.pick(&["1000", "1000", "4096"]), d.int(1, 4));
    s += &format!("buffer_mb = {}\n", d.pick(&["0.3", "1", "4"]));
    if d.chance(35) {
        // Lossy: a timeout repairs what the buffers drop, a retry limit may give flows up.
        s += &format!("lossless = false\nrto = \"{}us\"\n", d.int(20, 200));
        if d.chance(40) {
            s += &format!("retry_limit = {}\n", d.int(1, 7));
        }
        if d.chance(30) {
            s += "error_rate = 0.001\n";
        }
    }
    if d.chance(30) {
        s += &format!("path_selection = \"{}\"\n", d.pick(&["spray", "drill", "letflow", "source_ip"]));
    }
    if d.chance(20) {
        s += "buffer_model = \"per_port\"\nport_buffer_kb = 200\n";
    } else if d.chance(15) {
        s += "buffer_model = \"egress_dynamic\"\ndt_alpha = 1.0\n";
    }
    if d.chance(20) {
        s += "window = true\n";
    }
    if d.chance(10) {
        s += "ecn = false\n";
    }
    if d.chance(8) {
        s += "link_layer = \"infiniband\"\n";
    }
    if d.chance(12) {
        s += "loss_recovery = \"irn\"\n";
    }
    if d.chance(10) {
        s += "[fabric.pfc_watchdog]\ndetection_time = \"20us\"\nrestoration_time = \"40us\"\n";
    }
    s
}

/// The `i`-th drawn scenario's TOML.
fn scenario_text(d: &mut Draw) -> String {
    let (topo, hosts) = topology(d);
    let mut t = format!("seed = {}\nstop_time = \"3ms\"\n{topo}", d.int(1, 1000));
    for i in 0..d.int(1, 2) as usize {
        t += &traffic(d, hosts, i);
    }
    t += &rnic(d);
    t += &fabric(d);
    t
}

#[test]
fn drawn_scenarios_give_the_same_outputs_at_1_2_and_4_threads() {
    let mut d = Draw(0x68b_2026_1127);
    let (mut compared, mut refused, mut drawn) = (0, 0, 0);
    while compared < CASES {
        drawn += 1;
        assert!(drawn < 4 * CASES, "{refused} of {drawn} drawn cases refused: the draws need fixing");
        let text = scenario_text(&mut d);
        let build = |threads: u32| {
            let mut s = Scenario::from_toml(&text, Path::new("drawn.toml"))?;
            s.config.threads = Some(threads);
            rdmalab::sim::parallel::Runner::new(s.clone())?;
            Ok::<Scenario, rdmalab::error::Error>(s)
        };
        let (Ok(one), Ok(two), Ok(four)) = (build(1), build(2), build(4)) else {
            refused += 1;
            continue;
        };
        assert!(work_map(&two, 2).1 > 1, "case {drawn}: two threads should cut:\n{text}");
        let base = everything(one);
        for (threads, s) in [(2, two), (4, four)] {
            let many = everything(s);
            crate::parallel_outputs::same_peak(&text, threads, &base.1, &many.1);
            if base.2 != many.2 {
                if let Ok(dir) = std::env::var("DRAWN_DUMP") {
                    std::fs::write(format!("{dir}/one.txt"), &base.2).unwrap();
                    std::fs::write(format!("{dir}/many.txt"), &many.2).unwrap();
                }
                let line = base.2.lines().zip(many.2.lines()).position(|(a, b)| a != b).unwrap_or(0);
                let at = |t: &str| t.lines().skip(line.saturating_sub(8)).take(16).collect::<Vec<_>>().join("\n");
                panic!(
                    "case {drawn}: outputs differ with {threads} threads at line {line}:\n{text}\n{}\n----\n{}",
                    at(&base.2),
                    at(&many.2)
                );
            }
        }
        compared += 1;
    }
    eprintln!("{compared} cases compared, {refused} refused, of {drawn} drawn");
}
