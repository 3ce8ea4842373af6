//! Integration tests of the DRUM solver library: optimality (KKT certificate), the top-k
//! rule by exhaustive enumeration, warm starts, the dual-decomposition baseline, the
//! network-wide model and input validation.

use rdmalab::drum::instance::SplitMix;
use rdmalab::drum::network::{solve_network_local, Agent, Coordinator, Coupling, NetworkProblem, NetworkSettings};
use rdmalab::drum::*;

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
        for active in [ActiveSet::top_k(n, m, &inst.a, k).unwrap(), ActiveSet::from_mask(n, m, &random_mask(n, m, seed)).unwrap()] {
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
