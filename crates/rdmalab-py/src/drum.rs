//! Bindings of the DRUM solver (`rdmalab._core.drum_*`). Thin: NumPy buffers are borrowed
//! without copies, solves run with the GIL released, results come back as dicts of arrays.
//! The user-facing API (argument checks, result objects, Ray) is `python/rdmalab/drum`.
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use rdmalab::drum::network::{self, Agent, AgentReport, Coordinator, Coupling, NetworkProblem, NetworkSettings};
use rdmalab::drum::{self as drum, ActiveSet, AdmmSettings, AdmmState, CapacityForm, DualSettings, Problem};
use rdmalab::drum::{Fabric, RouteOptions, Spread};
use rdmalab::scenario::Scenario;
use rdmalab::topology::Topology;
use rdmalab::{NodeId, PortId};

/// Maps a Rust error to `ValueError` carrying its message.
fn err(e: rdmalab::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A contiguous view of a NumPy array, or a clear error.
fn slice<'a, T: numpy::Element>(
    name: &str,
    a: &'a numpy::PyReadonlyArray<'_, T, impl numpy::ndarray::Dimension>,
) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| PyValueError::new_err(format!("drum: {name}: array must be C-contiguous")))
}

/// Builds the active set from a mask or the top-k rule.
fn active_set(n: usize, m: usize, a: &[f64], mask: Option<&[bool]>, k: Option<usize>) -> PyResult<ActiveSet> {
    match (mask, k) {
        (Some(mk), _) => ActiveSet::from_mask(n, m, mk).map_err(err),
        (None, Some(k)) => ActiveSet::top_k(n, m, a, k).map_err(err),
        (None, None) => Err(PyValueError::new_err("drum: active: give an (n, m) bool mask or k for the top-k rule")),
    }
}

/// Common inputs of the model, borrowed from NumPy.
struct Inputs<'a> {
    n: usize,
    m: usize,
    a: &'a [f64],
    q: &'a [f64],
    c: &'a [f64],
    mask: Option<&'a [bool]>,
}

fn inputs<'a>(
    a: &'a PyReadonlyArray2<'_, f64>,
    q: &'a PyReadonlyArray1<'_, f64>,
    c: &'a PyReadonlyArray1<'_, f64>,
    active: &'a Option<PyReadonlyArray2<'_, bool>>,
) -> PyResult<Inputs<'a>> {
    let (n, m) = (a.shape()[0], a.shape()[1]);
    let mask = match active {
        Some(mk) if mk.shape() != [n, m] => {
            return Err(PyValueError::new_err(format!(
                "drum: active: mask shape {:?} differs from a's ({n}, {m})",
                mk.shape()
            )))
        }
        Some(mk) => Some(slice("active", mk)?),
        None => None,
    };
    Ok(Inputs { n, m, a: slice("a", a)?, q: slice("Q", q)?, c: slice("C", c)?, mask })
}

fn problem<'a>(i: &Inputs<'a>, alpha: f64, beta: f64, k: Option<usize>) -> PyResult<Problem<'a>> {
    let act = active_set(i.n, i.m, i.a, i.mask, k)?;
    Problem::new(i.n, i.m, i.a, i.q, i.c, alpha, beta, act).map_err(err)
}

fn mask_array<'py>(py: Python<'py>, p: &Problem<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyArray1::from_vec(py, p.active.to_mask(p.n, p.m)).reshape([p.n, p.m])?.into_any())
}

fn arr2<'py>(py: Python<'py>, v: Vec<f64>, n: usize, m: usize) -> PyResult<Bound<'py, PyAny>> {
    Ok(v.into_pyarray(py).reshape([n, m])?.into_any())
}

