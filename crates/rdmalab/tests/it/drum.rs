//! Integration tests of the DRUM solver library: optimality (KKT certificate), the top-k
//! rule by exhaustive enumeration, warm starts, the dual-decomposition baseline, the
//! network-wide model, fabric links from a topology's routing and input validation.

use rdmalab::drum::instance::SplitMix;
use rdmalab::drum::network::{solve_network_local, Agent, Coordinator, Coupling, NetworkProblem, NetworkSettings};
use rdmalab::drum::problem::CapacityForm;
use rdmalab::drum::*;
use rdmalab::topology::builders;
use rdmalab::units::{Rate, Time};
use rdmalab::PortId;

fn settings() -> AdmmSettings {
    AdmmSettings { rho: 0.3, eps_abs: 1e-10, eps_rel: 1e-10, max_iter: 20_000, adaptive_rho: false }
}

fn random_mask(n: usize, m: usize, seed: u64) -> Vec<bool> {
    let mut g = SplitMix::new(seed, 99);
    (0..n * m).map(|_| g.uniform() < 0.5).collect()
}

#[test]
fn admm_reaches_a_kkt_point_topk_and_random_masks() {
    for (n, m, k, alpha, seed) in [(6, 12, 4, 0.5, 1), (5, 9, 3, 0.3, 2), (4, 20, 7, 0.8, 3)] {
        let inst = paper_instance(n, m, seed).unwrap();
        for active in
            [ActiveSet::top_k(n, m, &inst.a, k).unwrap(), ActiveSet::from_mask(n, m, &random_mask(n, m, seed)).unwrap()]
        {
            let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, alpha, 0.5, active).unwrap();
            let res = solve_admm(&p, settings(), None).unwrap();
            assert!(res.converged, "no convergence after {} iterations", res.history.len());
            let x_hat: Vec<f64> = res.state.x.iter().enumerate().map(|(e, v)| v * res.scales[e / m]).collect();
            let inferred = certify(&p, &x_hat, None).unwrap();
            assert!(inferred.accepts(1e-6), "{inferred:?}");
            let given = certify(&p, &res.state.x, Some((&res.state.lam, &res.state.mu))).unwrap();
            assert!(given.accepts(1e-6), "{given:?}");
        }
    }
}

fn solved(n: usize, m: usize, k: usize, seed: u64) -> (Instance, AdmmResult, ActiveSet) {
    let inst = paper_instance(n, m, seed).unwrap();
    let act = ActiveSet::top_k(n, m, &inst.a, k).unwrap();
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act.clone()).unwrap();
    let res = solve_admm(&p, settings(), None).unwrap();
    (inst, res, act)
}

#[test]
fn certificate_rejects_perturbed_points() {
    let (n, m) = (5, 10);
    let (inst, res, act) = solved(n, m, 4, 21);
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act).unwrap();
    let x_hat: Vec<f64> = res.state.x.iter().enumerate().map(|(e, v)| v * res.scales[e / m]).collect();
    assert!(certify(&p, &x_hat, None).unwrap().accepts(1e-7));
    let mut g = SplitMix::new(5, 5);
    let noisy: Vec<f64> = x_hat.iter().map(|v| v * (1.0 + 1e-3 * (g.uniform() - 0.5))).collect();
    let shrink = recovery(&p, &noisy);
    let noisy: Vec<f64> = noisy.iter().enumerate().map(|(e, v)| v * shrink[e / m]).collect();
    assert!(!certify(&p, &noisy, None).unwrap().accepts(1e-5));
    let slack: Vec<f64> = x_hat.iter().map(|v| 0.98 * v).collect();
    assert!(!certify(&p, &slack, None).unwrap().accepts(1e-3));
    let mut zero = x_hat.clone();
    zero[3] = 0.0;
    assert!(!certify(&p, &zero, None).unwrap().accepts(1.0));
}

fn recovery(p: &Problem<'_>, x: &[f64]) -> Vec<f64> {
    rdmalab::drum::admm::recovery_scales(p, x)
}

