//! Deterministic traffic generators: Poisson load from a flow-size CDF, incast, and
//! random permutations.
//!
//! Each returns `FlowSpec`s sorted by start time, ties broken by source host id (a stable
//! sort, so flows of one host keep their generation order). Randomness comes from
//! xoshiro256++ seeded with the caller's seed; the Poisson generator gives every host its
//! own stream (successive 2^128-step jumps), so a host's arrivals do not depend on how many
//! draws the other hosts made. The same (inputs, seed) always give the same flows.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::{Rate, Time};
use crate::workload::cdf::SizeCdf;
use crate::workload::FlowSpec;

/// Upper bound on the number of flows a Poisson call may produce (guards against a rate,
/// load and CDF that would make billions of flows by mistake).
pub const MAX_POISSON_FLOWS: f64 = 1e8;

/// Destination port of incast flows (the reference's analysis selects incast by it).
pub const INCAST_DPORT: u16 = 200;

fn check_hosts(field: &str, hosts: &[NodeId], min: usize) -> Result<()> {
    if hosts.len() < min {
        return Err(Error::scenario(field, format!("needs at least {min} hosts, got {}", hosts.len())));
    }
    let mut sorted = hosts.to_vec();
    sorted.sort();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::scenario(field, format!("host {} is listed twice", w[0])));
    }
    Ok(())
}

fn check_size(field: &str, size: u64) -> Result<()> {
    if size == 0 {
        return Err(Error::scenario(field, "flow size must be at least 1 byte"));
    }
    if size > super::MAX_FLOW_BYTES {
        return Err(Error::scenario(field, super::too_large(size)));
    }
    Ok(())
}

/// Sorts by start time, then source id; stable.
fn sorted(mut flows: Vec<FlowSpec>) -> Vec<FlowSpec> {
    flows.sort_by_key(|f| (f.start, f.src));
    flows
}

/// Mean inter-arrival time in ns of one host: `1e9 * avg_size * 8 / (rate * load)`.
fn mean_gap_ns(cdf: &SizeCdf, load: f64, host_rate: Rate) -> Result<f64> {
    if !(load > 0.0 && load <= 1.0) {
        return Err(Error::scenario("poisson.load", format!("must be in (0, 1], got {load}")));
    }
    if host_rate.0 == 0 {
        return Err(Error::scenario("poisson.host_rate", "must be positive"));
    }
    let avg = cdf.mean();
    if avg.is_nan() || avg <= 0.0 {
        return Err(Error::scenario("poisson.cdf", format!("mean flow size must be positive, got {avg}")));
    }
    Ok(1e9 * avg * 8.0 / (host_rate.0 as f64 * load))
}

/// One host's arrivals in `[start, end)`: gaps of `floor(-ln(1-U) * mean)` ns, the first
/// one gap after `start`; destination uniform over the other hosts; size from the CDF.
fn host_arrivals(
    hosts: &[NodeId],
    i: usize,
    cdf: &SizeCdf,
    mean_ns: f64,
    (start, end): (Time, Time),
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<FlowSpec>,
) {
    let mut t = start;
    loop {
        let u: f64 = rng.gen();
        let gap_ns = (-(1.0 - u).ln() * mean_ns) as u64;
        t = Time(t.0.saturating_add(gap_ns.saturating_mul(Time::PS_PER_NS)));
        if t >= end {
            return;
        }
        let j = rng.gen_range(0..hosts.len() - 1);
        let dst = hosts[if j >= i { j + 1 } else { j }];
        let size = cdf.sample(rng.gen::<f64>() * 100.0);
        out.push(FlowSpec::new(hosts[i], dst, size, t));
    }
}