/// Solves (P) by ADMM. Returns a dict of arrays and the history columns.
#[pyfunction]
#[pyo3(signature = (a, q, c, alpha, beta, active=None, k=None, rho=0.3, eps_abs=1e-9, eps_rel=1e-9, max_iter=10000, adaptive_rho=false, capacity="linear", warm=None))]
#[allow(clippy::too_many_arguments)]
fn drum_solve_admm<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    q: PyReadonlyArray1<'py, f64>,
    c: PyReadonlyArray1<'py, f64>,
    alpha: f64,
    beta: f64,
    active: Option<PyReadonlyArray2<'py, bool>>,
    k: Option<usize>,
    rho: f64,
    eps_abs: f64,
    eps_rel: f64,
    max_iter: usize,
    adaptive_rho: bool,
    capacity: &str,
    warm: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    CapacityForm::parse(capacity).and_then(CapacityForm::check).map_err(err)?;
    let inp = inputs(&a, &q, &c, &active)?;
    let settings = AdmmSettings { rho, eps_abs, eps_rel, max_iter, adaptive_rho };
    let warm = warm.map(|d| warm_state(&d)).transpose()?;
    let (res, p) = py.allow_threads(|| -> PyResult<_> {
        let p = problem(&inp, alpha, beta, k)?;
        let res = drum::solve_admm(&p, settings, warm).map_err(err)?;
        Ok((res, p))
    })?;
    let out = PyDict::new(py);
    let (n, m) = (inp.n, inp.m);
    out.set_item("active", mask_array(py, &p)?)?;
    out.set_item("objective", res.objective())?;
    out.set_item("converged", res.converged)?;
    out.set_item("iterations", res.history.len())?;
    out.set_item("rho", res.state.rho)?;
    let h = &res.history;
    let col = |f: fn(&drum::IterRecord) -> f64| h.iter().map(f).collect::<Vec<f64>>().into_pyarray(py);
    out.set_item("h_objective", col(|r| r.objective))?;
    out.set_item("h_raw_objective", col(|r| r.raw_objective))?;
    out.set_item("h_r_norm", col(|r| r.r_norm))?;
    out.set_item("h_s_norm", col(|r| r.s_norm))?;
    out.set_item("h_eps_pri", col(|r| r.eps_pri))?;
    out.set_item("h_eps_dual", col(|r| r.eps_dual))?;
    out.set_item("h_rho", col(|r| r.rho))?;
    out.set_item("h_sweeps", col(|r| r.sweeps as f64))?;
    out.set_item("h_fallbacks", col(|r| r.fallbacks as f64))?;
    out.set_item("h_seconds", col(|r| r.seconds))?;
    out.set_item("scales", res.scales.into_pyarray(py))?;
    let st = res.state;
    out.set_item("x", arr2(py, st.x, n, m)?)?;
    out.set_item("z", arr2(py, st.z, n, m)?)?;
    out.set_item("w", arr2(py, st.w, n, m)?)?;
    out.set_item("lam", st.lam.into_pyarray(py))?;
    out.set_item("mu", st.mu.into_pyarray(py))?;
    Ok(out)
}

/// Reads a warm-start state from a dict with x, z, w (2-D), lam, mu (1-D) and rho.
fn warm_state(d: &Bound<'_, PyDict>) -> PyResult<AdmmState> {
    let get = |k: &str| -> PyResult<Vec<f64>> {
        let v = d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("drum: warm_start: missing {k}")))?;
        let arr: numpy::PyReadonlyArrayDyn<'_, f64> = v.extract()?;
        Ok(arr.as_array().iter().copied().collect())
    };
    let rho: f64 =
        d.get_item("rho")?.ok_or_else(|| PyValueError::new_err("drum: warm_start: missing rho"))?.extract()?;
    Ok(AdmmState { x: get("x")?, z: get("z")?, w: get("w")?, lam: get("lam")?, mu: get("mu")?, rho })
}

/// Runs the dual-decomposition baseline; returns the history and the best feasible point.
#[pyfunction]
#[pyo3(signature = (a, q, c, alpha, beta, active=None, k=None, step0=1e-3, iterations=100))]
#[allow(clippy::too_many_arguments)]
fn drum_solve_dual<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    q: PyReadonlyArray1<'py, f64>,
    c: PyReadonlyArray1<'py, f64>,
    alpha: f64,
    beta: f64,
    active: Option<PyReadonlyArray2<'py, bool>>,
    k: Option<usize>,
    step0: f64,
    iterations: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let inp = inputs(&a, &q, &c, &active)?;
    let res = py.allow_threads(|| -> PyResult<_> {
        let p = problem(&inp, alpha, beta, k)?;
        drum::solve_dual(&p, DualSettings { step0, iterations }).map_err(err)
    })?;
    let out = PyDict::new(py);
    let h = &res.history;
    let col = |f: fn(&drum::DualRecord) -> f64| h.iter().map(f).collect::<Vec<f64>>().into_pyarray(py);
    out.set_item("h_dual", col(|r| r.dual))?;
    out.set_item("h_raw", col(|r| r.raw))?;
    out.set_item("h_recovered", col(|r| r.recovered))?;
    out.set_item("h_residual", col(|r| r.residual))?;
    out.set_item("h_step", col(|r| r.step))?;
    out.set_item("x_best", arr2(py, res.x_best, inp.n, inp.m)?)?;
    out.set_item("y", arr2(py, res.y, inp.n, inp.m)?)?;
    Ok(out)
}

