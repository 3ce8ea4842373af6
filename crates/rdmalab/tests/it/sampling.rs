//! Per-QP rate sampling (`SimConfig::rate_sample_interval`): the samples show DCQCN
//! converging to the fair share, account for every acknowledged byte, cost nothing when
//! off, and never change what the simulation does.

use rdmalab::cc::CcConfig;
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const LINK: Rate = Rate::gbps(100);
/// Long enough never to finish inside a test.
const FOREVER: u64 = 10_000_000_000;

/// `sizes.len()` flows from hosts 1.. into host 0 of a 100G star, all starting at zero.
fn run(sizes: &[u64], cfg: SimConfig) -> Results {
    let topo = builders::star(sizes.len() + 1, LINK, Time::from_us(1)).expect("valid star");
    let flows = sizes.iter().enumerate().map(|(i, &s)| FlowSpec::new(NodeId(i as u32 + 1), NodeId(0), s, Time::ZERO));
    let mut sim = Simulation::new(topo, flows.collect(), cfg).expect("valid scenario");
    let reason = sim.run_to_end();
    assert!(matches!(reason, StopReason::Finished | StopReason::StopTime), "{reason:?}");
    sim.snapshot()
}

fn dcqcn() -> SimConfig {
    SimConfig { cc: CcConfig::from_name("dcqcn").expect("known cc"), ..SimConfig::default() }
}

/// Mean sampled throughput of `flow` over samples taken after `from`, in Gb/s.
fn mean_gbps(r: &Results, flow: u32, from: Time) -> f64 {
    let xs: Vec<f64> =
        r.rate_samples.iter().filter(|s| s.flow == flow && s.time > from).map(|s| s.throughput.0 as f64).collect();
    assert!(!xs.is_empty(), "no samples of flow {flow} after {from}");
    xs.iter().sum::<f64>() / xs.len() as f64 / 1e9
}

#[test]
fn two_dcqcn_flows_sampled_throughputs_converge_to_half_the_bottleneck() {
    let end = Time::from_ms(20);
    let cfg = SimConfig { rate_sample_interval: Some(Time::from_us(10)), stop_time: end, ..dcqcn() };
    let r = run(&[FOREVER, FOREVER], cfg);
    // Two long flows, sampled every 10 us over 20 ms; the second half is judged.
    assert_eq!(r.rate_samples.len(), 2 * 2000);
    let half = Time::from_ms(10);
    let g: Vec<f64> = (0..2).map(|flow| mean_gbps(&r, flow, half)).collect();
    for (flow, g) in g.iter().enumerate() {
        assert!((g - 50.0).abs() <= 5.0, "flow {flow}: {g:.2} Gb/s over the second half, fair share 50");
    }
    // Throughput is payload acknowledged: at most 1000/1048 of the wire (47.7 Gb/s each when
    // shared fairly), so also check the two against each other.
    assert!((g[0] - g[1]).abs() <= 0.1 * (g[0] + g[1]) / 2.0, "unfair: {g:?}");
    for s in &r.rate_samples {
        assert!(s.rate <= LINK && s.throughput <= LINK, "{s:?}");
        assert_eq!((s.src, s.dst), (NodeId(s.flow + 1), NodeId(0)));
    }
    // DCQCN really cut the rates: the CC rate is below line rate after the start.
    assert!(r.rate_samples.iter().filter(|s| s.time > half).all(|s| s.rate < LINK));
}

#[test]
fn sampled_throughput_accounts_for_every_acknowledged_byte() {
    let every = Time::from_us(2);
    let sizes = [300_000, 1_000_000, 40_000];
    let r = run(&sizes, SimConfig { rate_sample_interval: Some(every), ..dcqcn() });
    assert_eq!(r.records.len(), 3);
    for (flow, &size) in sizes.iter().enumerate() {
        let rows: Vec<_> = r.rate_samples.iter().filter(|s| s.flow == flow as u32).collect();
        // Bytes = throughput x interval (exact up to the integer division of each row).
        let bytes: f64 = rows.iter().map(|s| s.throughput.0 as f64 * every.secs_f64() / 8.0).sum();
        assert!((bytes - size as f64).abs() < rows.len() as f64, "flow {flow}: {bytes} of {size} bytes");
        // Rows stop with the flow: the last one is the first sample after its completion.
        let rec = r.records.iter().find(|x| x.flow == flow as u32).unwrap();
        let last = rows.last().unwrap().time;
        let done = rec.start + rec.fct;
        assert!(last >= done && last <= done + every, "flow {flow}: last row at {last}, done at {done}");
    }
    assert!(r.rate_samples.windows(2).all(|w| (w[0].time, w[0].qp) < (w[1].time, w[1].qp)));
}

#[test]
fn sampling_off_yields_no_rows_and_sampling_changes_nothing() {
    let sizes = [200_000, 500_000];
    let off = run(&sizes, dcqcn());
    assert!(off.rate_samples.is_empty() && off.queue_samples.is_empty());
    let queues_only = run(&sizes, SimConfig { queue_sample_interval: Some(Time::from_us(1)), ..dcqcn() });
    assert!(queues_only.rate_samples.is_empty() && !queues_only.queue_samples.is_empty());
    let on = run(
        &sizes,
        SimConfig {
            rate_sample_interval: Some(Time::from_ns(700)),
            queue_sample_interval: Some(Time::from_us(1)),
            ..dcqcn()
        },
    );
    assert!(!on.rate_samples.is_empty());
    // Sampling only reads: every flow completes exactly as without it.
    assert_eq!(on.records, off.records);
}

#[test]
fn a_zero_interval_is_refused() {
    let topo = builders::star(2, LINK, Time::from_us(1)).unwrap();
    let flows = vec![FlowSpec::new(NodeId(1), NodeId(0), 1000, Time::ZERO)];
    let cfg = SimConfig { rate_sample_interval: Some(Time::ZERO), ..SimConfig::default() };
    let err = Simulation::new(topo, flows, cfg).unwrap_err().to_string();
    assert!(err.contains("rate_sample_interval"), "{err}");
}

#[test]
fn link_samples_count_the_bytes_serialized_in_their_interval_never_more_than_the_line_rate() {
    // Two 1 MB flows into host 0 without CC keep its switch port busy for ~168 us. 3.3 us at
    // 100 Gb/s is 41,250 bytes: 39.3 packets of 1,048, so most samples fall mid-packet.
    let every = Time::from_ns(3300);
    let line = 41_250u64;
    let r = run(&[1_000_000, 1_000_000], SimConfig { link_sample_interval: Some(every), ..SimConfig::default() });
    assert!(!r.link_samples.is_empty());
    for &(t, p, bytes) in &r.link_samples {
        assert!(bytes <= line, "port {p:?} sent {bytes} bytes in the 3.3 us ending at {t}, over the line rate");
    }
    // The busy port sends exactly its line rate (to the byte, floor of a fraction) while busy.
    let busiest = r.link_samples.iter().max_by_key(|s| s.2).map(|s| s.1).unwrap();
    let busy: Vec<u64> = r
        .link_samples
        .iter()
        .filter(|s| s.1 == busiest && s.0 > Time::from_us(10) && s.0 < Time::from_us(150))
        .map(|s| s.2)
        .collect();
    assert!(busy.len() > 40 && busy.iter().all(|&b| b + 1 >= line), "{busy:?}");
}
