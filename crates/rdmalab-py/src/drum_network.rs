//! Bindings of DRUM's network-wide model (`rdmalab._core.DrumCoordinator`, `DrumAgent`) and
//! of the routing that feeds it (`drum_pair_links`, `drum_topology_routes`): the coordinator
//! and the host agents are driven from Python, in process or on Ray.
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use rdmalab::drum::network::{self, Agent, AgentReport, Coordinator, Coupling, NetworkProblem, NetworkSettings};
use rdmalab::drum::{ActiveSet, Fabric, Problem, RouteOptions, Spread};
use rdmalab::scenario::Scenario;
use rdmalab::topology::Topology;
use rdmalab::PortId;

use crate::columns::Columns;
use crate::drum::{arr2, err, inputs, slice, DrumProblem};

/// The topology of a JSON scenario (what `rdmalab.Scenario` produces; Python sends only its
/// `topology` table, so no traffic is generated).
fn topology_of(scenario_json: &str, base: &str) -> PyResult<Topology> {
    Ok(Scenario::from_json(scenario_json, std::path::Path::new(base)).map_err(crate::sim::to_py)?.topology)
}

/// Per directed link (port) of the fabric: its ends, rate and whether it joins switches.
fn link_table(f: &Fabric<'_>, ports: &[PortId], out: &Bound<'_, PyDict>) -> PyResult<()> {
    let t = Columns::onto(out, ports);
    t.i64("port", |p| p.0 as i64)?.i64("from_node", |&p| f.ends(p).0 .0 as i64)?;
    t.i64("to_node", |&p| f.ends(p).1 .0 as i64)?.array("rate_bps", |&p| f.rate_bps(p))?;
    t.array("fabric", |&p| f.is_fabric(p))?;
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
    link_table(&f, &all, &links)?;
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
    link_table(&f, &lr.ports, &out)?;
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
    #[pyo3(signature = (problem, recv=None, link_cap=None, route=None, rho=0.3, eps_abs=1e-9, eps_rel=1e-9, max_iter=10000))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        problem: &DrumProblem,
        recv: Option<PyReadonlyArray2<'_, f64>>,
        link_cap: Option<PyReadonlyArray1<'_, f64>>,
        route: Option<PyReadonlyArray2<'_, f64>>,
        rho: f64,
        eps_abs: f64,
        eps_rel: f64,
        max_iter: usize,
    ) -> PyResult<Self> {
        let views = problem.views(py)?;
        let inp = inputs(problem, &views)?;
        let act = inp.active_set()?;
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
            alpha: inp.alpha,
            beta: inp.beta,
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

/// Adds the network-wide model's classes and routing functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(drum_pair_links, m)?)?;
    m.add_function(wrap_pyfunction!(drum_topology_routes, m)?)?;
    m.add_class::<DrumCoordinator>()?;
    m.add_class::<DrumAgent>()?;
    Ok(())
}
