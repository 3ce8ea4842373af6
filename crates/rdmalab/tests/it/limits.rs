//! Inputs that would exhaust memory or run for hours: each refused before the run
//! with its estimate, or accepted with a warning naming the field and what it costs.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::Simulation;

use crate::fixtures::{self, input_error, line_of};

/// Two hosts on a star at 100G, one flow of `size` bytes, then `extra`.
fn star(size: u64, extra: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"flows\"\nflows = [{{src = 0, dst = 1, size = {size}}}]\n{extra}"
    )
}

/// The warnings the simulation built from `toml` gives before its run.
fn warnings(toml: &str) -> Vec<String> {
    let s = Scenario::from_toml(toml, Path::new("w.toml")).unwrap_or_else(|e| panic!("{e}"));
    Simulation::from_scenario(s).unwrap().warnings().to_vec()
}

fn warned(toml: &str, needle: &str) -> bool {
    warnings(toml).iter().any(|w| w.contains(needle))
}

#[test]
fn a_picosecond_sample_interval_is_refused_with_its_estimate() {
    // 1 MB at 100G takes 80 us (plus a 2 us round trip): 8.2e7 samples of the star's 2
    // switch ports at 24 B each is 3.9 GB, over the 256 MiB cap.
    for field in ["queue_sample_interval", "link_sample_interval", "rate_sample_interval"] {
        let toml = star(1_000_000, &format!("[fabric]\n{field} = \"1ps\"\n"));
        let e = input_error(&toml);
        let line = line_of(&toml, field);
        assert!(e.starts_with(&format!("bad.toml:{line}: field `fabric.{field}`")), "{e}");
        assert!(e.contains("over the cap of 268435456 bytes") && e.contains("at least"), "{e}");
    }
    // The interval the message proposes fits; a thousand times coarser than 1 ps is fine.
    let e = input_error(&star(1_000_000, "[fabric]\nqueue_sample_interval = \"1ps\"\n"));
    let fits: String =
        e.split("interval of at least ").nth(1).unwrap().chars().take_while(char::is_ascii_digit).collect();
    let ok = star(1_000_000, &format!("[fabric]\nqueue_sample_interval = \"{fits}ps\"\n"));
    assert!(Scenario::from_toml(&ok, Path::new("ok.toml")).is_ok(), "{e}");
    assert!(
        Scenario::from_toml(&star(1_000_000, "[fabric]\nqueue_sample_interval = \"1ns\"\n"), Path::new("o")).is_ok()
    );
}

#[test]
fn a_stop_time_bounds_the_sampling_estimate() {
    // The same 1 ps sampling over a 10 ns run is 10^4 samples: accepted.
    let toml = format!("stop_time = \"10ns\"\n{}", star(1_000_000, "[fabric]\nqueue_sample_interval = \"1ps\"\n"));
    assert!(Scenario::from_toml(&toml, Path::new("s.toml")).is_ok());
}

#[test]
fn drum_iterations_that_would_fill_memory_are_refused() {
    let apps = "stop_time = \"10ms\"\n[topology]\nkind = \"star\"\nhosts = 2\n[host]\nmechanism = \"drum\"\n\
                [[app]]\nhost = 0\ndst = 1\nsize = 1000\nwr_num = 1\n";
    let e = input_error(&format!("{apps}[drum]\niterations = 1000000000\n"));
    assert!(e.contains("field `drum.iterations`") && e.contains("over the cap"), "{e}");
    // 2e6 steps in each of 100 periods is accepted, with the count of steps in a warning.
    let w = warnings(&format!("{apps}[drum]\niterations = 2000000\n"));
    assert!(
        w.iter().any(|w| w.contains("drum.iterations = 2000000 over 100") && w.contains("200000000 ADMM")),
        "{w:?}"
    );
    assert!(warnings(&format!("{apps}[drum]\niterations = 5\n")).is_empty());
}

#[test]
fn sizes_are_capped_as_flows_are() {
    let apps = "stop_time = \"1ms\"\n[topology]\nkind = \"star\"\nhosts = 2\n[[app]]\nhost = 0\ndst = 1\nwr_num = 1\n";
    let e = input_error(&format!("{apps}size = 4611686018427387904\n"));
    assert!(e.contains("field `app[0].size`") && e.contains("2^53"), "{e}");
    let e = input_error(&format!("{apps}size = [1, 4611686018427387904]\n"));
    assert!(e.contains("field `app[0].size`") && e.contains("2^53"), "{e}");
    let mp = |size: u64, extra: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"multipath\"\n{extra}\
             messages = [{{src = 0, dst = 1, size = {size}}}]\n"
        )
    };
    let e = input_error(&mp(i64::MAX as u64, ""));
    assert!(e.contains("field `traffic[0].messages[0].size`") && e.contains("2^53"), "{e}");
    // 2^40 bytes in 32 KiB chunks is 2^25 chunks: a 2^28-byte header each passes 2^53.
    let e = input_error(&mp(1 << 40, "chunk_header = 268435456\n"));
    assert!(e.contains("field `traffic[0].chunk_header`") && e.contains("2^53"), "{e}");
    assert!(Scenario::from_toml(&mp(1 << 40, ""), Path::new("ok.toml")).is_ok());
}