#[test]
fn top_k_beats_every_subset_by_enumeration() {
    let (m, k) = (7, 3);
    for seed in 0..3 {
        let inst = paper_instance(1, m, 40 + seed).unwrap();
        let mut mask = Vec::new();
        let mut subsets = Vec::new();
        for bits in 0u32..(1 << m) {
            if bits.count_ones() as usize == k {
                subsets.push(bits);
                mask.extend((0..m).map(|j| bits >> j & 1 == 1));
            }
        }
        let n = subsets.len();
        let a: Vec<f64> = (0..n).flat_map(|_| inst.a.clone()).collect();
        let (q, c) = (vec![inst.q[0]; n], vec![inst.c[0]; n]);
        let p = Problem::new(n, m, &a, &q, &c, 0.5, 1.0, ActiveSet::from_mask(n, m, &mask).unwrap()).unwrap();
        let res = solve_admm(&p, settings(), None).unwrap();
        let value = |i: usize| {
            let row: Vec<f64> = res.state.x[i * m..(i + 1) * m].iter().map(|v| v * res.scales[i]).collect();
            p.host_terms(i, &row).value(1.0)
        };
        let best = (0..n).max_by(|&i, &j| value(i).total_cmp(&value(j))).unwrap();
        let top = ActiveSet::top_k(1, m, &inst.a, k).unwrap();
        let top_bits: u32 = top.row(0).iter().map(|&j| 1u32 << j).sum();
        assert_eq!(subsets[best], top_bits, "seed {seed}");
    }
}

#[test]
fn warm_start_converges_immediately() {
    let (n, m) = (10, 20);
    let (inst, res, act) = solved(n, m, 5, 3);
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act).unwrap();
    let again = solve_admm(&p, settings(), Some(res.state.clone())).unwrap();
    assert!(again.converged && again.history.len() <= 2);
    let mut admm = Admm::new(&p, settings(), Some(res.state)).unwrap();
    let rec = admm.step();
    assert!(rec.r_norm <= rec.eps_pri * 10.0);
}

#[test]
fn dual_decomposition_brackets_the_optimum() {
    let (n, m) = (6, 10);
    let (inst, res, act) = solved(n, m, 3, 4);
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act).unwrap();
    let p_star = res.objective();
    let dd = solve_dual(&p, DualSettings { step0: 1e-3, iterations: 40 }).unwrap();
    for r in &dd.history {
        assert!(r.dual >= p_star - 1e-9 * p_star.abs(), "{r:?} vs {p_star}");
        assert!(r.recovered <= p_star + 1e-9 * p_star.abs(), "{r:?} vs {p_star}");
    }
    assert!(certify(&p, &dd.x_best, None).unwrap().primal <= 1e-12);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let inst = paper_instance(3, 4, 1).unwrap();
    let top = |k| ActiveSet::top_k(3, 4, &inst.a, k);
    assert!(top(4).is_err() && top(9).is_err());
    let act = top(2).unwrap();
    let mk = |a: &[f64], q: &[f64], c: &[f64], alpha: f64, beta: f64| {
        Problem::new(3, 4, a, q, c, alpha, beta, act.clone()).map(|_| ()).map_err(|e| e.to_string())
    };
    let (a, q, c) = (&inst.a[..], &inst.q[..], &inst.c[..]);
    let mut bad_a = inst.a.clone();
    bad_a[5] = f64::NAN;
    assert!(mk(&bad_a, q, c, 0.5, 1.0).unwrap_err().contains("entry 5"));
    bad_a[5] = -1.0;
    assert!(mk(&bad_a, q, c, 0.5, 1.0).is_err());
    assert!(mk(&a[..11], q, c, 0.5, 1.0).is_err());
    assert!(mk(a, &q[..2], c, 0.5, 1.0).is_err());
    assert!(mk(a, q, &[1.0, 0.0, 1.0], 0.5, 1.0).is_err());
    assert!(mk(a, q, c, 0.0, 1.0).is_err() && mk(a, q, c, 0.5, -1.0).is_err());
    assert!(ActiveSet::from_mask(3, 4, &[true; 11]).is_err());
    assert!(CapacityForm::parse("log").unwrap().check().unwrap_err().to_string().contains("unbounded"));
    let p = Problem::new(3, 4, a, q, c, 0.5, 1.0, act).unwrap();
    assert!(solve_admm(&p, AdmmSettings { rho: -1.0, ..settings() }, None).is_err());
    let wrong = AdmmState { x: vec![1.0; 3], ..AdmmState::cold(&p, 0.3) };
    assert!(solve_admm(&p, settings(), Some(wrong)).is_err());
    assert!(certify(&p, &[1.0; 5], None).is_err());
}