/// Poisson arrivals at every host of `hosts`, each an independent source offering `load`
/// of `host_rate` on average with sizes drawn from `cdf`, during `[start, start +
/// duration)`.
///
/// Like the reference's `traffic_gen.py`: the mean gap is `avg_size * 8 / (host_rate *
/// load)`, each gap is truncated to whole ns, the destination is uniform over the other
/// hosts, sizes are CDF samples (0 becomes 1), and flows get pg 3 and dport 100.
/// **Unlike it, no flow is dropped:** the reference keeps a host's arrival only if the
/// host's next arrival is also inside the window, losing each host's last flow (about 3 %
/// of the load of a 1 ms run); we keep every arrival whose start is inside the window, so
/// the offered load matches `load` also for short windows.
///
/// Errors: fewer than two hosts, a host listed twice, `load` outside (0, 1], zero rate or
/// duration, a CDF of mean 0, a window ending past `Time::MAX`, or more than
/// [`MAX_POISSON_FLOWS`] expected flows.
pub fn poisson(
    hosts: &[NodeId],
    cdf: &SizeCdf,
    load: f64,
    host_rate: Rate,
    start: Time,
    duration: Time,
    seed: u64,
) -> Result<Vec<FlowSpec>> {
    check_hosts("poisson.hosts", hosts, 2)?;
    let mean_ns = mean_gap_ns(cdf, load, host_rate)?;
    if duration.0 == 0 {
        return Err(Error::scenario("poisson.duration", "must be positive"));
    }
    let end = start
        .0
        .checked_add(duration.0)
        .ok_or_else(|| Error::scenario("poisson.duration", "start + duration overflows the time range"))?;
    let expected = hosts.len() as f64 * duration.0 as f64 / (mean_ns * Time::PS_PER_NS as f64);
    if expected > MAX_POISSON_FLOWS {
        return Err(Error::scenario(
            "poisson.duration",
            format!("would generate about {expected:.3e} flows (limit {MAX_POISSON_FLOWS:e})"),
        ));
    }
    let mut flows = Vec::with_capacity((expected * 1.05) as usize + 16);
    let mut streams = Xoshiro256PlusPlus::seed_from_u64(seed);
    for i in 0..hosts.len() {
        let mut rng = streams.clone();
        streams.jump();
        host_arrivals(hosts, i, cdf, mean_ns, (start, Time(end)), &mut rng, &mut flows);
    }
    Ok(sorted(flows))
}

/// Every sender sends one `size`-byte flow to `receiver` at `start`, with dport 200 as the
/// reference's incast flows. Errors: no senders, the receiver among them, size 0.
pub fn incast(senders: &[NodeId], receiver: NodeId, size: u64, start: Time) -> Result<Vec<FlowSpec>> {
    check_hosts("incast.senders", senders, 1)?;
    if senders.contains(&receiver) {
        return Err(Error::scenario("incast.receiver", format!("host {receiver} is also a sender")));
    }
    check_size("incast.size", size)?;
    let flows =
        senders.iter().map(|&s| FlowSpec { dport: INCAST_DPORT, ..FlowSpec::new(s, receiver, size, start) }).collect();
    Ok(sorted(flows))
}

/// The shape of repeated incasts (`incast_rounds`).
#[derive(Clone, Copy, Debug)]
pub struct Rounds {
    /// First round's start.
    pub start: Time,
    /// Time between round starts.
    pub period: Time,
    /// Number of rounds.
    pub rounds: u32,
    /// Each sender starts U(0, jitter) after its round's start (uniform over whole ps).
    pub jitter: Time,
}