/// KKT certificate of `x` (multipliers given or inferred).
#[pyfunction]
#[pyo3(signature = (a, q, c, alpha, beta, x, active=None, k=None, lam=None, mu=None))]
#[allow(clippy::too_many_arguments)]
fn drum_kkt<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    q: PyReadonlyArray1<'py, f64>,
    c: PyReadonlyArray1<'py, f64>,
    alpha: f64,
    beta: f64,
    x: PyReadonlyArray2<'py, f64>,
    active: Option<PyReadonlyArray2<'py, bool>>,
    k: Option<usize>,
    lam: Option<PyReadonlyArray1<'py, f64>>,
    mu: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let inp = inputs(&a, &q, &c, &active)?;
    if x.shape() != [inp.n, inp.m] {
        return Err(PyValueError::new_err(format!("drum: x: shape {:?} differs from a's", x.shape())));
    }
    let xs = slice("x", &x)?;
    let mult = match (&lam, &mu) {
        (Some(l), Some(u)) => Some((slice("lam", l)?, slice("mu", u)?)),
        (None, None) => None,
        _ => return Err(PyValueError::new_err("drum: kkt: give both lam and mu, or neither")),
    };
    let rep = py.allow_threads(|| -> PyResult<_> {
        let p = problem(&inp, alpha, beta, k)?;
        drum::certify(&p, xs, mult).map_err(err)
    })?;
    let out = PyDict::new(py);
    out.set_item("stationarity", rep.stationarity)?;
    out.set_item("primal", rep.primal)?;
    out.set_item("dual", rep.dual)?;
    out.set_item("complementarity", rep.complementarity)?;
    out.set_item("max_residual", rep.max_residual())?;
    out.set_item("lam", rep.lam.into_pyarray(py))?;
    out.set_item("mu", rep.mu.into_pyarray(py))?;
    Ok(out)
}

/// Accepts `"linear"` budgets; refuses the paper's log-sum form with the reason.
#[pyfunction]
fn drum_check_capacity(capacity: &str) -> PyResult<()> {
    CapacityForm::parse(capacity).and_then(CapacityForm::check).map_err(err)
}