fn network(n: usize, m: usize, seed: u64) -> (Instance, Vec<Coupling>, Vec<f64>, Vec<Coupling>) {
    let inst = paper_instance(n, m, seed).unwrap();
    let mut recv = Vec::new();
    let mut route = Vec::new();
    for i in 0..n {
        for j in 0..m {
            let dst = (i + 1 + j % (n - 1)) % n;
            recv.push(Coupling { host: i, app: j, resource: dst, coef: 0.5 + (j % 3) as f64 * 0.5 });
            route.push(Coupling { host: i, app: j, resource: i % 2, coef: 1.0 });
        }
    }
    let link_cap = vec![0.3 * (n * m) as f64, 0.25 * (n * m) as f64];
    (inst, recv, link_cap, route)
}

#[test]
fn network_without_coupling_equals_the_local_model() {
    let (n, m) = (6, 8);
    let (inst, res, act) = solved(n, m, 3, 6);
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act).unwrap();
    let np = NetworkProblem::new(p, &[], &[], &[]).unwrap();
    let ns = NetworkSettings { eps_abs: 1e-10, eps_rel: 1e-10, ..Default::default() };
    let out = solve_network_local(&np, ns, 4).unwrap();
    assert!(out.converged);
    assert!((out.objective - res.objective()).abs() <= 1e-7 * res.objective().abs());
}

#[test]
fn agents_moved_between_processes_give_identical_iterates() {
    let (n, m) = (6, 5);
    let (inst, recv, link_cap, route) = network(n, m, 8);
    let act = ActiveSet::top_k(n, m, &inst.a, 2).unwrap();
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act).unwrap();
    let np = NetworkProblem::new(p, &recv, &link_cap, &route).unwrap();
    let ns = NetworkSettings { max_iter: 40, eps_abs: 1e-14, eps_rel: 1e-14, ..Default::default() };
    let reference = solve_network_local(&np, ns, 3).unwrap();
    let mut agents = Agent::split(&np, 3, ns.rho).unwrap();
    let mut coord = Coordinator::new(&np, ns);
    while !coord.done() {
        // Serialise every agent each iteration, as if it moved to another worker.
        agents = agents.iter().map(|a| Agent::from_bytes(&a.to_bytes()).unwrap()).collect();
        let (up, u) = coord.prices();
        let reps: Vec<_> = agents.iter_mut().map(|a| a.step(&up, &u).unwrap()).collect();
        coord.update(&reps).unwrap();
    }
    let x: Vec<f64> = agents.iter().flat_map(|a| a.x().to_vec()).collect();
    assert_eq!(x, reference.x);
    assert_eq!(coord.history(), &reference.history[..]);
    assert!(Agent::from_bytes(b"garbage!").is_err());
    assert!(agents[0].step(&[0.0], &[0.0]).is_err());
}

// ---- Fabric links from a topology's routing (docs/drum.md §6) ----

/// The fabric-only entries (switch to switch) of one pair, as (port, share).
fn fabric_entries(f: &Fabric<'_>, inc: &PairLinks, p: usize) -> Vec<(u32, f64)> {
    inc.of(p).filter(|&(port, _)| f.is_fabric(port)).map(|(port, s)| (port.0, s)).collect()
}

/// Sum of shares of a pair's entries: the expected number of hops of its traffic.
fn hops(inc: &PairLinks, p: usize) -> f64 {
    inc.of(p).map(|(_, s)| s).sum()
}

#[test]
fn leaf_spine_incidence_matches_a_hand_count() {
    // 2 leaves × 2 hosts, 3 spines: hosts 0, 1 on leaf 4; hosts 2, 3 on leaf 5.
    let t = builders::leaf_spine(2, 3, 2, Rate::gbps(100), Rate::gbps(400), Time::from_us(1)).unwrap();
    let f = Fabric::new(&t).unwrap();
    let pairs = [(0, 1), (0, 3), (3, 0)];
    let split = f.pair_links(&pairs, Spread::Split).unwrap();
    // Same leaf: host up-link and leaf down-link only, no fabric link.
    assert_eq!(split.of(0).count(), 2);
    assert!(fabric_entries(&f, &split, 0).is_empty());
    for p in [1, 2] {
        // Across leaves: 3 leaf→spine and 3 spine→leaf links, a third of the traffic each.
        let fab = fabric_entries(&f, &split, p);
        assert_eq!(fab.len(), 6, "{fab:?}");
        assert!(fab.iter().all(|&(_, s)| (s - 1.0 / 3.0).abs() < 1e-15));
        assert!((hops(&split, p) - 4.0).abs() < 1e-12);
        let (from, _) = f.ends(PortId(fab[0].0));
        assert!(!t.is_host(from));
    }
    // Opposite directions use opposite ports of the same links.
    let fwd: Vec<u32> = fabric_entries(&f, &split, 1).iter().map(|e| e.0 ^ 1).collect();
    let mut back: Vec<u32> = fabric_entries(&f, &split, 2).iter().map(|e| e.0).collect();
    back.sort_unstable();
    let mut fwd = fwd;
    fwd.sort_unstable();
    assert_eq!(fwd, back);
    let first = f.pair_links(&pairs, Spread::First).unwrap();
    assert_eq!(fabric_entries(&f, &first, 1).len(), 2);
    assert!(first.share.iter().all(|&s| s == 1.0));
}

