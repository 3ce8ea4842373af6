//! How the parallel engine cuts a scenario. The map balances the partitions'
//! expected work, not their host counts (`sim/parallel/balance.rs`), and `auto` cuts only
//! where the cut is expected to pay (`sim/parallel/estimate.rs`; `docs/parallel.md`, "When
//! `auto` cuts").

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::{auto_map, lookahead, work_map, Estimate, ParallelRun, Runner};
use rdmalab::sim::StopReason;

use super::parallel::scenario;

/// The largest partition's share of the events, and the FCT records, of `s` cut by `map`.
fn largest_share(s: &Scenario, map: Vec<u16>) -> (f64, Vec<String>) {
    let mut run = ParallelRun::with_map(s.clone(), map).expect("builds");
    assert_eq!(run.run_to_end(), StopReason::Finished);
    let events = run.events_per_partition();
    let share = *events.iter().max().unwrap() as f64 / events.iter().sum::<u64>() as f64;
    (share, run.results().expect("conserved").records.iter().map(|r| format!("{r:?}")).collect())
}

#[test]
fn the_map_balances_the_partitions_work_not_their_hosts() {
    // Two incasts inside pods 0 and 1 (hosts 0-7), one small flow in pods 2 and 3: cut by
    // host counts, one partition has nearly all the work; cut by expected work, pod 0 is one
    // partition and the rest the other, each with one incast.
    let toml = "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
                [[traffic]]\nkind = \"incast\"\nsenders = [2, 3]\nreceiver = 0\nsize = 100000\n\
                [[traffic]]\nkind = \"incast\"\nsenders = [6, 7]\nreceiver = 4\nsize = 100000\n\
                [[traffic]]\nkind = \"incast\"\nsenders = [9]\nreceiver = 14\nsize = 2000\n\
                [fabric]\ncc = \"dcqcn\"\n";
    let mut s = Scenario::from_toml(toml, Path::new("balance.toml")).unwrap();
    s.config.threads = Some(2);
    let (by_hosts, parts) = auto_map(&s.topology, 2);
    let (by_work, parts_w) = work_map(&s, 2);
    assert_eq!((parts, parts_w), (2, 2));
    assert!((0..4).all(|h| by_work[h] == by_work[0]) && (4..16).all(|h| by_work[h] != by_work[0]), "{by_work:?}");
    let (hosts_share, hosts_records) = largest_share(&s, by_hosts);
    let (work_share, work_records) = largest_share(&s, by_work);
    assert!(hosts_share > 0.9, "cut by host counts: {hosts_share:.3}");
    assert!(work_share < 0.56, "cut by expected work: {work_share:.3}");
    assert_eq!(hosts_records, work_records, "the map changes no result");
}