/// `rounds` incasts of `size` bytes from every sender to `receiver` (the Blitz poster's testbed
/// workload: rounds every `period`, each sender jittered), dport 200 as `incast`.
pub fn incast_rounds(senders: &[NodeId], receiver: NodeId, size: u64, r: Rounds, seed: u64) -> Result<Vec<FlowSpec>> {
    let one = incast(senders, receiver, size, Time::ZERO)?;
    if r.rounds == 0 {
        return Err(Error::scenario("incast_rounds.rounds", "must be at least 1"));
    }
    if r.period.0 == 0 {
        return Err(Error::scenario("incast_rounds.period", "must be positive"));
    }
    if r.jitter > r.period {
        return Err(Error::scenario("incast_rounds.jitter", "must not exceed the period"));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut flows = Vec::with_capacity(one.len() * r.rounds as usize);
    for k in 0..r.rounds as u64 {
        let base = r.start + Time(r.period.0 * k);
        for f in &one {
            let jitter = if r.jitter.0 == 0 { 0 } else { rng.gen_range(0..=r.jitter.0) };
            flows.push(FlowSpec { start: base + Time(jitter), ..*f });
        }
    }
    Ok(sorted(flows))
}

/// A uniformly random derangement of `hosts`: every host sends one `size`-byte flow at
/// `start` to exactly one other host and receives exactly one. Errors: fewer than two
/// hosts, a host listed twice, size 0.
pub fn permutation(hosts: &[NodeId], size: u64, start: Time, seed: u64) -> Result<Vec<FlowSpec>> {
    check_hosts("permutation.hosts", hosts, 2)?;
    check_size("permutation.size", size)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut to: Vec<usize> = (0..hosts.len()).collect();
    // Rejection sampling: uniform over derangements, about e ~ 2.7 shuffles on average.
    loop {
        to.shuffle(&mut rng);
        if to.iter().enumerate().all(|(i, &j)| i != j) {
            break;
        }
    }
    let flows = to.iter().enumerate().map(|(i, &j)| FlowSpec::new(hosts[i], hosts[j], size, start)).collect();
    Ok(sorted(flows))
}

/// `count` flows of `size` bytes, each between a uniformly drawn pair of distinct hosts of
/// `hosts`, starting at a time uniform in `[start, start + window]` (whole picoseconds).
/// Background traffic of the data-partition paper's experiments, whose paper says only "200 background
/// flows added randomly".
pub fn random_pairs(
    hosts: &[NodeId],
    count: usize,
    size: u64,
    start: Time,
    window: Time,
    seed: u64,
) -> Result<Vec<FlowSpec>> {
    check_hosts("random_pairs.hosts", hosts, 2)?;
    check_size("random_pairs.size", size)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n = hosts.len();
    let flows = (0..count)
        .map(|_| {
            let a = rng.gen_range(0..n);
            // Uniform over the other n - 1 hosts.
            let b = (a + 1 + rng.gen_range(0..n - 1)) % n;
            let at = start + Time(rng.gen_range(0..=window.0));
            FlowSpec::new(hosts[a], hosts[b], size, at)
        })
        .collect();
    Ok(sorted(flows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::Path;

    fn ids(n: u32) -> Vec<NodeId> {
        (0..n).map(NodeId).collect()
    }

    fn fb_hdp() -> SizeCdf {
        let path = crate::topology::routing::fixtures::reference_dir().join("FbHdp_distribution.txt");
        SizeCdf::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
    }

    /// Second moment of a piecewise-linear CDF: each segment is uniform on [x0, x1].
    fn second_moment(cdf: &SizeCdf) -> f64 {
        let p = cdf.points();
        p.windows(2)
            .map(|w| (w[0].0 * w[0].0 + w[0].0 * w[1].0 + w[1].0 * w[1].0) / 3.0 * (w[1].1 - w[0].1) / 100.0)
            .sum()
    }

    /// Offered bytes form a compound Poisson sum: mean = H * T/gap * E[S], variance =
    /// H * T/gap * E[S^2]. The measured load must be within 4 sigma of the target, plus
    /// the known truncation bias (gaps and sizes rounded down: under 1e-4 relative here).
    #[test]
    fn poisson_offers_the_target_load() {
        let (h, load, rate) = (32u32, 0.3, Rate::gbps(100));
        let cdf = fb_hdp();
        let duration = Time::from_ms(1000);
        let (start, end) = (Time::from_ms(2000), Time::from_ms(3000));
        let flows = poisson(&ids(h), &cdf, load, rate, start, duration, 1).unwrap();
        let target = load * rate.0 as f64 / 8.0 * duration.secs_f64() * f64::from(h);
        let arrivals = target / cdf.mean();
        let sigma = (arrivals * second_moment(&cdf)).sqrt();
        let bound = 4.0 * sigma + 1e-4 * target;
        assert!(bound / target < 0.025, "the bound must be tight enough to mean something");
        let offered: f64 = flows.iter().map(|f| f.size as f64).sum();
        assert!((offered - target).abs() < bound, "offered {offered:.4e} target {target:.4e} bound {bound:.3e}");
        // The number of arrivals is Poisson: within 4 sqrt(mean).
        let n = flows.len() as f64;
        assert!((n - arrivals).abs() < 4.0 * arrivals.sqrt(), "{n} arrivals, expected {arrivals:.0}");
        for f in &flows {
            assert!(f.src != f.dst && f.dst.0 < h && f.start >= start && f.start < end);
            assert_eq!((f.pg, f.dport, f.sport), (3, 100, None));
            assert_eq!(f.start.0 % Time::PS_PER_NS, 0);
        }
        assert!(flows.windows(2).all(|w| (w[0].start, w[0].src) <= (w[1].start, w[1].src)));
    }

    /// Destinations are uniform over the other hosts: each of the H(H-1) ordered pairs gets
    /// a binomial count, checked within 5 sigma.
    #[test]
    fn poisson_destinations_are_uniform_and_runs_reproducible() {
        let hosts: Vec<NodeId> = (10..18).map(NodeId).collect();
        let cdf = SizeCdf::parse("0 0\n1000 100\n", Path::new("t")).unwrap();
        let flows = poisson(&hosts, &cdf, 0.5, Rate::gbps(100), Time::ZERO, Time::from_ms(10), 7).unwrap();
        let mut pairs: HashMap<(NodeId, NodeId), f64> = HashMap::new();
        for f in &flows {
            *pairs.entry((f.src, f.dst)).or_default() += 1.0;
        }
        assert_eq!(pairs.len(), 8 * 7);
        let (n, p) = (flows.len() as f64, 1.0 / 56.0);
        let (mean, sd) = (n * p, (n * p * (1.0 - p)).sqrt());
        assert!(pairs.values().all(|&c| (c - mean).abs() < 5.0 * sd), "{pairs:?}");
        let again = poisson(&hosts, &cdf, 0.5, Rate::gbps(100), Time::ZERO, Time::from_ms(10), 7).unwrap();
        assert_eq!(flows, again);
        let other = poisson(&hosts, &cdf, 0.5, Rate::gbps(100), Time::ZERO, Time::from_ms(10), 8).unwrap();
        assert_ne!(flows, other);
    }

    #[test]
    fn poisson_rejects_bad_parameters() {
        let cdf = fb_hdp();
        let (r, t) = (Rate::gbps(100), Time::from_ms(1));
        for load in [0.0, -0.1, 1.01, f64::NAN] {
            assert!(poisson(&ids(4), &cdf, load, r, Time::ZERO, t, 1).is_err(), "load {load}");
        }
        assert!(poisson(&ids(4), &cdf, 1.0, r, Time::ZERO, t, 1).is_ok());
        assert!(poisson(&ids(1), &cdf, 0.3, r, Time::ZERO, t, 1).is_err());
        assert!(poisson(&[NodeId(1), NodeId(1)], &cdf, 0.3, r, Time::ZERO, t, 1).is_err());
        assert!(poisson(&ids(4), &cdf, 0.3, Rate(0), Time::ZERO, t, 1).is_err());
        assert!(poisson(&ids(4), &cdf, 0.3, r, Time::ZERO, Time::ZERO, 1).is_err());
        assert!(poisson(&ids(4), &cdf, 0.3, r, Time::MAX, t, 1).is_err());
        assert!(poisson(&ids(4), &cdf, 0.3, r, Time::ZERO, Time::from_ms(1_000_000_000), 1).is_err());
        let zero = SizeCdf::parse("0 0\n0 100\n", Path::new("t")).unwrap();
        assert!(poisson(&ids(4), &zero, 0.3, r, Time::ZERO, t, 1).is_err());
    }

    #[test]
    fn incast_flows() {
        let flows = incast(&[NodeId(5), NodeId(2), NodeId(9)], NodeId(0), 64_000, Time::from_us(3)).unwrap();
        assert_eq!(flows.iter().map(|f| f.src.0).collect::<Vec<_>>(), vec![2, 5, 9]);
        assert!(flows.iter().all(|f| f.dst == NodeId(0) && f.dport == 200 && f.size == 64_000));
        assert!(flows.iter().all(|f| f.start == Time::from_us(3)));
        assert!(incast(&[], NodeId(0), 1, Time::ZERO).is_err());
        assert!(incast(&[NodeId(1), NodeId(0)], NodeId(0), 1, Time::ZERO).is_err());
        assert!(incast(&[NodeId(1)], NodeId(0), 0, Time::ZERO).is_err());
    }

    #[test]
    fn permutation_is_a_derangement() {
        for (n, seed) in [(2u32, 1u64), (3, 2), (16, 3), (101, 4)] {
            let hosts: Vec<NodeId> = (0..n).map(|i| NodeId(100 + 3 * i)).collect();
            let flows = permutation(&hosts, 1000, Time::ZERO, seed).unwrap();
            assert_eq!(flows.len(), n as usize);
            let mut dsts: Vec<NodeId> = flows.iter().map(|f| f.dst).collect();
            dsts.sort();
            assert_eq!(dsts, hosts, "every host receives exactly once");
            assert!(flows.iter().all(|f| f.src != f.dst && f.size == 1000));
            assert!(flows.windows(2).all(|w| w[0].src < w[1].src));
        }
        let a = permutation(&ids(16), 1, Time::ZERO, 9).unwrap();
        assert_eq!(a, permutation(&ids(16), 1, Time::ZERO, 9).unwrap());
        assert!(permutation(&ids(1), 1, Time::ZERO, 1).is_err());
        assert!(permutation(&ids(4), 0, Time::ZERO, 1).is_err());
        assert!(permutation(&[NodeId(2), NodeId(2), NodeId(3)], 1, Time::ZERO, 1).is_err());
    }
}