#[test]
fn fat_tree_k4_incidence_matches_a_hand_count() {
    // Hosts 0, 1 on edge 16 (pod 0), 2, 3 on edge 17 (pod 0), 4.. in pod 1, ...
    let t = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).unwrap();
    let f = Fabric::new(&t).unwrap();
    assert_eq!(f.n_hosts(), 16);
    let pairs = [(0, 1), (0, 2), (0, 15), (9, 4)];
    let first = f.pair_links(&pairs, Spread::First).unwrap();
    let split = f.pair_links(&pairs, Spread::Split).unwrap();
    // Same edge switch: no fabric link.
    assert!(fabric_entries(&f, &first, 0).is_empty() && fabric_entries(&f, &split, 0).is_empty());
    // Same pod, other edge: edge→agg→edge, 2 fabric links; split over both aggregations.
    assert_eq!(fabric_entries(&f, &first, 1).len(), 2);
    let fab = fabric_entries(&f, &split, 1);
    assert_eq!(fab.len(), 4);
    assert!(fab.iter().all(|&(_, s)| s == 0.5));
    for p in [2, 3] {
        // Other pod: edge→agg→core→agg→edge, 4 fabric links on one path, 6 links in all.
        assert_eq!(fabric_entries(&f, &first, p).len(), 4);
        assert_eq!(first.of(p).count(), 6);
        // Split: 2 edge→agg (½), 4 agg→core (¼), 4 core→agg (¼), 2 agg→edge (½).
        let mut shares: Vec<f64> = fabric_entries(&f, &split, p).iter().map(|e| e.1).collect();
        shares.sort_by(f64::total_cmp);
        assert_eq!(shares, [vec![0.25; 8], vec![0.5; 4]].concat());
        assert!((hops(&split, p) - 6.0).abs() < 1e-12);
    }
}

#[test]
fn topology_routes_feed_the_network_model() {
    // k = 4 fat tree, 16 hosts, 3 apps each, every app sending to another pod.
    let t = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).unwrap();
    let f = Fabric::new(&t).unwrap();
    let (n, m) = (16, 3);
    let dst: Vec<i64> = (0..n * m).map(|e| ((e / m + 4 * (1 + e % m)) % n) as i64).collect();
    let opts = RouteOptions { spread: Spread::Split, time_unit: 1e-6, host_links: false };
    let lr = f.routes(&dst, m, &vec![12500.0; n * m], opts).unwrap();
    // Every fabric link is crossed (uniform inter-pod traffic); 100 Gb/s = 12500 B/µs: one
    // WQE of 12500 B per µs.
    assert_eq!(lr.ports.len(), 64);
    assert!(lr.ports.iter().all(|&p| f.is_fabric(p)));
    assert!(lr.cap.iter().all(|&c| c == 12500.0));
    assert_eq!(lr.route.len(), n * m * 12);
    assert!(f.routes(&dst, 5, &vec![1.0; n * m], opts).is_err());
    assert!(f.routes(&dst, m, &vec![-1.0; n * m], opts).is_err());
    let inst = paper_instance(n, m, 3).unwrap();
    let act = ActiveSet::top_k(n, m, &inst.a, 1).unwrap();
    let p = Problem::new(n, m, &inst.a, &inst.q, &inst.c, 0.5, 1.0, act).unwrap();
    let np = NetworkProblem::new(p, &[], &lr.cap, &lr.route).unwrap();
    let ns = NetworkSettings { eps_abs: 1e-10, eps_rel: 1e-10, ..Default::default() };
    let out = solve_network_local(&np, ns, 4).unwrap();
    assert!(out.converged);
    let load = np.loads(&out.x_hat);
    assert!(load.iter().zip(&np.res_cap).all(|(l, c)| *l <= c * (1.0 + 1e-9)));
    // The links bind: some link price is positive.
    assert!(out.prices[n..].iter().any(|&u| u > 1e-6), "{:?}", &out.prices[n..]);
}
