//! The parallel engine's event order (`SimConfig::threads`, `sim::order`): ties at equal time
//! broken by (origin node, its own counter) instead of one global counter.
//!
//! What is checked here: the order changes only which of two simultaneous events runs
//! first, never the physics (a lone flow's FCT is the closed form's in both orders); runs
//! are reproducible bit for bit; every flow completes with bytes conserved on a loaded fat
//! tree; and a lone `Simulation` refuses more than one thread (`sim::parallel` runs those). Fidelity against
//! the reference under this order is `bench/validate.py --threads 1` (docs/validation.md).

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

use crate::fixtures;

fn loaded_fat_tree(cc: &str, threads: Option<u32>) -> Scenario {
    let toml = format!(
        "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.6\nduration = \"1ms\"\n\
         [fabric]\ncc = \"{cc}\"\n"
    );
    let mut s = Scenario::from_toml(&toml, Path::new("order.toml")).expect("valid scenario");
    s.config.threads = threads;
    s
}

fn finish(s: Scenario) -> Results {
    fixtures::run_finished(s)
}

fn fcts(r: &Results) -> Vec<(u32, u64)> {
    let mut v: Vec<_> = r.records.iter().map(|x| (x.flow, x.fct.0)).collect();
    v.sort_unstable();
    v
}

#[test]
fn a_lone_flow_is_the_same_in_both_orders() {
    // Across a k = 4 fat tree (6 links): nothing contends, so the tie order cannot matter.
    for size in [1u64, 1000, 1001, 250_000] {
        let mut out = Vec::new();
        for threads in [None, Some(1)] {
            let topo = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::from_ns(1000)).unwrap();
            let cfg = SimConfig { threads, ..SimConfig::default() };
            let flow = FlowSpec::new(NodeId(0), NodeId(15), size, Time::from_us(3));
            let mut sim = Simulation::new(topo, vec![flow], cfg).unwrap();
            assert_eq!(sim.run_to_end(), StopReason::Finished);
            out.push(sim.results().unwrap().records[0].fct);
        }
        assert_eq!(out[0], out[1], "size {size}");
    }
}

#[test]
fn the_origin_order_is_reproducible_and_conserves_bytes() {
    for cc in ["dcqcn", "hpcc"] {
        let a = finish(loaded_fat_tree(cc, Some(1)));
        let b = finish(loaded_fat_tree(cc, Some(1)));
        assert!(a.records.len() > 30, "{cc}: a loaded run ({} flows)", a.records.len());
        assert_eq!(a.records.len(), a.flows_total);
        assert_eq!(fcts(&a), fcts(&b), "{cc}");
        assert_eq!(a.counters.events, b.counters.events);
        assert_eq!(a.counters.payload_bytes_sent, a.counters.payload_bytes_delivered);
        assert_eq!(a.pfc_events.len(), b.pfc_events.len());
        // Same flows as the FIFO run, which breaks ties differently: the orders differ in
        // event counts only where simultaneous events were reordered.
        let fifo = finish(loaded_fat_tree(cc, None));
        let ids = |r: &Results| fcts(r).into_iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(&a), ids(&fifo), "{cc}");
    }
}

#[test]
fn a_lone_simulation_refuses_more_than_one_thread_by_name() {
    for n in [0, 2, 16] {
        let err = loaded_fat_tree("dcqcn", Some(n)).simulation().unwrap_err().to_string();
        assert!(err.contains("threads"), "{n}: {err}");
    }
    let toml = "threads = 4\n[topology]\nkind = \"star\"\nhosts = 2\n";
    let err = Scenario::from_toml(toml, Path::new("t.toml")).unwrap().simulation().unwrap_err().to_string();
    assert!(err.contains("threads") && err.contains("Runner"), "{err}");
}

#[test]
fn rate_sampling_follows_each_flow_from_its_start_in_both_orders() {
    // The origin order sets up every flow's QP slot at the start; the sampler must still pick
    // a flow up at the first sample at or after its start (not before), as in FIFO order.
    let every = Time::from_us(10);
    for threads in [None, Some(1)] {
        let mut s = loaded_fat_tree("dcqcn", threads);
        s.config.rate_sample_interval = Some(every);
        let flows = s.flows.clone();
        let r = finish(s);
        let mut first = vec![Time::MAX; flows.len()];
        for row in &r.rate_samples {
            let f = &flows[row.flow as usize];
            assert_eq!((row.src, row.dst), (f.src, f.dst), "{threads:?}: a row names its flow");
            first[row.flow as usize] = first[row.flow as usize].min(row.time);
        }
        for (i, f) in flows.iter().enumerate() {
            let due = Time(f.start.0.div_ceil(every.0).max(1) * every.0);
            assert!(first[i] == due || (f.start == due && first[i] == due + every), "{threads:?}: flow {i}");
        }
    }
}

#[test]
fn a_link_failure_runs_in_the_origin_order() {
    // Flow slots exist from the start in the origin order (placeholders until their flow
    // starts); a failure and its reroute must leave every flow to complete, as in FIFO.
    let toml = "seed = 2\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
        [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.3\nduration = \"500us\"\n\
        [[events]]\nkind = \"link_down\"\nat = \"100us\"\na = 16\nb = 24\n";
    for threads in [None, Some(1)] {
        let mut s = Scenario::from_toml(toml, Path::new("f.toml")).expect("valid scenario");
        s.config.threads = threads;
        let total = s.flows.len();
        let r = finish(s);
        assert_eq!(r.records.len() + r.unreachable.len(), total, "{threads:?}");
        // An edge-aggregation link: every host keeps a route, so nothing is given up.
        assert_eq!(r.unreachable.len(), 0, "{threads:?}: {:?}", r.unreachable);
        assert_eq!(r.mechanism_count("link_failures"), 1);
    }
}