fn multipath(extra: &str, size: u64) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"flows\"\nflows = [{{src = 0, dst = 1, size = 1000}}]\n\
         [[traffic]]\nkind = \"multipath\"\n{extra}messages = [{{src = 0, dst = 1, size = {size}, start = \"5us\"}}]\n"
    )
}

#[test]
fn idle_qps_and_heavy_chunk_headers_are_warned() {
    // 13 chunks of 32 KiB on a million QPs.
    let size = 13 * 32768;
    assert!(warned(&multipath("qps = 1000000\n", size), "traffic[1].qps = 1000000 but the largest message has 13"));
    assert!(!warned(&multipath("qps = 13\n", size), "qps"));
    // 1-byte chunks with the 24-byte header: 25x the data on the wire.
    assert!(warned(
        &multipath("chunk_size = 1\n", 100),
        "traffic[1].chunk_size = 1 with chunk_header = 24: each chunk puts 25x"
    ));
    assert!(!warned(&multipath("", size), "chunk_size"));
}

#[test]
fn a_stop_time_before_every_message_is_warned() {
    let toml = format!("stop_time = \"2us\"\n{}", multipath("", 32768));
    assert!(warned(&toml, "before every multipath message"));
    assert!(!warned(&format!("stop_time = \"9us\"\n{}", multipath("", 32768)), "multipath message"));
}

#[test]
fn a_host_model_without_applications_is_warned() {
    assert!(warned(&star(1000, "[host]\nmechanism = \"drum\"\n"), "[host] given without any [[app]]"));
    assert!(warned(&star(1000, "[drum]\nperiod = \"50us\"\n"), "[drum] given without any [[app]]"));
    assert!(warnings(&star(1000, "")).is_empty());
}

#[test]
fn iofd_without_a_resequencing_buffer_is_warned() {
    assert!(warned(&star(1000, "[fabric.iofd]\nresequence_kb = 0\n"), "fabric.iofd.resequence_kb = 0"));
    assert!(!warned(&star(1000, "[fabric.iofd]\nresequence_kb = 64\n"), "resequence_kb"));
}

#[test]
fn a_large_tenant_under_the_defense_is_warned() {
    let toml = |qps: u32, defense: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 2\n[fabric]\ncc = \"dcqcn\"\ndefense = \"{defense}\"\n\
             [[tenants]]\nname = \"attacker\"\nhosts = [0, 1]\n\
             [[traffic]]\nkind = \"parallel_qps\"\nsrc = 0\ndst = 1\nqps = {qps}\nsize = 1000\ntenant = \"attacker\"\n"
        )
    };
    assert!(warned(&toml(1000, "tenant"), "tenant `attacker` has 1000 QPs on host 0"));
    assert!(!warned(&toml(256, "tenant"), "O(members)"));
    assert!(!warned(&toml(1000, "none"), "O(members)"));
}

#[test]
fn a_large_tenant_built_from_applications_is_warned_by_its_qps() {
    let tenant = |traffic: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\ncc = \"dcqcn\"\ndefense = \"tenant\"\n\
             [[tenants]]\nname = \"attacker\"\nhosts = [0, 1, 2, 3]\n[[traffic]]\ntenant = \"attacker\"\n{traffic}"
        )
    };
    // A staggered transfer is one flow carried by an application that keeps `qps` QPs.
    let staggered = |qps: u32| {
        tenant(&format!("kind = \"staggered_qps\"\nsrc = 0\ndst = 1\nqps = {qps}\nsize = 100000000\nchunk = 1000\n"))
    };
    assert!(warned(&staggered(1000), "tenant `attacker` has 1000 QPs on host 0"));
    assert!(!warned(&staggered(256), "O(members)"));
    // A ring member posts its many steps' flows on one QP per destination: 3 QPs here,
    // however many flows (2,000 steps of 4 members).
    let overlay = tenant(
        "kind = \"shuffled_overlay\"\nhosts = [0, 1, 2, 3]\nchunk = 1000\ninterval = \"1us\"\nuntil = \"2ms\"\n",
    );
    assert!(!warned(&overlay, "O(members)"), "{:?}", warnings(&overlay));
}