#[test]
fn the_map_uses_every_partition_even_when_one_host_has_most_of_the_work() {
    // Host 0 receives every byte: half the expected work on one edge switch.
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n\
                [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11]\nreceiver = 0\nsize = 200000\n";
    let s = Scenario::from_toml(toml, Path::new("skew.toml")).unwrap();
    for parts in [2u32, 3, 4, 8] {
        let (map, n) = work_map(&s, parts);
        assert_eq!(n, parts);
        let used: std::collections::BTreeSet<u16> = map.iter().copied().collect();
        assert_eq!(used.len() as u32, parts, "{parts} partitions: {map:?}");
    }
}
/// `auto` cuts only where the cut is expected to pay. The estimate's inputs are checked against
/// what the runs measured (`docs/parallel.md`, "When `auto` cuts"): the 1,024-host case (21.0 M
/// events; cut by expected work, the larger partition ran 50.8 % of them) is cut; a k = 4 fat
/// tree under WebSearch with an incast and two classes (0.6 M events, about 500 a window,
/// against a window's ~100 us) and a k = 8 one (3.7 M events, 0.81x measured at 2 threads) are
/// not; nor is a run of closed-loop applications alone, whose load is not estimated.
#[test]
fn auto_cuts_only_where_the_estimate_says_it_pays() {
    let estimate = |s: &Scenario| {
        let (map, parts) = work_map(s, 2);
        assert_eq!(parts, 2);
        Estimate::new(s, &map, lookahead(&s.topology, &map).unwrap())
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/scenarios/fat_tree_1k_websearch.toml");
    let big_scenario = Scenario::from_file(&path).unwrap();
    let big = estimate(&big_scenario);
    assert!((big.events - 21.0e6).abs() < 0.1 * 21.0e6, "{big:?}");
    assert!((big.largest_share - 0.508).abs() < 0.01, "{big:?}");
    assert!(big.cut_pays(), "{big:?}: {:.2}", big.speed_up());
    let small = estimate(&scenario("dcqcn", "[[fabric.classes]]\npg = 1\nscheduler = \"strict\"", 2));
    assert!(!small.cut_pays(), "{small:?}: {:.2}", small.speed_up());
    let k8 =
        "seed = 9\n[topology]\nkind = \"fat_tree\"\nk = 8\n[[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\n\
              load = 0.5\nduration = \"300us\"\n[fabric]\ncc = \"dcqcn\"\n";
    let medium = estimate(&Scenario::from_toml(k8, Path::new("k8.toml")).unwrap());
    assert!(!medium.cut_pays(), "{medium:?}: {:.2}", medium.speed_up());
    // What the command line runs: the small one whole on any machine, the large one cut
    // wherever there are two cores.
    let mut whole = scenario("dcqcn", "[[fabric.classes]]\npg = 1\nscheduler = \"strict\"", 2);
    whole.config.threads = None; // `auto` decides
    let Runner::One(_) = Runner::auto(whole).unwrap() else {
        panic!("auto should run the small fat tree on one thread");
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chosen = Runner::auto(big_scenario).unwrap();
    assert_eq!(matches!(chosen, Runner::Many(_)), cores > 1, "{}", chosen.describe());
    // Closed-loop applications alone: no estimate of their load, so the run stays whole.
    let apps = "[host]\nmechanism = \"drum\"\n[drum]\ncontrol = \"local\"\n[[app]]\nhost = 0\ndst = 15\nsize = 1024\nwr_num = 4\n";
    let toml = format!("stop_time = \"100us\"\n[topology]\nkind = \"fat_tree\"\nk = 4\n{apps}");
    let only_apps = estimate(&Scenario::from_toml(&toml, Path::new("apps.toml")).unwrap());
    assert!(!only_apps.cut_pays());
    let Runner::One(_) = Runner::auto(Scenario::from_toml(&toml, Path::new("apps.toml")).unwrap()).unwrap() else {
        panic!("auto should run applications alone on one thread");
    };
}

/// A collective makes no flows at setup, yet it is the run's whole load: the map and `auto`'s
/// estimate count each rank's bytes (`balance::transfers`). A ring AllReduce over the hosts of
/// pods 0 and 1 of a k = 4 fat tree: cut by host counts, one partition holds every rank and
/// runs nearly every event; cut by expected work, each pod is in its own partition, and the
/// estimate's largest share is the one the run measures. (Before collectives counted, the
/// estimate saw no work, so `auto` ran the 1,024-GPU ring AllReduce on one thread.)
#[test]
fn a_collective_is_cut_and_estimated_by_its_ranks_bytes() {
    let toml = "seed = 1\n[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\ncc = \"dcqcn\"\n\
                [[collective]]\nname = \"grad\"\nkind = \"allreduce\"\nalgorithm = \"ring\"\n\
                ranks = { hosts = \"0..7\" }\nsize = \"512KiB\"\n";
    let mut s = Scenario::from_toml(toml, Path::new("ring.toml")).unwrap();
    s.config.threads = Some(2);
    let (by_hosts, _) = auto_map(&s.topology, 2);
    let (by_work, parts) = work_map(&s, 2);
    assert_eq!(parts, 2);
    assert!((0..4).all(|h| by_work[h] == by_work[0]) && (4..8).all(|h| by_work[h] != by_work[0]), "{by_work:?}");
    let run = |map: Vec<u16>| {
        let mut run = ParallelRun::with_map(s.clone(), map).expect("builds");
        assert_eq!(run.run_to_end(), StopReason::Finished);
        let events = run.events_per_partition();
        let share = *events.iter().max().unwrap() as f64 / events.iter().sum::<u64>() as f64;
        (share, run.results().expect("conserved").collectives.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>())
    };
    let (hosts_share, hosts_records) = run(by_hosts);
    let (work_share, work_records) = run(by_work.clone());
    assert!(hosts_share > 0.9, "cut by host counts: {hosts_share:.3}");
    assert!(work_share < 0.56, "cut by expected work: {work_share:.3}");
    assert_eq!(hosts_records, work_records, "the map changes no result");
    assert!(!work_records.is_empty() && work_records[0].contains("end: Some"), "{work_records:?}");
    let e = Estimate::new(&s, &by_work, lookahead(&s.topology, &by_work).unwrap());
    assert!(e.events > 0.0 && (e.largest_share - work_share).abs() < 0.03, "{e:?} against {work_share:.3}");
    // The 1,024-GPU ring AllReduce of 1 GiB (4.3 G events, 44 ms simulated: about 100,000 events
    // a window) is cut.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/scenarios/ring_allreduce_1k.toml");
    let ring = Scenario::from_file(&path).unwrap();
    let (map, _) = work_map(&ring, 2);
    let e = Estimate::new(&ring, &map, lookahead(&ring.topology, &map).unwrap());
    assert!(e.cut_pays() && (e.largest_share - 0.5).abs() < 0.01, "{e:?}: {:.2}", e.speed_up());
}
