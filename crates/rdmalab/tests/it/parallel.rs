//! The parallel engine (`sim::parallel`): results do not depend on the thread count.
//!
//! `--threads 1`, 2 and 4 give byte-identical FCT and PFC files on a small fat
//! tree, with sources and receivers in different partitions. Covered here: no congestion
//! control, DCQCN and HPCC, lossless with PFC pauses and lossy with drops and retransmission
//! timeouts, Blitz (DASR) with IOFD, the CC-attack paper's attack applications with tenants, a PFC
//! deadlock whose cycle crosses every cut, multipath connections (the data-partition paper's split,
//! Virtuoso with a read), the DRUM paper's closed-loop applications (SHARE) and DRUM with local
//! control, each with its tables; the mechanisms the engine cannot split yet (DRUM's
//! network-wide control, Virtuoso with a retry limit) are refused by name. Samples, the packet
//! trace and the queue monitor: `parallel_observers.rs`.

use std::path::Path;

use rdmalab::fabric::PortCounters;
use rdmalab::formats::{fct::write_fct, pfc::write_pfc};
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::{auto_map, lookahead, ParallelRun, Runner};
use rdmalab::sim::StopReason;
use rdmalab::Time;

/// A k = 4 fat tree (16 hosts, 4 pods) under WebSearch at 60 % load plus an incast of 12
/// senders into host 0 (PFC pauses with a small buffer); `fabric` adds fabric settings.
pub(crate) fn scenario(cc: &str, fabric: &str, threads: u32) -> Scenario {
    let toml = format!(
        "seed = 5\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.6\nduration = \"600us\"\n\
         [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\nreceiver = 0\n\
         size = 400000\nstart = \"100us\"\n\
         [fabric]\ncc = \"{cc}\"\n{fabric}\n"
    );
    let mut s = Scenario::from_toml(&toml, Path::new("parallel.toml")).expect("valid scenario");
    s.config.threads = Some(threads);
    s
}

/// The FCT and PFC files of a run, as text.
fn files(s: Scenario) -> (String, String, usize) {
    let flows = s.flows.len();
    let mut run = Runner::new(s).expect("builds");
    assert_eq!(run.run_to_end(), StopReason::Finished);
    let r = run.results().expect("bytes conserved");
    assert_eq!(r.records.len(), flows);
    let (mut fct, mut pfc) = (Vec::new(), Vec::new());
    write_fct(&mut fct, &r.records).unwrap();
    write_pfc(&mut pfc, &r.pfc_events).unwrap();
    (String::from_utf8(fct).unwrap(), String::from_utf8(pfc).unwrap(), r.pfc_events.len())
}

fn same_for_1_2_4_threads(cc: &str, fabric: &str) -> usize {
    let one = files(scenario(cc, fabric, 1));
    let mut probe = Runner::new(scenario(cc, fabric, 2)).unwrap();
    probe.run_to_end();
    let probed = probe.results().unwrap();
    if fabric.contains("iofd") {
        let m = &probed.mechanism_counters;
        assert!(m.get("deflections") > 0, "{cc} {fabric}: IOFD should deflect ({m:?})");
    }
    for threads in [2, 4] {
        let many = files(scenario(cc, fabric, threads));
        assert!(one.0 == many.0, "{cc} {fabric}: FCT file differs with {threads} threads");
        assert!(one.1 == many.1, "{cc} {fabric}: PFC file differs with {threads} threads");
    }
    one.2
}

#[test]
fn lossless_runs_are_the_same_for_any_thread_count() {
    for cc in ["none", "dcqcn", "hpcc"] {
        let pfc = same_for_1_2_4_threads(cc, "buffer_mb = 0.5");
        assert!(pfc > 0, "{cc}: the incast should pause links ({pfc} PFC events)");
    }
}

#[test]
fn input_fair_arbitration_and_per_port_buffers_are_the_same_for_any_thread_count() {
    // The arbiter is per egress port, the port buffers per switch: both stay
    // inside a partition. Lossless per-port buffers pause (several inputs at a time).
    for fabric in [
        "buffer_mb = 0.5\negress_arbitration = \"input_fair\"",
        "buffer_mb = 0.5\nbuffer_model = \"per_port\"",
        "buffer_mb = 0.5\nbuffer_model = \"per_port\"\negress_arbitration = \"input_fair\"",
        "buffer_mb = 0.5\nbuffer_model = \"egress_dynamic\"\ndt_alpha = 0.5",
    ] {
        let pfc = same_for_1_2_4_threads("dcqcn", fabric);
        assert!(pfc > 0, "{fabric}: the incast should pause links");
    }
}