/// Generates a paper-style instance: returns `(a, Q, C)`.
#[pyfunction]
fn drum_paper_instance(py: Python<'_>, n: usize, m: usize, seed: u64) -> PyResult<Bound<'_, PyAny>> {
    let inst = py.allow_threads(|| drum::paper_instance(n, m, seed)).map_err(err)?;
    let a = arr2(py, inst.a, n, m)?;
    Ok((a, inst.q.into_pyarray(py), inst.c.into_pyarray(py)).into_pyobject(py)?.into_any())
}

/// The optimal top-k mask (k smallest `a_ij` per host).
#[pyfunction]
fn drum_top_k_mask<'py>(py: Python<'py>, a: PyReadonlyArray2<'py, f64>, k: usize) -> PyResult<Bound<'py, PyAny>> {
    let (n, m) = (a.shape()[0], a.shape()[1]);
    let s = slice("a", &a)?;
    let set = py.allow_threads(|| ActiveSet::top_k(n, m, s, k)).map_err(err)?;
    Ok(PyArray1::from_vec(py, set.to_mask(n, m)).reshape([n, m])?.into_any())
}

/// The topology of a JSON scenario (what `rdmalab.Scenario` produces; Python sends only its
/// `topology` table, so no traffic is generated).
fn topology_of(scenario_json: &str, base: &str) -> PyResult<Topology> {
    Ok(Scenario::from_json(scenario_json, std::path::Path::new(base)).map_err(crate::sim::to_py)?.topology)
}

/// Per directed link (port) of the fabric: its ends, rate and whether it joins switches.
fn link_table<'py>(py: Python<'py>, f: &Fabric<'_>, ports: &[PortId], out: &Bound<'py, PyDict>) -> PyResult<()> {
    let ends: Vec<(NodeId, NodeId)> = ports.iter().map(|&p| f.ends(p)).collect();
    out.set_item("port", ports.iter().map(|p| p.0 as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("from_node", ends.iter().map(|e| e.0 .0 as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("to_node", ends.iter().map(|e| e.1 .0 as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("rate_bps", ports.iter().map(|&p| f.rate_bps(p)).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("fabric", ports.iter().map(|&p| f.is_fabric(p)).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("n_hosts", f.n_hosts())?;
    Ok(())
}

/// Links crossed by each `(src, dst)` host pair (host ranks) under the topology's routing:
/// a dict with CSR rows `ptr`, `port`, `share`, and per port of the topology `from_node`,
/// `to_node`, `rate_bps`, `fabric` (indexed by port id).
#[pyfunction]
fn drum_pair_links<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base: &str,
    pairs: PyReadonlyArray2<'py, i64>,
    ecmp: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let topo = topology_of(scenario_json, base)?;
    let spread = Spread::parse(ecmp).map_err(err)?;
    if pairs.shape()[1] != 2 && pairs.shape()[0] > 0 {
        return Err(PyValueError::new_err("drum: pairs: expected rows (src, dst)"));
    }
    let flat = slice("pairs", &pairs)?;
    if let Some(v) = flat.iter().find(|v| **v < 0) {
        return Err(PyValueError::new_err(format!("drum: pairs: host {v} is negative")));
    }
    let list: Vec<(usize, usize)> = flat.chunks_exact(2).map(|r| (r[0] as usize, r[1] as usize)).collect();
    let f = Fabric::new(&topo).map_err(crate::sim::to_py)?;
    let inc = py.allow_threads(|| f.pair_links(&list, spread)).map_err(err)?;
    let out = PyDict::new(py);
    out.set_item("ptr", inc.ptr.iter().map(|&v| v as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("port", inc.port.iter().map(|p| p.0 as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("share", inc.share.into_pyarray(py))?;
    let all: Vec<PortId> = (0..topo.ports.len()).map(PortId::new).collect();
    let links = PyDict::new(py);
    link_table(py, &f, &all, &links)?;
    out.set_item("links", links)?;
    Ok(out)
}

/// Link capacities and `route` rows of the network-wide model from a topology and a
/// destination map (`Fabric::routes`): a dict with `link_cap`, `route` (rows
/// `(link, host, app, coef)`) and the kept links' `port`, `from_node`, `to_node`,
/// `rate_bps`, `fabric`.
#[pyfunction]
#[pyo3(signature = (scenario_json, base, dst, bytes_per_wqe, *, time_unit, ecmp, host_links))]
#[allow(clippy::too_many_arguments)]
fn drum_topology_routes<'py>(
    py: Python<'py>,
    scenario_json: &str,
    base: &str,
    dst: PyReadonlyArray2<'py, i64>,
    bytes_per_wqe: PyReadonlyArray2<'py, f64>,
    time_unit: f64,
    ecmp: &str,
    host_links: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let topo = topology_of(scenario_json, base)?;
    let opts = RouteOptions { spread: Spread::parse(ecmp).map_err(err)?, time_unit, host_links };
    if bytes_per_wqe.shape() != dst.shape() {
        return Err(PyValueError::new_err(format!(
            "drum: bytes_per_wqe: shape {:?} differs from dst's {:?}",
            bytes_per_wqe.shape(),
            dst.shape()
        )));
    }
    let (d, b, m) = (slice("dst", &dst)?, slice("bytes_per_wqe", &bytes_per_wqe)?, dst.shape()[1]);
    let f = Fabric::new(&topo).map_err(crate::sim::to_py)?;
    let lr = py.allow_threads(|| f.routes(d, m, b, opts)).map_err(err)?;
    let rows: Vec<f64> =
        lr.route.iter().flat_map(|c| [c.resource as f64, c.host as f64, c.app as f64, c.coef]).collect();
    let out = PyDict::new(py);
    link_table(py, &f, &lr.ports, &out)?;
    out.set_item("link_cap", lr.cap.into_pyarray(py))?;
    out.set_item("route", arr2(py, rows, lr.route.len(), 4)?)?;
    Ok(out)
}

/// An owned copy of the network-wide model's inputs (the coordinator keeps it).
#[derive(Debug)]
struct NetSpec {
    n: usize,
    m: usize,
    a: Vec<f64>,
    q: Vec<f64>,
    c: Vec<f64>,
    act: ActiveSet,
    alpha: f64,
    beta: f64,
    recv: Vec<Coupling>,
    link_cap: Vec<f64>,
    route: Vec<Coupling>,
}

impl NetSpec {
    fn problem(&self) -> PyResult<NetworkProblem<'_>> {
        let p = Problem::new(self.n, self.m, &self.a, &self.q, &self.c, self.alpha, self.beta, self.act.clone())
            .map_err(err)?;
        NetworkProblem::new(p, &self.recv, &self.link_cap, &self.route).map_err(err)
    }
}

/// Rows `(host, app, resource, coef)` of a float array as couplings.
fn couplings(name: &str, arr: Option<PyReadonlyArray2<'_, f64>>) -> PyResult<Vec<Coupling>> {
    let Some(arr) = arr else {
        return Ok(Vec::new());
    };
    if arr.shape().len() != 2 || (arr.shape()[0] > 0 && arr.shape()[1] != 4) {
        return Err(PyValueError::new_err(format!("drum: {name}: expected rows (host, app, target, coef)")));
    }
    let idx = |v: f64| -> PyResult<usize> {
        if v >= 0.0 && v.fract() == 0.0 && v < 1e15 {
            Ok(v as usize)
        } else {
            Err(PyValueError::new_err(format!("drum: {name}: index {v} is not a non-negative integer")))
        }
    };
    let view = arr.as_array();
    view.outer_iter()
        .map(|r| Ok(Coupling { host: idx(r[0])?, app: idx(r[1])?, resource: idx(r[2])?, coef: r[3] }))
        .collect()
}

/// The coordinator of the network-wide model, driven from Python (local or Ray agents).
#[pyclass(module = "rdmalab._core")]
struct DrumCoordinator {
    spec: NetSpec,
    coord: Coordinator,
    rho: f64,
}

#[pymethods]
impl DrumCoordinator {
    #[new]
    #[pyo3(signature = (a, q, c, alpha, beta, active=None, k=None, recv=None, link_cap=None, route=None, rho=0.3, eps_abs=1e-9, eps_rel=1e-9, max_iter=10000))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        a: PyReadonlyArray2<'_, f64>,
        q: PyReadonlyArray1<'_, f64>,
        c: PyReadonlyArray1<'_, f64>,
        alpha: f64,
        beta: f64,
        active: Option<PyReadonlyArray2<'_, bool>>,
        k: Option<usize>,
        recv: Option<PyReadonlyArray2<'_, f64>>,
        link_cap: Option<PyReadonlyArray1<'_, f64>>,
        route: Option<PyReadonlyArray2<'_, f64>>,
        rho: f64,
        eps_abs: f64,
        eps_rel: f64,
        max_iter: usize,
    ) -> PyResult<Self> {
        let inp = inputs(&a, &q, &c, &active)?;
        let act = active_set(inp.n, inp.m, inp.a, inp.mask, k)?;
        let link_cap = match &link_cap {
            Some(l) => slice("link_cap", l)?.to_vec(),
            None => Vec::new(),
        };
        let spec = NetSpec {
            n: inp.n,
            m: inp.m,
            a: inp.a.to_vec(),
            q: inp.q.to_vec(),
            c: inp.c.to_vec(),
            act,
            alpha,
            beta,
            recv: couplings("recv", recv)?,
            link_cap,
            route: couplings("route", route)?,
        };
        let settings = NetworkSettings { rho, eps_abs, eps_rel, max_iter };
        settings.validate().map_err(err)?;
        let coord = Coordinator::new(&spec.problem()?, settings);
        Ok(DrumCoordinator { spec, coord, rho })
    }

    /// Encoded agents over `groups` contiguous host ranges (bytes, for any process).
    fn agents<'py>(&self, py: Python<'py>, groups: usize) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let np = self.spec.problem()?;
        let agents = Agent::split(&np, groups, self.rho).map_err(err)?;
        Ok(agents.iter().map(|a| PyBytes::new(py, &a.to_bytes())).collect())
    }

    /// Scaled prices `(u_prev, u)` to broadcast.
    fn prices<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>) {
        let (a, b) = self.coord.prices();
        (a.into_pyarray(py), b.into_pyarray(py))
    }

    /// Whether to stop.
    fn done(&self) -> bool {
        self.coord.done()
    }

    /// Consumes the agents' `(load, stats)` reports in agent order; returns the record.
    fn update<'py>(
        &mut self,
        py: Python<'py>,
        reports: Vec<(PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, f64>)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut reps = Vec::with_capacity(reports.len());
        for (load, stats) in &reports {
            let st = slice("stats", stats)?;
            let mut arr = [0.0; network::stat::N];
            if st.len() != arr.len() {
                return Err(PyValueError::new_err("drum: update: malformed agent report"));
            }
            arr.copy_from_slice(st);
            reps.push(AgentReport { load: slice("load", load)?.to_vec(), stats: arr });
        }
        let r = self.coord.update(&reps).map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("iter", r.iter)?;
        d.set_item("objective", r.objective)?;
        d.set_item("r_norm", r.r_norm)?;
        d.set_item("s_norm", r.s_norm)?;
        d.set_item("eps_pri", r.eps_pri)?;
        d.set_item("eps_dual", r.eps_dual)?;
        d.set_item("violation", r.violation)?;
        Ok(d)
    }

    /// Final result from the concatenated rates of all agents.
    fn finish<'py>(&self, py: Python<'py>, x: PyReadonlyArray1<'py, f64>) -> PyResult<Bound<'py, PyDict>> {
        let x = slice("x", &x)?.to_vec();
        if x.len() != self.spec.n * self.spec.m {
            return Err(PyValueError::new_err("drum: finish: x has the wrong length"));
        }
        let np = self.spec.problem()?;
        let res = self.coord.clone().finish(&np, x);
        let (n, m) = (self.spec.n, self.spec.m);
        let d = PyDict::new(py);
        d.set_item("x", arr2(py, res.x, n, m)?)?;
        d.set_item("x_hat", arr2(py, res.x_hat, n, m)?)?;
        d.set_item("objective", res.objective)?;
        d.set_item("prices", res.prices.into_pyarray(py))?;
        d.set_item("converged", res.converged)?;
        d.set_item("iterations", res.history.len())?;
        Ok(d)
    }
}

/// Two 1-D arrays (an agent's loads and statistics).
type ArrayPair<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// A host agent of the network-wide model (lives in the driver or in a Ray actor).
#[pyclass(module = "rdmalab._core")]
struct DrumAgent {
    agent: Agent,
}

#[pymethods]
impl DrumAgent {
    /// Rebuilds an agent from [`DrumCoordinator::agents`] bytes.
    #[staticmethod]
    fn from_bytes(b: &[u8]) -> PyResult<Self> {
        Ok(DrumAgent { agent: Agent::from_bytes(b).map_err(err)? })
    }

    /// The agent (data and iterate) as bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.agent.to_bytes())
    }

    /// One local iteration; returns `(load, stats)`.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        u_prev: PyReadonlyArray1<'py, f64>,
        u: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<ArrayPair<'py>> {
        let (up, uu) = (slice("u_prev", &u_prev)?, slice("u", &u)?);
        let agent = &mut self.agent;
        let rep = py.allow_threads(|| agent.step(up, uu)).map_err(err)?;
        Ok((rep.load.into_pyarray(py), rep.stats.to_vec().into_pyarray(py)))
    }

    /// The agent's rates (its hosts' rows, flattened).
    fn x<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.agent.x().to_vec().into_pyarray(py)
    }

    /// `(first host, number of hosts)`.
    fn hosts(&self) -> (usize, usize) {
        self.agent.hosts()
    }
}

/// Adds the DRUM functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(drum_solve_admm, m)?)?;
    m.add_function(wrap_pyfunction!(drum_solve_dual, m)?)?;
    m.add_function(wrap_pyfunction!(drum_kkt, m)?)?;
    m.add_function(wrap_pyfunction!(drum_paper_instance, m)?)?;
    m.add_function(wrap_pyfunction!(drum_check_capacity, m)?)?;
    m.add_function(wrap_pyfunction!(drum_top_k_mask, m)?)?;
    m.add_function(wrap_pyfunction!(drum_pair_links, m)?)?;
    m.add_function(wrap_pyfunction!(drum_topology_routes, m)?)?;
    m.add_class::<DrumCoordinator>()?;
    m.add_class::<DrumAgent>()?;
    Ok(())
}
