//! Bindings of the packet-level simulator: build from a scenario, run in slices (so Python
//! can show progress and stop on Ctrl-C), and hand results back as numpy arrays.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use rdmalab::formats::{hpcc_config, pfc};
use rdmalab::scenario::Scenario;
use rdmalab::sim::observe::first_loss::LossSite;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::{Results, RunLimit, StopReason};
use rdmalab::{Error, Time};

use crate::results::{port_info, results_dict};

/// Maps engine errors to Python exceptions: bad input → ValueError, I/O → OSError,
/// broken invariants → RuntimeError.
pub fn to_py(e: Error) -> PyErr {
    match e {
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        Error::Invariant(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A simulation in progress: core's `Runner` (the sequential or the parallel engine) and the
/// output paths an HPCC config names.
#[pyclass(module = "rdmalab._core", unsendable)]
pub struct Simulation {
    /// The engine; `None` once `release` has freed it.
    inner: Option<Runner>,
    /// The results the engine last handed out (`results`), kept so that a released
    /// simulation still writes its FCT and PFC files.
    kept: Option<Results>,
    /// Which engine runs it (`Runner::describe`).
    engine: String,
    /// The congestion control's named settings, when it has them (InfiniBand CC's preset,
    /// table and values: `IbParams::describe`).
    cc_settings: Option<String>,
    fct_path: Option<String>,
    pfc_path: Option<String>,
    /// TRACE_OUTPUT_FILE and QLEN_MON_FILE of an HPCC config, when it asks for them.
    trace_path: Option<String>,
    qlen_path: Option<String>,
    /// The scenario's text: errors found after parsing name its field (and a file's line).
    source: Option<Source>,
    /// An HPCC config's dialect, and in the m4 dialect what its FCT file needs.
    dialect: Option<(&'static str, Option<rdmalab::hpcc_compat::M4Outputs>)>,
    /// The ConWeave dialect's monitor files that a run does not write: (key, path).
    not_written: Vec<(&'static str, String)>,
}

impl Simulation {
    fn plain(inner: Runner, (engine, cc_settings): (String, Option<String>), source: Option<Source>) -> Self {
        let (fct_path, pfc_path, trace_path, qlen_path) = (None, None, None, None);
        let (inner, kept) = (Some(inner), None);
        let dialect = None;
        let not_written = Vec::new();
        Simulation {
            inner,
            kept,
            engine,
            cc_settings,
            fct_path,
            pfc_path,
            trace_path,
            qlen_path,
            source,
            dialect,
            not_written,
        }
    }

    /// The engine, or an error once it was released.
    fn runner(&self) -> PyResult<&Runner> {
        self.inner.as_ref().ok_or_else(released)
    }

    fn runner_mut(&mut self) -> PyResult<&mut Runner> {
        self.inner.as_mut().ok_or_else(released)
    }

    /// The results to write: the engine's current ones, or after `release` those last taken.
    fn latest(&mut self) -> PyResult<std::borrow::Cow<'_, Results>> {
        match (&mut self.inner, &self.kept) {
            (Some(runner), _) => Ok(std::borrow::Cow::Owned(runner.snapshot())),
            (None, Some(kept)) => Ok(std::borrow::Cow::Borrowed(kept)),
            (None, None) => Err(released()),
        }
    }

    /// An engine error as an error of the scenario's file, or of the Python scenario.
    fn locate(&self, e: Error) -> Error {
        match &self.source {
            Some(source) => source.locate(e),
            None => e,
        }
    }
}

/// Where a scenario came from: a TOML file's text and path, or a Python scenario's JSON.
enum Source {
    Toml(String, std::path::PathBuf),
    Json(String),
}

impl Source {
    /// An error the engine found after parsing (`Error::Scenario`) named as the scenario
    /// writes it: `file:line: field ...`, or `<python scenario>: field ...`.
    fn locate(&self, e: Error) -> Error {
        match self {
            Source::Toml(text, path) => rdmalab::scenario::in_scenario_file(e, text, path),
            Source::Json(text) => rdmalab::scenario::in_python_scenario(e, text),
        }
    }

    /// The scenario as its errors name it: the file's path, or `<python scenario>`.
    fn name(&self) -> String {
        match self {
            Source::Toml(_, path) => path.display().to_string(),
            Source::Json(_) => rdmalab::scenario::JSON_SOURCE.to_string(),
        }
    }
}

/// How the caller of `run` gave its thread count: the count, and the command line's option
/// (`--threads`) when it came from there, else the Python argument `threads=`.
struct ThreadsArg<'a> {
    count: Option<u32>,
    option: Option<&'a str>,
}

impl ThreadsArg<'_> {
    /// `Runner::with_threads` on `s`, named `scenario` in errors. The engine names a refused
    /// cut (a zero-delay link between partitions, a mechanism not split yet) by the scenario's
    /// field `threads`; when the count is the caller's own (at least 1: 0 is `auto`, which
    /// falls back rather than fail) no file holds that field, so the error names the count as
    /// the caller gave it, after the scenario it refuses to cut (the file of the links).
    fn runner(&self, s: Scenario, scenario: &str, locate: impl FnOnce(Error) -> Error) -> PyResult<Runner> {
        Runner::with_threads(s, self.count).map_err(|e| match (e, self.count) {
            (Error::Scenario { field, msg }, Some(n)) if n >= 1 && field == "threads" => {
                let said = match self.option {
                    Some(option) => format!("{option} {n}"),
                    None => format!("argument threads={n}"),
                };
                PyValueError::new_err(format!("{scenario}: {said}: {msg}"))
            }
            (e, _) => to_py(locate(e)),
        })
    }
}

/// A TOML scenario's text at `path` into a simulation, every error naming file and line.
fn from_toml_text(text: String, path: &Path, threads: ThreadsArg) -> PyResult<Simulation> {
    let s = Scenario::from_toml(&text, path).map_err(to_py)?;
    let source = Source::Toml(text, path.to_path_buf());
    let cc = cc_settings(&s);
    let runner = threads.runner(s, &source.name(), |e| source.locate(e))?;
    let engine = runner.describe();
    Ok(Simulation::plain(runner, (engine, cc), Some(source)))
}

/// The congestion control's named settings, printed with a run's summary.
fn cc_settings(s: &Scenario) -> Option<String> {
    s.config.cc.ib_params().map(|p| p.describe())
}

/// The run `threads` asks for (`ThreadsArg::runner`) of the HPCC config at `path`, its
/// one-line description and its CC settings.
fn build(s: Scenario, threads: ThreadsArg, path: &str) -> PyResult<(Runner, (String, Option<String>))> {
    let cc = cc_settings(&s);
    let runner = threads.runner(s, path, |e| e)?;
    let engine = runner.describe();
    Ok((runner, (engine, cc)))
}

#[pymethods]
impl Simulation {
    /// From a TOML scenario file.
    #[staticmethod]
    #[pyo3(signature = (path, threads=None, threads_option=None))]
    fn from_toml_file(path: &str, threads: Option<u32>, threads_option: Option<&str>) -> PyResult<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| to_py(Error::Io { path: path.into(), source: e }))?;
        from_toml_text(text, Path::new(path), ThreadsArg { count: threads, option: threads_option })
    }

    /// From TOML text; `path` names it in errors and resolves the relative paths inside.
    #[staticmethod]
    #[pyo3(signature = (text, path, threads=None, threads_option=None))]
    fn from_toml(text: &str, path: &str, threads: Option<u32>, threads_option: Option<&str>) -> PyResult<Self> {
        from_toml_text(text.to_string(), Path::new(path), ThreadsArg { count: threads, option: threads_option })
    }

    /// From a JSON scenario (what `rdmalab.Scenario` produces); `base` resolves paths.
    #[staticmethod]
    #[pyo3(signature = (text, base, threads=None, threads_option=None))]
    fn from_json(text: &str, base: &str, threads: Option<u32>, threads_option: Option<&str>) -> PyResult<Self> {
        let s = Scenario::from_json(text, Path::new(base)).map_err(to_py)?;
        let source = Source::Json(text.to_string());
        let cc = cc_settings(&s);
        let threads = ThreadsArg { count: threads, option: threads_option };
        let runner = threads.runner(s, &source.name(), |e| source.locate(e))?;
        let engine = runner.describe();
        Ok(Simulation::plain(runner, (engine, cc), Some(source)))
    }

    /// From an ns-3 HPCC simulator config file (paths relative to the current directory),
    /// in `dialect` ("reference", "m4", "simai", "conweave"), or in the one its keys show
    /// when `None`. The simai dialect also takes SimAI's `topology` and `workload` files (its
    /// `-n`, `-w`).
    #[staticmethod]
    #[pyo3(signature = (path, threads=None, dialect=None, topology=None, workload=None, threads_option=None))]
    fn from_hpcc_config(
        path: &str,
        threads: Option<u32>,
        dialect: Option<&str>,
        topology: Option<&str>,
        workload: Option<&str>,
        threads_option: Option<&str>,
    ) -> PyResult<Self> {
        let dialect = dialect.map(hpcc_config::Dialect::from_name).transpose().map_err(PyValueError::new_err)?;
        let cfg = hpcc_config::read_config_as(path, dialect).map_err(to_py)?;
        let simai = cfg.dialect == hpcc_config::Dialect::Simai;
        if !simai && (topology.is_some() || workload.is_some()) {
            let msg = format!(
                "{path}: --topology and --workload belong to the simai dialect (this config is {})",
                cfg.dialect.name()
            );
            return Err(PyValueError::new_err(msg));
        }
        let (s, m4) = if simai {
            let (Some(t), Some(w)) = (topology, workload) else {
                let msg = format!(
                    "{path}: the simai dialect needs SimAI's topology (--topology, its -n) and \
                                   workload (--workload, its -w)"
                );
                return Err(PyValueError::new_err(msg));
            };
            (rdmalab::hpcc_compat::simai::load(&cfg, Path::new(t), Path::new(w)).map_err(to_py)?, None)
        } else {
            rdmalab::hpcc_compat::load(&cfg).map_err(to_py)?
        };
        let monitor = s.config.qlen_monitor.is_some();
        let trace = s.config.trace.is_some();
        let show = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let (inner, (engine, cc_settings)) = build(s, ThreadsArg { count: threads, option: threads_option }, path)?;
        Ok(Simulation {
            inner: Some(inner),
            kept: None,
            engine,
            cc_settings,
            fct_path: Some(cfg.fct_output_file.display().to_string()),
            pfc_path: Some(cfg.pfc_output_file.display().to_string()),
            trace_path: if trace { show(&cfg.trace_output_file) } else { None },
            qlen_path: if monitor { show(&cfg.qlen_mon_file) } else { None },
            source: None,
            dialect: Some((cfg.dialect.name(), m4)),
            not_written: cfg.conweave.monitor_files.iter().map(|(k, p)| (*k, p.display().to_string())).collect(),
        })
    }

    /// The files an HPCC config names that the run does not write: the ConWeave artifact's
    /// monitors and logs (docs/hpcc-dialects.md, "The conweave dialect"), as (key, path).
    fn hpcc_not_written(&self) -> Vec<(&'static str, String)> {
        self.not_written.clone()
    }

    /// The dialect of an HPCC config and the key and line that show it when its keys do:
    /// `("m4", ("ENABLE_PFC", 2))`, `("reference", None)`. A ValueError for a file that
    /// cannot be read.
    #[staticmethod]
    fn detect_hpcc_dialect(path: &str) -> PyResult<(&'static str, Option<(&'static str, usize)>)> {
        let text = std::fs::read_to_string(path).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
        let (d, why) = hpcc_config::Dialect::detect(&text);
        Ok((d.name(), why))
    }

    /// The dialect of the HPCC config this simulation came from (None for a scenario).
    fn hpcc_dialect(&self) -> Option<&'static str> {
        self.dialect.as_ref().map(|d| d.0)
    }

    /// Which engine runs the simulation: sequential (and its event order) or the parallel
    /// cut (partitions and window).
    fn engine(&self) -> String {
        self.engine.clone()
    }

    /// The congestion control's named settings (InfiniBand CC: its preset, table and every
    /// value), or None.
    fn cc_settings(&self) -> Option<String> {
        self.cc_settings.clone()
    }

    /// Where a parallel run's threads spent its calls of `run` so far (None for the
    /// sequential engine): partitions, window length, windows, events per partition, the
    /// critical path in events, the packets each partition sent across the cut, and per
    /// thread the CPU seconds used and wall seconds waited at the windows' barriers. Every
    /// figure but the last two does not depend on the machine's load.
    fn parallel_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(Runner::Many(p)) = &self.inner else { return Ok(None) };
        let d = PyDict::new(py);
        d.set_item("partitions", p.partitions())?;
        d.set_item("lookahead_ps", p.lookahead().0)?;
        d.set_item("windows", p.windows())?;
        d.set_item("events_per_partition", p.events_per_partition())?;
        d.set_item("critical_path_events", p.critical_path_events())?;
        d.set_item("crossed_per_partition", p.crossings_per_partition())?;
        d.set_item("cpu_s", p.thread_times().iter().map(|t| t.cpu_s).collect::<Vec<_>>())?;
        d.set_item("wait_s", p.thread_times().iter().map(|t| t.wait_s).collect::<Vec<_>>())?;
        Ok(Some(d))
    }

    /// Output paths named by an HPCC config: (FCT_OUTPUT_FILE, PFC_OUTPUT_FILE).
    fn output_paths(&self) -> (Option<String>, Option<String>) {
        (self.fct_path.clone(), self.pfc_path.clone())
    }

    /// The optional outputs of an HPCC config: (TRACE_OUTPUT_FILE when ENABLE_TRACE is on,
    /// QLEN_MON_FILE when QLEN_MON_START < QLEN_MON_END).
    fn monitor_paths(&self) -> (Option<String>, Option<String>) {
        (self.trace_path.clone(), self.qlen_path.clone())
    }

    /// Writes the queue-length monitor's blocks (the reference's QLEN_MON_FILE format).
    fn write_qlen_monitor(&mut self, path: &str) -> PyResult<()> {
        let text = self.runner_mut()?.qlen_monitor_text();
        std::fs::write(path, text).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
    }

    /// Runs at most `max_events` events, not past `until_ps`. Returns why it stopped:
    /// "finished", "stop_time", "paused", "stalled" or "pfc_deadlock".
    #[pyo3(signature = (max_events=None, until_ps=None))]
    fn run(&mut self, py: Python<'_>, max_events: Option<u64>, until_ps: Option<u64>) -> PyResult<&'static str> {
        let limit = RunLimit { until: until_ps.map_or(Time::MAX, Time), max_events: max_events.unwrap_or(u64::MAX) };
        let inner = self.runner_mut()?;
        let reason: StopReason = py.allow_threads(|| inner.run(limit));
        Ok(reason.name())
    }

    /// Settings that are valid but probably unintended, each saying what the run will do.
    fn warnings(&self) -> PyResult<Vec<String>> {
        Ok(self.runner()?.warnings().to_vec())
    }

    /// (flows completed, flows total).
    fn progress(&self) -> PyResult<(usize, usize)> {
        Ok(self.runner()?.progress())
    }

    /// Current simulated time in ps.
    fn now_ps(&self) -> PyResult<u64> {
        Ok(self.runner()?.now().0)
    }

    /// Results as a dict of numpy arrays and counters. With `check`, fails (RuntimeError)
    /// if bytes were not conserved or a lossless run dropped packets; with `keep` as well, it
    /// returns the results instead, with `failure`: the check's message and, for a lossless
    /// drop, `first_drop` (node, port, class, time_ps of the first). With `release`, the
    /// engine is freed (`release`) once the results are taken and before they become numpy
    /// arrays, so that the two never sit in memory together.
    #[pyo3(signature = (check=true, release=false, keep=false))]
    fn results<'py>(
        &mut self,
        py: Python<'py>,
        check: bool,
        release: bool,
        keep: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let runner = self.runner_mut()?;
        let (r, failure) = if check { runner.checked_results() } else { (runner.snapshot(), None) };
        let failure = match failure {
            Some(e) if !keep => return Err(to_py(e)),
            kept => kept,
        };
        let ports = port_info(py, runner.topology())?;
        if release {
            self.inner = None;
        }
        let d = results_dict(py, &r)?;
        d.set_item("port_info", ports)?;
        if let Some(e) = failure {
            d.set_item("failure", failure_dict(py, &e, r.first_loss.as_ref())?)?;
        }
        self.kept = Some(r);
        Ok(d)
    }

    /// The run's outcome without its tables (counters, `stall_cause`, `deadlock` hops,
    /// `slowdown_rows`, `needs_tables`), as plain Python values, and `failure` as `results`
    /// gives it under `check` and `keep`. What `rdmalab hpcc` prints its summary from: no
    /// record becomes a column, and numpy is not loaded.
    #[pyo3(signature = (check=true))]
    fn outcome<'py>(&mut self, py: Python<'py>, check: bool) -> PyResult<Bound<'py, PyDict>> {
        let runner = self.runner_mut()?;
        let (r, failure) = if check { runner.checked_results() } else { (runner.snapshot(), None) };
        let d = crate::outcome::outcome_dict(py, &r)?;
        if let Some(e) = failure {
            d.set_item("failure", failure_dict(py, &e, r.first_loss.as_ref())?)?;
        }
        self.kept = Some(r);
        Ok(d)
    }

    /// Frees the engine (the fabric, its queues, the NICs and their QPs) once the results
    /// are taken, so that what Python builds from them does not sit on top of it: at a
    /// million hosts the engine is most of a run's memory. Afterwards `write_fct` and
    /// `write_pfc` write the results `results` last returned, and every method that needs
    /// the engine raises RuntimeError. Releasing twice does nothing.
    fn release(&mut self) {
        if let Some(mut runner) = self.inner.take() {
            if self.kept.is_none() {
                self.kept = Some(runner.snapshot());
            }
        }
    }

    /// Writes the completed flows in the reference's FCT format, or in the m4 dialect's
    /// (the flow's id first, the FCT to the receiver's last byte, the fork's standalone FCT;
    /// lines in the order the receivers got the last bytes, as the fork writes them), or in
    /// the ConWeave dialect's (the reference's, with node ids in place of the addresses).
    fn write_fct(&mut self, path: &str) -> PyResult<()> {
        let m4 = self.dialect.as_ref().and_then(|d| d.1.clone());
        let node_ids = matches!(self.dialect, Some(("conweave", _)));
        let r = self.latest()?;
        let mut w = create(path)?;
        let io = |e: std::io::Error| PyOSError::new_err(format!("{path}: {e}"));
        if node_ids {
            for x in r.all_records().map_err(io)? {
                let line = rdmalab::formats::fct::FctLine::from_record(&x);
                rdmalab::formats::fct::write_fct_line_node_ids(&mut w, &line).map_err(io)?;
            }
            return Ok(());
        }
        let Some(m4) = m4 else { return r.write_fct(&mut w).map_err(io) };
        let mut all = r.all_records().map_err(io)?;
        all.sort_by_key(|x| (x.rx.delivered.max(x.start + x.fct), x.flow));
        for x in &all {
            let i = x.flow as usize;
            let (id, standalone) = (m4.ids.get(i).copied().unwrap_or(i as u64), m4.standalone_ns.get(i).copied());
            rdmalab::formats::hpcc_m4::write_fct_line(&mut w, id, x, standalone.unwrap_or(0)).map_err(io)?;
        }
        Ok(())
    }

    /// Writes the PFC frames received in the reference's PFC format.
    fn write_pfc(&mut self, path: &str) -> PyResult<()> {
        let r = self.latest()?;
        let mut w = create(path)?;
        pfc::write_pfc(&mut w, &r.pfc_events).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
    }

    /// True when the scenario has a `[trace]` table.
    fn trace_requested(&self) -> PyResult<bool> {
        Ok(self.runner()?.trace_requested())
    }

    /// Starts the per-packet trace into the CSV spool file `path`; returns its estimated
    /// size in bytes. A ValueError when the estimate exceeds `trace.max_bytes`.
    fn start_trace(&mut self, path: &str) -> PyResult<u64> {
        let e = match self.runner_mut()?.start_trace(Path::new(path)) {
            Ok(estimate) => return Ok(estimate),
            Err(e) => e,
        };
        Err(to_py(self.locate(e)))
    }

    /// Flushes the trace: (records written, truncated at the cap).
    fn finish_trace(&mut self) -> PyResult<(u64, bool)> {
        self.runner_mut()?.finish_trace().map_err(to_py)
    }

    /// Number of hosts, switches and links.
    fn topology_size(&self) -> PyResult<(usize, usize, usize)> {
        let t = self.runner()?.topology();
        Ok((t.hosts().count(), t.switches().count(), t.links.len()))
    }
}