#[test]
fn blitz_with_iofd_is_the_same_for_any_thread_count() {
    // DASR's receiver sets are per receiving NIC, IOFD's deflection and re-sequencing per
    // switch: both stay inside a partition. The 0.5 MB buffer makes the re-sequencer's
    // released packets wait for MMU room (before the fix they were dropped: docs/blitz.md).
    let pfc = same_for_1_2_4_threads("blitz", "buffer_mb = 0.5\n[fabric.iofd]\nmax_deflections = 2\nthreshold = 5000");
    assert!(pfc > 0, "the incast should pause links");
    let nonminimal = "buffer_mb = 0.5\n[fabric.iofd]\nthreshold = 5000\npaths = \"nonminimal\"";
    assert!(same_for_1_2_4_threads("blitz", nonminimal) > 0);
}

#[test]
fn the_tenant_defense_is_the_same_for_any_thread_count() {
    // Tenant-keyed CC states and line-rate start budgets live at the sending NICs. Each
    // tenant has hosts in every pod, so its flows cross the cut.
    let tenants = "[[tenants]]\nname = \"a\"\nhosts = [0, 2, 4, 6, 8, 10, 12, 14]\n\
        [[tenants]]\nname = \"b\"\nhosts = [1, 3, 5, 7, 9, 11, 13, 15]\n";
    let toml = |threads: u32| {
        let text = format!(
            "seed = 4\n{tenants}[topology]\nkind = \"fat_tree\"\nk = 4\n\
             [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"300us\"\ntenant = \"a\"\n\
             [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"300us\"\ntenant = \"b\"\n\
             [fabric]\ncc = \"dcqcn\"\ndefense = \"tenant\"\n"
        );
        let mut s = Scenario::from_toml(&text, Path::new("tenants.toml")).unwrap();
        s.config.threads = Some(threads);
        s
    };
    let one = files(toml(1));
    assert!(one.0.lines().count() > 10);
    for threads in [2, 4] {
        assert!(one == files(toml(threads)), "tenant defense: files differ with {threads} threads");
    }
}