#[test]
fn a_run_that_outlasts_its_estimate_stops_sampling_at_the_cap() {
    // An 8-to-1 incast lasts 8x its line-rate bound; with a 24 kB cap the queue samples
    // (one 24-byte row per switch port and sample) stop once they reach it, with a warning.
    let toml = "[topology]\nkind = \"star\"\nhosts = 9\n[fabric]\nqueue_sample_interval = \"100ns\"\n\
                [[traffic]]\nkind = \"incast\"\nsenders = [1, 2, 3, 4, 5, 6, 7, 8]\nreceiver = 0\nsize = 100000\n";
    let mut s = Scenario::from_toml(toml, Path::new("i.toml")).unwrap_or_else(|e| panic!("{e}"));
    let full = fixtures::run_finished(s.clone()).queue_samples.len();
    s.config.sample_max_bytes = 24_000;
    let mut sim = Simulation::from_scenario(s).unwrap();
    sim.run_to_end();
    let kept = sim.results().unwrap().queue_samples.len();
    // 9 switch ports per sample: the chain stops at the first sample past 1000 rows.
    assert!(full > 2000 && (1000..1009).contains(&kept), "full {full}, kept {kept}");
    assert!(sim.warnings().iter().any(|w| w.contains("sampling stopped") && w.contains("24000 bytes")));
}

#[test]
fn threads_take_a_count_or_auto_and_errors_found_later_name_the_line() {
    let toml = |threads: &str| format!("threads = {threads}\n{}", star(1000, ""));
    let e = input_error(&toml("0"));
    assert!(e.starts_with("bad.toml:1: field `threads`: 0: must be a count"), "{e}");
    let s = Scenario::from_toml(&toml("\"auto\""), Path::new("a.toml")).unwrap();
    let runner = rdmalab::sim::parallel::Runner::new(s).unwrap();
    assert!(runner.describe().contains("--threads 1"), "a star is one partition: {}", runner.describe());
    // An error the engine finds after parsing, located in the file by its field.
    let text = star(1000, "[fabric]\nqueue_sample_interval = \"2ns\"\n");
    let e = rdmalab::scenario::in_scenario_file(
        rdmalab::Error::Scenario { field: "queue_sample_interval".into(), msg: "m".into() },
        &text,
        Path::new("x.toml"),
    );
    assert_eq!(e.to_string(), format!("x.toml:{}: field `fabric.queue_sample_interval`: m", line_of(&text, "queue_")));
}

/// Four ranks of a star running a ring allreduce of `size` in chunks of `chunk`.
fn allreduce(size: &str, chunk: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = 4\n\n[[collective]]\nname = \"c\"\nkind = \"allreduce\"\n\
         ranks = [0, 1, 2, 3]\nsize = \"{size}\"\nchunk = \"{chunk}\"\n"
    )
}

#[test]
fn a_collective_too_large_to_schedule_is_refused_at_once_with_its_estimate() {
    // Ring allreduce on n = 4 ranks: 2(n-1)n = 24 transfers per loop of n chunks. 1 TiB in
    // 512 KiB chunks: 2^40 / 2^21 = 524,288 loops, 12,582,912 transfers (3 GB of schedule);
    // 1000 TiB, 1000 times that. 1 MiB in 1-byte chunks: 262,144 loops, 6,291,456 transfers
    // of 1 B each. Each is refused before any transfer is built.
    for (size, chunk, field, transfers) in [
        ("1TiB", "512KiB", "size", "12582912 transfers"),
        ("1000TiB", "512KiB", "size", "12582912000 transfers"),
        ("1MiB", "1B", "chunk", "6291456 transfers"),
    ] {
        let toml = allreduce(size, chunk);
        let t = std::time::Instant::now();
        let e = input_error(&toml);
        assert!(t.elapsed().as_secs_f64() < 1.0, "{size}: refused after {:?}", t.elapsed());
        let line = line_of(&toml, field);
        assert!(e.starts_with(&format!("bad.toml:{line}: field `collective[0].{field}`")), "{e}");
        assert!(e.contains(transfers) && e.contains("data packets"), "{size}/{chunk}: {e}");
    }
    // 1 TiB in 1 GiB chunks fits the schedule (24 x 256 transfers) but not a run without
    // an end: 6 TiB on the wire is 6.6e9 packets of 1000 B.
    let e = input_error(&allreduce("1TiB", "1GiB"));
    assert!(e.contains("6144 transfers") && e.contains("data packets for a run without a stop_time"), "{e}");
    // A size the star runs in moments passes.
    fixtures::scenario(&allreduce("1MiB", "64KiB"), "ok.toml");
}

#[test]
fn rnr_keys_without_a_receive_queue_are_warned_of() {
    let w = "given without rnic.recv_queue_depth or rnic.srq_depth";
    assert!(warned(
        &star(1000, "[rnic]\nmin_rnr_timer = 1\nrnr_retry = 0\n"),
        &format!("rnic.min_rnr_timer, rnic.rnr_retry {w}")
    ));
    assert!(warned(&star(1000, "[rnic]\nrecv_processing = \"1us\"\n"), &format!("rnic.recv_processing {w}")));
    // With a queue they act; keys of the requester alone are not receive-queue keys.
    assert!(!warned(&star(1000, "[rnic]\nrecv_queue_depth = 2\nmin_rnr_timer = 1\n"), w));
    assert!(!warned(&star(1000, "[rnic]\nretry_cnt = 3\n"), w));
}