/// A failed check for Python: its message and, for a lossless drop, where and when the
/// first packet was lost.
fn failure_dict<'py>(py: Python<'py>, e: &Error, first: Option<&LossSite>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("message", e.to_string())?;
    let site = match first {
        Some(s) => {
            let site = PyDict::new(py);
            site.set_item("node", s.node.0)?;
            site.set_item("port", s.port)?;
            site.set_item("class", s.class)?;
            site.set_item("time_ps", s.time.0)?;
            Some(site)
        }
        None => None,
    };
    d.set_item("first_drop", site)?;
    Ok(d)
}

/// The error of a call that needs the engine after `release` freed it.
fn released() -> PyErr {
    PyRuntimeError::new_err(
        "the simulation's engine was released (Simulation.release) after its results were taken; \
         build a new Simulation to run again",
    )
}

fn create(path: &str) -> PyResult<BufWriter<File>> {
    File::create(path).map(BufWriter::new).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
}

/// A time in ns-3 spelling (`"2ms"`, `"500ns"`) in picoseconds, parsed as scenarios are.
#[pyfunction]
fn parse_time_ps(s: &str) -> PyResult<u64> {
    rdmalab::formats::units_parse::parse_time(s)
        .map(|t| t.0)
        .map_err(|e| PyValueError::new_err(format!("{s:?}: {}", e.0)))
}