#[test]
fn attack_applications_are_the_same_for_any_thread_count() {
    // The CC-attack paper's attacker tenant: a staggered `recreate` transfer opens a fresh QP per chunk
    // while running (a slot of its own partition; the receiver's half is made in the
    // receiver's partition from the first packet), and a shuffled overlay over one host of
    // each pod reuses a QP per (member, successor). The victim tenant runs WebSearch flows.
    // Under the tenant defense every QP of a tenant state at a NIC paces as one, and the
    // receivers meter each tenant (the tenant travels in the packet).
    let toml = |cc: &str, defense: &str, threads: u32| {
        let text = format!(
            "seed = 9\n[[tenants]]\nname = \"attacker\"\nhosts = [1, 5, 9, 13]\n\
             [[tenants]]\nname = \"victim\"\nhosts = [0, 2, 3, 4, 6, 7, 8, 10, 11, 12, 14, 15]\n\
             [topology]\nkind = \"fat_tree\"\nk = 4\n\
             [[traffic]]\nkind = \"staggered_qps\"\nsrc = 5\ndst = 9\nqps = 8\nsize = 3000000\n\
             chunk = 40000\ninterval = \"3us\"\npolicy = \"recreate\"\ntenant = \"attacker\"\n\
             [[traffic]]\nkind = \"shuffled_overlay\"\nhosts = [1, 5, 9, 13]\nchunk = 20000\n\
             interval = \"10us\"\nuntil = \"200us\"\ntenant = \"attacker\"\n\
             [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.4\nduration = \"300us\"\n\
             tenant = \"victim\"\n\
             [fabric]\ncc = \"{cc}\"\ndefense = \"{defense}\"\nrate_sample_interval = \"5us\"\n"
        );
        let mut s = Scenario::from_toml(&text, Path::new("attacks.toml")).unwrap();
        s.config.threads = Some(threads);
        s
    };
    for (cc, defense) in [("dcqcn", "none"), ("hpcc", "tenant")] {
        let run = |threads| {
            let s = toml(cc, defense, threads);
            let flows = s.flows.len();
            let mut run = Runner::new(s).expect("builds");
            assert_eq!(run.run_to_end(), StopReason::Finished, "{cc}: {threads} threads");
            let r = run.results().expect("bytes conserved");
            assert_eq!(r.records.len(), flows);
            let mut fct = Vec::new();
            write_fct(&mut fct, &r.records).unwrap();
            // Rate rows name a QP opened while running by its rank among those opened
            // while running (`sim::qp_names`), not by its partition's slot.
            let rates: Vec<_> =
                r.rate_samples.iter().map(|s| (s.time, s.qp, s.flow, s.src, s.dst, s.rate, s.throughput)).collect();
            let opened_running = r.rate_samples.iter().filter(|s| s.qp.idx() >= flows).count();
            assert!(opened_running > 100, "{cc}: {opened_running} rate rows of QPs opened while running");
            (String::from_utf8(fct).unwrap(), format!("{:?}", r.tenant_bins), r.counters.qps_opened, rates)
        };
        let one = run(1);
        // The 75 recreate chunks each opened a QP while running, and the overlay one per
        // (member, successor) pair: 8 with shifts 1 and 3 (those coprime to 4).
        assert!(one.2 >= 75 + 8, "{cc}: {} QPs opened", one.2);
        assert!(one.1.contains("TenantBin"), "{cc}: the meter should have bins");
        for threads in [2, 4] {
            let many = run(threads);
            assert!(one.0 == many.0, "{cc}/{defense}: FCT file differs with {threads} threads");
            assert!(one.1 == many.1, "{cc}/{defense}: tenant meter differs with {threads} threads");
            assert!(one.3 == many.3, "{cc}/{defense}: rate rows differ with {threads} threads");
        }
    }
}

