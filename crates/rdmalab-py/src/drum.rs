//! Bindings of the DRUM solver (`rdmalab._core.drum_*`). Thin: NumPy buffers are borrowed
//! without copies, solves run with the GIL released, results come back as dicts of arrays.
//! The user-facing API (argument checks, result objects, Ray) is `python/rdmalab/drum`.
//! Model (P)'s inputs travel as one [`DrumProblem`].
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use rdmalab::drum::{self as drum, ActiveSet, AdmmSettings, AdmmState, CapacityForm, DualSettings, Problem};

use crate::columns::Columns;

/// Maps a Rust error to `ValueError` carrying its message.
pub(crate) fn err(e: rdmalab::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A contiguous view of a NumPy array, or a clear error.
pub(crate) fn slice<'a, T: numpy::Element>(
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

/// The inputs of model (P): `a` (n × m), `Q` and `C` (n), `alpha`, `beta`, and the active
/// set as an (n, m) bool mask or `k` for the top-k rule. It holds the NumPy arrays
/// themselves, and each solve borrows them without a copy.
#[pyclass(module = "rdmalab._core", frozen)]
pub(crate) struct DrumProblem {
    a: Py<PyArray2<f64>>,
    q: Py<PyArray1<f64>>,
    c: Py<PyArray1<f64>>,
    alpha: f64,
    beta: f64,
    active: Option<Py<PyArray2<bool>>>,
    k: Option<usize>,
}

#[pymethods]
impl DrumProblem {
    #[new]
    #[pyo3(signature = (a, q, c, alpha, beta, active=None, k=None))]
    fn new(
        a: Bound<'_, PyArray2<f64>>,
        q: Bound<'_, PyArray1<f64>>,
        c: Bound<'_, PyArray1<f64>>,
        alpha: f64,
        beta: f64,
        active: Option<Bound<'_, PyArray2<bool>>>,
        k: Option<usize>,
    ) -> Self {
        let active = active.map(Bound::unbind);
        DrumProblem { a: a.unbind(), q: q.unbind(), c: c.unbind(), alpha, beta, active, k }
    }
}

/// Read-only views of a [`DrumProblem`]'s arrays, held while a call uses them.
pub(crate) struct Views<'py> {
    a: PyReadonlyArray2<'py, f64>,
    q: PyReadonlyArray1<'py, f64>,
    c: PyReadonlyArray1<'py, f64>,
    active: Option<PyReadonlyArray2<'py, bool>>,
}

impl DrumProblem {
    pub(crate) fn views<'py>(&self, py: Python<'py>) -> PyResult<Views<'py>> {
        Ok(Views {
            a: self.a.bind(py).try_readonly()?,
            q: self.q.bind(py).try_readonly()?,
            c: self.c.bind(py).try_readonly()?,
            active: self.active.as_ref().map(|m| m.bind(py).try_readonly()).transpose()?,
        })
    }
}

/// A [`DrumProblem`]'s inputs as slices (the arrays checked contiguous and of one shape).
pub(crate) struct Inputs<'a> {
    pub(crate) n: usize,
    pub(crate) m: usize,
    pub(crate) a: &'a [f64],
    pub(crate) q: &'a [f64],
    pub(crate) c: &'a [f64],
    pub(crate) mask: Option<&'a [bool]>,
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
    pub(crate) k: Option<usize>,
}

pub(crate) fn inputs<'a>(p: &DrumProblem, v: &'a Views<'_>) -> PyResult<Inputs<'a>> {
    let (n, m) = (v.a.shape()[0], v.a.shape()[1]);
    let mask = match &v.active {
        Some(mk) if mk.shape() != [n, m] => {
            return Err(PyValueError::new_err(format!(
                "drum: active: mask shape {:?} differs from a's ({n}, {m})",
                mk.shape()
            )))
        }
        Some(mk) => Some(slice("active", mk)?),
        None => None,
    };
    let (a, q, c) = (slice("a", &v.a)?, slice("Q", &v.q)?, slice("C", &v.c)?);
    Ok(Inputs { n, m, a, q, c, mask, alpha: p.alpha, beta: p.beta, k: p.k })
}

impl<'a> Inputs<'a> {
    pub(crate) fn active_set(&self) -> PyResult<ActiveSet> {
        active_set(self.n, self.m, self.a, self.mask, self.k)
    }

    pub(crate) fn problem(&self) -> PyResult<Problem<'a>> {
        Problem::new(self.n, self.m, self.a, self.q, self.c, self.alpha, self.beta, self.active_set()?).map_err(err)
    }
}