/// Checks a JSON scenario's fields the way `Simulation.from_json` does before it builds
/// anything (names, types, variants), without building it: a `ValueError` naming the field.
#[pyfunction]
fn check_scenario_fields(text: &str) -> PyResult<()> {
    Scenario::check_json_fields(text).map_err(to_py)
}

/// Adds the simulator class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(parse_time_ps, m)?)?;
    m.add_function(wrap_pyfunction!(check_scenario_fields, m)?)?;
    m.add_function(wrap_pyfunction!(table_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    m.add_function(wrap_pyfunction!(build_commit, m)?)
}

/// The scenario file's JSON Schema (draft 7), derived from the parser's structs.
#[pyfunction]
fn scenario_schema() -> String {
    rdmalab::scenario::scenario_schema_json()
}

/// The short commit the engine was built from ("unknown" when built outside a git checkout).
#[pyfunction]
fn build_commit() -> &'static str {
    env!("RDMALAB_BUILD_COMMIT")
}

/// Every mechanism table's schema (`rdmalab::sim::mech::TABLE_SCHEMAS`): a list of
/// `(name, [(column, kind), ...])`, kinds `u16`, `u32`, `u64`, `f64` or `ps`, in the order
/// Python shows the columns.
#[pyfunction]
fn table_schemas() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    rdmalab::sim::mech::TABLE_SCHEMAS
        .iter()
        .map(|s| (s.name, s.columns.iter().map(|(c, k)| (*c, k.name())).collect()))
        .collect()
}