#[test]
fn link_failures_are_the_same_for_any_thread_count() {
    // An aggregation-core link (between partitions with 4 threads) fails and comes back, and
    // host 5's only link fails for good: packets lost, routes recomputed, flows given up.
    let toml = |threads: u32| {
        let text = "seed = 6\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
            [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"400us\"\n\
            [[traffic]]\nkind = \"incast\"\nsenders = [8, 9, 10, 11, 12, 13, 14, 15]\nreceiver = 0\nsize = 1000000\n\
            start = \"50us\"\n\
            [[events]]\nkind = \"link_down\"\nat = \"100us\"\na = 24\nb = 32\n\
            [[events]]\nkind = \"link_up\"\nat = \"250us\"\na = 24\nb = 32\n\
            [[events]]\nkind = \"link_down\"\nat = \"150us\"\na = 5\nb = 18\n\
            [fabric]\ncc = \"dcqcn\"\nrto = \"200us\"\n";
        let mut s = Scenario::from_toml(text, Path::new("fail.toml")).unwrap();
        s.config.threads = Some(threads);
        s
    };
    let run = |threads| {
        let mut r = Runner::new(toml(threads)).unwrap();
        r.run_to_end();
        let res = r.results().unwrap();
        let gone: Vec<u32> = res.unreachable.iter().map(|u| u.flow).collect();
        let (mut fct, mut pfc) = (Vec::new(), Vec::new());
        write_fct(&mut fct, &res.records).unwrap();
        write_pfc(&mut pfc, &res.pfc_events).unwrap();
        (fct, pfc, gone, res.mechanism_count("link_failures"), res.counters.link_down_losses)
    };
    let one = run(1);
    assert!(!one.2.is_empty() && one.3 == 2 && one.4 > 0, "given up {:?}, failures {}, lost {}", one.2, one.3, one.4);
    for threads in [2, 4] {
        let many = run(threads);
        assert!(one.0 == many.0, "link failures: FCT file differs with {threads} threads");
        assert!(one.1 == many.1, "link failures: PFC file differs with {threads} threads");
        assert_eq!((&one.2, one.3, one.4), (&many.2, many.3, many.4), "{threads} threads");
    }
}

#[test]
fn lossy_runs_with_retransmission_are_the_same_for_any_thread_count() {
    // Two incasts across pods into small lossy buffers: drops, go-back-N, timeouts.
    let toml = |threads: u32| {
        let text = "seed = 5\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
            [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\nreceiver = 0\n\
            size = 100000\nstart = \"10us\"\n\
            [[traffic]]\nkind = \"incast\"\nsenders = [0, 1, 2, 3]\nreceiver = 12\nsize = 100000\nstart = \"10us\"\n\
            [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 0.3\nlossless = false\nrto = \"50us\"\n";
        let mut s = Scenario::from_toml(text, Path::new("lossy.toml")).unwrap();
        s.config.threads = Some(threads);
        s
    };
    let mut run = Runner::new(toml(1)).unwrap();
    run.run_to_end();
    assert!(run.results().unwrap().counters.drops > 1000, "the incasts overflow the buffers");
    let one = files(toml(1));
    for threads in [2, 4] {
        assert!(one == files(toml(threads)), "lossy: files differ with {threads} threads");
    }
    // The same with per-port buffers and input-fair arbitration.
    let per_port = |threads: u32| {
        let mut s = toml(threads);
        s.config.buffer_model = rdmalab::fabric::BufferModel::PerPort;
        s.config.egress_arbitration = rdmalab::fabric::EgressArbitration::InputFair;
        s
    };
    let one = files(per_port(1));
    for threads in [2, 4] {
        assert!(one == files(per_port(threads)), "lossy per-port: files differ with {threads} threads");
    }
}

#[test]
fn a_long_quiet_stretch_between_flows_is_not_a_stall() {
    // Two flows across pods, 300 ms apart: the windows skip the gap, and the run finishes.
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n[[traffic]]\nkind = \"flows\"\nflows = [\
        { src = 0, dst = 15, size = 100000 }, { src = 15, dst = 0, size = 100000, start = \"300ms\" }]\n";
    let mut s = Scenario::from_toml(toml, Path::new("gap.toml")).unwrap();
    s.config.threads = Some(2);
    let mut run = Runner::new(s).unwrap();
    assert_eq!(run.run_to_end(), StopReason::Finished);
    assert_eq!(run.results().unwrap().records.len(), 2);
}

#[test]
fn a_run_that_cannot_finish_stops_as_stalled() {
    // Lossy, no retransmission: the incast's drops are never repaired while DCQCN's timers
    // keep re-arming. The driver's no-progress guard ends it (a partition cannot tell alone).
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n[[traffic]]\nkind = \"incast\"\n\
        senders = [4, 5, 6, 7, 8, 9, 10, 11]\nreceiver = 0\nsize = 200000\n\
        [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 0.2\nlossless = false\nrto = \"none\"\n";
    let mut s = Scenario::from_toml(toml, Path::new("stuck.toml")).unwrap();
    s.config.threads = Some(2);
    let mut run = Runner::new(s).unwrap();
    assert_eq!(run.run_to_end(), StopReason::Stalled);
    let r = run.results().unwrap();
    assert!(r.counters.drops > 0 && r.records.len() < 8);
    assert!(r.stall_cause.unwrap().contains("unfinished"));
}

#[test]
fn the_automatic_map_keeps_pods_whole_and_flows_cross_it() {
    let s = scenario("dcqcn", "", 2);
    let (map, parts) = auto_map(&s.topology, 2);
    assert_eq!(parts, 2);
    // Hosts 0..8 are pods 0 and 1, hosts 8..16 pods 2 and 3 (the builder's numbering).
    assert!((0..8).all(|h| map[h] == map[0]) && (8..16).all(|h| map[h] == map[8]) && map[0] != map[8]);
    assert_eq!(lookahead(&s.topology, &map).unwrap(), Time::from_us(1));
    let crossing = s.flows.iter().filter(|f| map[f.src.idx()] != map[f.dst.idx()]).count();
    assert!(crossing * 4 > s.flows.len(), "{crossing} of {} flows cross the cut", s.flows.len());
    let run = ParallelRun::new(s, 4).unwrap();
    assert_eq!(run.partitions(), 4);
}

/// A scenario of host applications on the k = 4 fat tree with WebSearch background flows
/// (`extra`: the applications' own sections), built for `threads`, cut by host counts (pods
/// whole: the pairs these tests name cross that cut whatever the background's load).
fn app_scenario(seed: u64, extra: &str, threads: u32) -> Scenario {
    let text = format!(
        "seed = {seed}\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.3\nduration = \"200us\"\n{extra}\n"
    );
    let mut s = Scenario::from_toml(&text, Path::new("apps.toml")).unwrap_or_else(|e| panic!("{e}"));
    s.config.threads = Some(threads);
    s.config.partition_map = (threads > 1).then(|| auto_map(&s.topology, threads).0);
    s
}

/// The FCT file and every application table of a run (how it stopped, and what the hosts
/// sent and the ports carried, included: a half running where it does not belong would
/// send packets that never arrive).
fn app_files(s: Scenario) -> (String, String) {
    let mut run = Runner::new(s).expect("builds");
    let stop = run.run_to_end();
    let r = run.results().expect("bytes conserved");
    let mut fct = Vec::new();
    write_fct(&mut fct, &r.records).unwrap();
    let c = &r.counters;
    let sent = (c.data_packets_sent, c.payload_bytes_sent, c.payload_bytes_delivered, c.packet_hops, c.drops, c.nacks);
    let tables = format!(
        "{stop:?} at {:?}\nmessages {:?}\nchunks {:?}\npaths {:?}\nwrs {:?}\napps {:?}\nbatches {:?}\ndrum {:?}\nwqes {}\n\
         sent, delivered, hops, drops, nacks {sent:?}",
        r.end_time,
        r.mp_messages,
        r.mp_chunks,
        r.mp_paths,
        r.mp_wrs,
        r.host_apps,
        r.host_batches,
        r.drum_rows,
        r.wqes_processed
    );
    (String::from_utf8(fct).unwrap(), tables)
}

/// Runs `extra` with 1, 2 and 4 threads, each (src, dst) of `pairs` split by the 2- and
/// 4-partition maps; returns the one-thread tables.
fn apps_same_for_1_2_4_threads(what: &str, seed: u64, extra: &str, pairs: &[(usize, usize)]) -> String {
    let topo = app_scenario(seed, extra, 1).topology;
    for parts in [2, 4] {
        let (map, _) = auto_map(&topo, parts);
        for &(src, dst) in pairs {
            assert_ne!(map[src], map[dst], "{what}: {src} -> {dst} should cross the {parts}-partition cut");
        }
    }
    let one = app_files(app_scenario(seed, extra, 1));
    for threads in [2, 4] {
        let many = app_files(app_scenario(seed, extra, threads));
        assert!(one.0 == many.0, "{what}: FCT file differs with {threads} threads");
        assert!(one.1 == many.1, "{what}: tables differ with {threads} threads:\n{}\n{}", one.1, many.1);
    }
    one.1
}

#[test]
fn multipath_partition_is_the_same_for_any_thread_count() {
    // The data-partition paper's split: each connection's sender half (chunking, refill on
    // completions) in the sender's partition, its receiver half (placement by offset, from
    // the chunk header that crosses the cut in the packet) in the receiver's.
    let mp = "[[traffic]]\nkind = \"multipath\"\nqps = 4\nchunk_size = 32768\nsport_policy = \"distinct_paths\"\n\
              messages = [{ src = 0, dst = 9, size = 1048576 }, { src = 13, dst = 6, size = 600000, start = \"20us\" },\n\
              { src = 0, dst = 9, size = 300000, start = \"50us\" }]\n[fabric]\ncc = \"dcqcn\"\n";
    let tables = apps_same_for_1_2_4_threads("multipath", 11, mp, &[(0, 9), (13, 6)]);
    assert!(tables.contains("recv_done: Some"), "every message should be placed:\n{tables}");
}

#[test]
fn virtuoso_is_the_same_for_any_thread_count() {
    // The Virtuoso paper: the sender half probes and splits by path, the receiver half places writes
    // and answers reads on its own reverse QPs, which close when the sender's close reaches
    // it (a path's propagation delay later; checked in `sim::parallel::apps`'s unit test).
    let v = "[[traffic]]\nkind = \"multipath\"\nsplit = \"virtuoso\"\npath_by = \"sport\"\nqps = 4\n\
             sport_policy = \"distinct_paths\"\n\
             messages = [{ src = 1, dst = 10, size = 2000000 }, { src = 14, dst = 3, size = 500000, verb = \"read\" },\n\
             { src = 1, dst = 10, size = 100000, start = \"40us\" }]\n[fabric]\ncc = \"dcqcn\"\n";
    let tables = apps_same_for_1_2_4_threads("virtuoso", 12, v, &[(1, 10), (14, 3)]);
    assert!(tables.contains("Read") && !tables.contains("paths []"), "{tables}");
}

#[test]
fn host_applications_are_the_same_for_any_thread_count() {
    // The DRUM paper's closed loops under SHARE: each application, its lock and its host's
    // pollers stay on its host; its batches reach the other partition only as packets.
    let apps = "[host]\nmechanism = \"share\"\nshare_ratio = 2\n\
                [[app]]\nhost = 2\ndst = 12\ncount = 3\nsize = [512, 4096]\nwr_num = [1, 8]\nthink = \"1us\"\ntotal_bytes = 200000\n\
                [[app]]\nhost = 11\ndst = 4\nsize = 2048\nwr_num = 4\ntotal_bytes = 100000\n";
    let tables = apps_same_for_1_2_4_threads("host apps", 13, apps, &[(2, 12), (11, 4)]);
    assert!(tables.contains("BatchRecord"), "{tables}");
}

#[test]
fn drum_with_local_control_is_the_same_for_any_thread_count() {
    // DRUM's schedulers are per host (release, poll, control period); local control solves
    // on the host's own measurements.
    let drum = "[host]\nmechanism = \"drum\"\n[drum]\nperiod = \"20us\"\n\
                [[app]]\nhost = 0\ndst = 15\ncount = 2\nsize = 1024\nwr_num = [1, 16]\ntotal_bytes = 300000\n\
                [[app]]\nhost = 0\ndst = 7\nsize = 4096\nwr_num = 2\ntotal_bytes = 150000\n\
                [[app]]\nhost = 9\ndst = 1\nsize = 2048\nwr_num = 8\ntotal_bytes = 200000\n";
    let tables = apps_same_for_1_2_4_threads("drum", 14, drum, &[(0, 15), (9, 1)]);
    assert!(tables.contains("DrumRow"), "{tables}");
}

#[test]
fn drum_least_served_is_the_same_for_any_thread_count() {
    // `select = "least_served"` re-chooses the slot holders at every release: with k = 2
    // the three applications of host 0 hand the two dedicated QPs round.
    let drum = "[host]\nmechanism = \"drum\"\n[drum]\nperiod = \"20us\"\nk = 2\nselect = \"least_served\"\n\
                [[app]]\nhost = 0\ndst = 15\ncount = 3\nsize = [1024, 65536]\nwr_num = [1, 16]\ntotal_bytes = 600000\n\
                [[app]]\nhost = 9\ndst = 1\nsize = 2048\nwr_num = 8\ntotal_bytes = 200000\n";
    let tables = apps_same_for_1_2_4_threads("drum_ls", 14, drum, &[(0, 15), (9, 1)]);
    assert!(tables.contains("DrumRow"), "{tables}");
}

#[test]
fn mechanisms_not_split_yet_are_refused_by_name() {
    // (Samples, the trace and the queue monitor are split: tests/parallel_observers.rs.)
    let refused = |extra: &str, name: &str| {
        let toml = format!("[topology]\nkind = \"fat_tree\"\nk = 4\n{extra}\n");
        let mut s = Scenario::from_toml(&toml, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}"));
        s.config.threads = Some(2);
        let err = Runner::new(s).unwrap_err().to_string();
        assert!(err.contains("--threads > 1 does not support") && err.contains(name), "{err}");
    };
    let app = "[[app]]\nhost = 0\ndst = 6\nsize = 1024\nwr_num = 1\ntotal_bytes = 4096";
    for control in ["out_of_band", "in_band"] {
        let drum = format!("[host]\nmechanism = \"drum\"\n[drum]\ncontrol = \"{control}\"\n{app}");
        refused(&drum, "DRUM's network-wide control");
    }
    let virtuoso = "[[traffic]]\nkind = \"multipath\"\nsplit = \"virtuoso\"\npath_by = \"sport\"\nqps = 2\n\
                    messages = [{ src = 0, dst = 9, size = 100000 }]\n[fabric]\nretry_limit = 7";
    refused(virtuoso, "Virtuoso connections with fabric.retry_limit");
}

#[test]
fn a_user_partition_map_gives_the_same_files() {
    // Any cut works, even one that separates hosts from their edge switch: nodes dealt to
    // three partitions by id (k = 4 fat tree: 16 hosts and 20 switches).
    let dir = std::env::temp_dir().join(format!("rdmalab-partition-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let map: String = (0..36).map(|v| format!("{v} {}\n", v % 3)).collect();
    std::fs::write(dir.join("map.txt"), format!("# node partition\n{map}")).unwrap();
    let toml = |extra: &str| {
        format!(
            "seed = 5\n{extra}\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
             [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.6\nduration = \"300us\"\n\
             [fabric]\ncc = \"dcqcn\"\n"
        )
    };
    let load = |extra: &str| Scenario::from_toml(&toml(extra), &dir.join("map_run.toml"));
    let mapped = load("threads = 2\npartition_map = \"map.txt\"").expect("valid map");
    assert_eq!(mapped.config.partition_map.as_ref().map(|m| m.len()), Some(36));
    let one = files(load("threads = 1").unwrap());
    assert!(one == files(mapped), "a user map must give the files of one partition");
    let sequential = load("partition_map = \"map.txt\"").unwrap().simulation().unwrap();
    assert!(sequential.warnings().iter().any(|w| w.contains("partition_map") && w.contains("not used")));
    std::fs::write(dir.join("map.txt"), "0 0\n").unwrap();
    let err = load("threads = 2\npartition_map = \"map.txt\"").unwrap_err().to_string();
    assert!(err.contains("map.txt") && err.contains("node 1 has no partition"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The textbook PFC deadlock (tests/deadlock.rs): five switches in a ring, a host on each,
/// every host sending to the one two switches on, a small buffer and no CC; `threads`
/// partitions (the automatic map puts each switch with its host, so the cycle crosses
/// every cut).
pub(crate) fn ring_deadlock(threads: u32, tweak: impl Fn(&mut rdmalab::sim::SimConfig)) -> Runner {
    use rdmalab::sim::SimConfig;
    use rdmalab::topology::Topology;
    use rdmalab::workload::FlowSpec;
    use rdmalab::{NodeId, Rate};
    let n = 5u32;
    let switches: Vec<NodeId> = (n..2 * n).map(NodeId).collect();
    let mut topo = Topology::new(2 * n as usize, &switches);
    for i in 0..n {
        topo.add_link(NodeId(i), NodeId(n + i), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
    }
    for i in 0..n {
        topo.add_link(NodeId(n + i), NodeId(n + (i + 1) % n), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
    }
    let flows: Vec<FlowSpec> =
        (0..n).map(|i| FlowSpec::new(NodeId(i), NodeId((i + 2) % n), 10_000_000, Time::ZERO)).collect();
    let mut cfg = SimConfig { buffer_bytes: 256 * 1024, ecn: None, threads: Some(threads), ..SimConfig::default() };
    tweak(&mut cfg);
    let run = Runner::new(Scenario::new(topo, flows, cfg)).unwrap();
    if threads > 1 {
        let Runner::Many(p) = &run else { panic!("partitions expected") };
        assert_eq!(p.partitions(), threads as usize);
    }
    run
}

/// The stop reason, the first deadlock and the count, the end time, the FCT and PFC files
/// and the ports' counters (their paused time closed when the run stopped) of a run.
fn deadlock_outcome(mut run: Runner) -> (StopReason, String, u64, Time, String, String, Vec<PortCounters>) {
    let reason = run.run_to_end();
    let r = run.results().unwrap();
    let (mut fct, mut pfc) = (Vec::new(), Vec::new());
    write_fct(&mut fct, &r.records).unwrap();
    write_pfc(&mut pfc, &r.pfc_events).unwrap();
    let (fct, pfc) = (String::from_utf8(fct).unwrap(), String::from_utf8(pfc).unwrap());
    (reason, format!("{:?}", r.deadlock), r.deadlocks, r.end_time, fct, pfc, r.ports)
}

#[test]
fn a_deadlock_across_partitions_is_found_as_in_one_simulation() {
    // The cycle runs through every partition; the merged wait-for graph finds it at the
    // same simulated time, with the same hops, as one simulation in the same order.
    let one = deadlock_outcome(ring_deadlock(1, |_| {}));
    assert_eq!(one.0, StopReason::PfcDeadlock);
    assert!(one.1.contains("cycle"), "{}", one.1);
    assert!(one.6.iter().any(|p| p.paused_ps > 0), "the ring's ports are paused when it stops");
    for threads in [2, 4] {
        let many = deadlock_outcome(ring_deadlock(threads, |_| {}));
        assert_eq!(one, many, "{threads} threads");
    }
    // Going on past it (`OnDeadlock::Continue`) to a stop time: the same count and files.
    let go_on = |c: &mut rdmalab::sim::SimConfig| {
        c.on_deadlock = rdmalab::sim::OnDeadlock::Continue;
        c.stop_time = Time::from_ms(4);
    };
    let one = deadlock_outcome(ring_deadlock(1, go_on));
    assert_eq!((one.0, one.2), (StopReason::StopTime, 1));
    assert_eq!(one, deadlock_outcome(ring_deadlock(4, go_on)));
}

#[test]
fn a_run_that_never_gets_unstuck_stops_as_stalled_as_one_simulation_does() {
    // The ring with a deadlock timeout longer than the run can go: retransmission timeouts
    // keep firing into paused queues, so events never run out, and only the stall watchdog
    // can end the run. The driver runs one simulation's checks on the whole run's progress,
    // so it stops at the same time, for the same cause, as with one thread.
    let rto = |c: &rdmalab::sim::SimConfig| c.rto.is_some();
    assert!(rto(&rdmalab::sim::SimConfig::default()), "the timeouts are what keep the stuck run busy");
    let outcome = |threads| {
        let mut run = ring_deadlock(threads, |c| c.deadlock_timeout = Time::from_ms(10_000));
        assert_eq!(run.run_to_end(), StopReason::Stalled, "{threads} threads");
        let r = run.results().unwrap();
        assert!(r.records.len() < 5, "a deadlocked ring cannot finish every flow");
        assert_eq!(r.deadlocks, 0);
        (r.stall_cause.expect("a stall names its cause"), r.end_time, r.records.len())
    };
    let one = outcome(1);
    assert!(one.0.starts_with("no payload byte delivered for"), "{}", one.0);
    // A stall window (100 ms and twice the links' delays) after the last progress at the
    // latest, two after it at most; not forever.
    assert!(one.1 > Time::from_ms(100) && one.1 < Time::from_ms(300), "{:?}", one.1);
    assert_eq!(outcome(2), one);
    assert_eq!(outcome(4), one);
}

#[test]
fn infiniband_runs_are_the_same_for_any_thread_count() {
    // Credits cross the cut as flow-control packets on the wires; the incast stalls senders
    // on credits (4 MTUs of VL buffer) instead of pausing them.
    let fabric = "link_layer = \"infiniband\"\nib_vl_buffer = 8192";
    let run = |threads| {
        let mut run = Runner::new(scenario("none", fabric, threads)).expect("builds");
        assert_eq!(run.run_to_end(), StopReason::Finished);
        let r = run.results().expect("bytes conserved");
        let mut fct = Vec::new();
        write_fct(&mut fct, &r.records).unwrap();
        let stalls: Vec<u64> = r.ports.iter().map(|p| p.credit_stall_ps).collect();
        assert!(r.pfc_events.is_empty() && r.counters.drops == 0);
        (fct, stalls, r.counters.packet_hops)
    };
    let one = run(1);
    assert!(one.1.iter().sum::<u64>() > 0, "the incast should stall on credits");
    for threads in [2, 4] {
        let many = run(threads);
        assert!(one.0 == many.0, "FCT file differs with {threads} threads");
        assert_eq!(one.1, many.1, "credit stalls differ with {threads} threads");
        assert_eq!(one.2, many.2, "packet hops differ with {threads} threads");
    }
}