fn mask_array<'py>(py: Python<'py>, p: &Problem<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyArray1::from_vec(py, p.active.to_mask(p.n, p.m)).reshape([p.n, p.m])?.into_any())
}

pub(crate) fn arr2<'py>(py: Python<'py>, v: Vec<f64>, n: usize, m: usize) -> PyResult<Bound<'py, PyAny>> {
    Ok(v.into_pyarray(py).reshape([n, m])?.into_any())
}

/// Solves (P) by ADMM. Returns a dict of arrays and the history columns.
#[pyfunction]
#[pyo3(signature = (problem, rho=0.3, eps_abs=1e-9, eps_rel=1e-9, max_iter=10000, adaptive_rho=false, capacity="linear", warm=None))]
#[allow(clippy::too_many_arguments)]
fn drum_solve_admm<'py>(
    py: Python<'py>,
    problem: &DrumProblem,
    rho: f64,
    eps_abs: f64,
    eps_rel: f64,
    max_iter: usize,
    adaptive_rho: bool,
    capacity: &str,
    warm: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    CapacityForm::parse(capacity).and_then(CapacityForm::check).map_err(err)?;
    let views = problem.views(py)?;
    let inp = inputs(problem, &views)?;
    let settings = AdmmSettings { rho, eps_abs, eps_rel, max_iter, adaptive_rho };
    let warm = warm.map(|d| warm_state(&d)).transpose()?;
    let (res, p) = py.allow_threads(|| -> PyResult<_> {
        let p = inp.problem()?;
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
    let h = Columns::onto(&out, &res.history);
    h.f64("h_objective", |r| r.objective)?.f64("h_raw_objective", |r| r.raw_objective)?;
    h.f64("h_r_norm", |r| r.r_norm)?.f64("h_s_norm", |r| r.s_norm)?;
    h.f64("h_eps_pri", |r| r.eps_pri)?.f64("h_eps_dual", |r| r.eps_dual)?.f64("h_rho", |r| r.rho)?;
    h.f64("h_sweeps", |r| r.sweeps as f64)?.f64("h_fallbacks", |r| r.fallbacks as f64)?;
    h.f64("h_seconds", |r| r.seconds)?;
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
#[pyo3(signature = (problem, step0=1e-3, iterations=100))]
fn drum_solve_dual<'py>(
    py: Python<'py>,
    problem: &DrumProblem,
    step0: f64,
    iterations: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let views = problem.views(py)?;
    let inp = inputs(problem, &views)?;
    let res = py.allow_threads(|| -> PyResult<_> {
        let p = inp.problem()?;
        drum::solve_dual(&p, DualSettings { step0, iterations }).map_err(err)
    })?;
    let out = PyDict::new(py);
    let h = Columns::onto(&out, &res.history);
    h.f64("h_dual", |r| r.dual)?.f64("h_raw", |r| r.raw)?.f64("h_recovered", |r| r.recovered)?;
    h.f64("h_residual", |r| r.residual)?.f64("h_step", |r| r.step)?;
    out.set_item("x_best", arr2(py, res.x_best, inp.n, inp.m)?)?;
    out.set_item("y", arr2(py, res.y, inp.n, inp.m)?)?;
    Ok(out)
}

/// KKT certificate of `x` (multipliers given or inferred).
#[pyfunction]
#[pyo3(signature = (problem, x, lam=None, mu=None))]
fn drum_kkt<'py>(
    py: Python<'py>,
    problem: &DrumProblem,
    x: PyReadonlyArray2<'py, f64>,
    lam: Option<PyReadonlyArray1<'py, f64>>,
    mu: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let views = problem.views(py)?;
    let inp = inputs(problem, &views)?;
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
        let p = inp.problem()?;
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

/// Adds the DRUM solver's functions to the module (the network's: `drum_network.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(drum_solve_admm, m)?)?;
    m.add_function(wrap_pyfunction!(drum_solve_dual, m)?)?;
    m.add_function(wrap_pyfunction!(drum_kkt, m)?)?;
    m.add_function(wrap_pyfunction!(drum_paper_instance, m)?)?;
    m.add_function(wrap_pyfunction!(drum_check_capacity, m)?)?;
    m.add_function(wrap_pyfunction!(drum_top_k_mask, m)?)?;
    m.add_class::<DrumProblem>()?;
    Ok(())
}
