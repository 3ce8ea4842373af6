//! Bindings of the packet-level simulator: build from a scenario, run in slices (so Python
//! can show progress and stop on Ctrl-C), and hand results back as numpy arrays.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use numpy::IntoPyArray;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use rdmalab::formats::{fct, hpcc_config, pfc};
use rdmalab::multipath::{MpChunkRecord, MpMessageRecord, MpPathRecord};
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::{ParallelRun, Runner};
use rdmalab::sim::{Results, RunLimit, StopReason, UnreachableFlow};
use rdmalab::stats::RateSample;
use rdmalab::{Error, Time};

/// Maps engine errors to Python exceptions: bad input → ValueError, I/O → OSError,
/// broken invariants → RuntimeError.
pub fn to_py(e: Error) -> PyErr {
    match e {
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        Error::Invariant(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A simulation in progress.
#[pyclass(module = "rdmalab._core", unsendable)]
pub struct Simulation {
    inner: Engine,
    /// Which engine runs it (`Runner::describe`).
    engine: String,
    fct_path: Option<String>,
    pfc_path: Option<String>,
    /// TRACE_OUTPUT_FILE and QLEN_MON_FILE of an HPCC config, when it asks for them.
    trace_path: Option<String>,
    qlen_path: Option<String>,
}

/// `threads` (when given) overrides the scenario's own (`SimConfig::threads`); 0 asks for
/// the command line's default (`Runner::auto`).
fn build(mut s: Scenario, threads: Option<u32>) -> PyResult<(Engine, String)> {
    let runner = match threads {
        Some(0) => Runner::auto(s),
        Some(n) => {
            s.config.threads = Some(n);
            Runner::new(s)
        }
        None => Runner::new(s),
    }
    .map_err(to_py)?;
    let engine = runner.describe();
    match runner {
        Runner::One(sim) => Ok((Engine::One(sim), engine)),
        Runner::Many(p) => Ok((Engine::Many(p), engine)),
    }
}

/// The sequential engine, or the parallel one (`threads` > 1), behind one interface.
enum Engine {
    One(Box<rdmalab::sim::Simulation>),
    Many(ParallelRun),
}

impl Engine {
    fn run(&mut self, limit: RunLimit) -> StopReason {
        match self {
            Engine::One(s) => s.run(limit),
            Engine::Many(p) => p.run(limit),
        }
    }
    fn warnings(&self) -> &[String] {
        match self {
            Engine::One(s) => s.warnings(),
            Engine::Many(p) => p.warnings(),
        }
    }
    fn progress(&self) -> (usize, usize) {
        match self {
            Engine::One(s) => s.progress(),
            Engine::Many(p) => p.progress(),
        }
    }
    fn now(&self) -> Time {
        match self {
            Engine::One(s) => s.now(),
            Engine::Many(p) => p.now(),
        }
    }
    fn results(&mut self) -> rdmalab::Result<Results> {
        match self {
            Engine::One(s) => s.results(),
            Engine::Many(p) => p.results(),
        }
    }
    fn snapshot(&mut self) -> Results {
        match self {
            Engine::One(s) => s.snapshot(),
            Engine::Many(p) => p.snapshot(),
        }
    }
    fn topology(&self) -> &rdmalab::topology::Topology {
        match self {
            Engine::One(s) => s.topology(),
            Engine::Many(p) => p.topology(),
        }
    }
    fn qlen_monitor_text(&mut self) -> Vec<u8> {
        match self {
            Engine::One(s) => s.qlen_monitor_text(),
            Engine::Many(p) => p.qlen_monitor_text(),
        }
    }
    fn trace_requested(&self) -> bool {
        match self {
            Engine::One(s) => s.trace_requested(),
            Engine::Many(p) => p.trace_requested(),
        }
    }
    fn start_trace(&mut self, path: &Path) -> rdmalab::Result<u64> {
        match self {
            Engine::One(s) => s.start_trace(path),
            Engine::Many(p) => p.start_trace(path),
        }
    }
    fn finish_trace(&mut self) -> rdmalab::Result<(u64, bool)> {
        match self {
            Engine::One(s) => s.finish_trace(),
            Engine::Many(p) => p.finish_trace(),
        }
    }
}

#[pymethods]
impl Simulation {
    /// From a TOML scenario file.
    #[staticmethod]
    #[pyo3(signature = (path, threads=None))]
    fn from_toml_file(path: &str, threads: Option<u32>) -> PyResult<Self> {
        let s = Scenario::from_file(Path::new(path)).map_err(to_py)?;
        let (inner, engine) = build(s, threads)?;
        Ok(Simulation { inner, engine, fct_path: None, pfc_path: None, trace_path: None, qlen_path: None })
    }

    /// From a JSON scenario (what `rdmalab.Scenario` produces); `base` resolves paths.
    #[staticmethod]
    #[pyo3(signature = (text, base, threads=None))]
    fn from_json(text: &str, base: &str, threads: Option<u32>) -> PyResult<Self> {
        let s = Scenario::from_json(text, Path::new(base)).map_err(to_py)?;
        let (inner, engine) = build(s, threads)?;
        Ok(Simulation { inner, engine, fct_path: None, pfc_path: None, trace_path: None, qlen_path: None })
    }

    /// From an ns-3 HPCC simulator config file (paths relative to the current directory).
    #[staticmethod]
    #[pyo3(signature = (path, threads=None))]
    fn from_hpcc_config(path: &str, threads: Option<u32>) -> PyResult<Self> {
        let cfg = hpcc_config::read_config(path).map_err(to_py)?;
        let s = rdmalab::hpcc_compat::scenario_from_config(&cfg).map_err(to_py)?;
        let monitor = s.config.qlen_monitor.is_some();
        let trace = s.config.trace.is_some();
        let show = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let (inner, engine) = build(s, threads)?;
        Ok(Simulation {
            inner,
            engine,
            fct_path: Some(cfg.fct_output_file.display().to_string()),
            pfc_path: Some(cfg.pfc_output_file.display().to_string()),
            trace_path: if trace { show(&cfg.trace_output_file) } else { None },
            qlen_path: if monitor { show(&cfg.qlen_mon_file) } else { None },
        })
    }

    /// Which engine runs the simulation: sequential (and its event order) or the parallel
    /// cut (partitions and window).
    fn engine(&self) -> String {
        self.engine.clone()
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
        let text = self.inner.qlen_monitor_text();
        std::fs::write(path, text).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
    }

    /// Runs at most `max_events` events, not past `until_ps`. Returns why it stopped:
    /// "finished", "stop_time", "paused", "stalled" or "pfc_deadlock".
    #[pyo3(signature = (max_events=None, until_ps=None))]
    fn run(&mut self, py: Python<'_>, max_events: Option<u64>, until_ps: Option<u64>) -> &'static str {
        let limit = RunLimit { until: until_ps.map_or(Time::MAX, Time), max_events: max_events.unwrap_or(u64::MAX) };
        let inner = &mut self.inner;
        let reason: StopReason = py.allow_threads(|| inner.run(limit));
        reason.name()
    }

    /// Settings that are valid but probably unintended, each saying what the run will do.
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings().to_vec()
    }

    /// (flows completed, flows total).
    fn progress(&self) -> (usize, usize) {
        self.inner.progress()
    }

    /// Current simulated time in ps.
    fn now_ps(&self) -> u64 {
        self.inner.now().0
    }

    /// Results as a dict of numpy arrays and counters. With `check`, fails (RuntimeError)
    /// if bytes were not conserved or a lossless run dropped packets.
    #[pyo3(signature = (check=true))]
    fn results<'py>(&mut self, py: Python<'py>, check: bool) -> PyResult<Bound<'py, PyDict>> {
        let r = if check { self.inner.results().map_err(to_py)? } else { self.inner.snapshot() };
        let d = results_dict(py, &r)?;
        d.set_item("port_info", port_info(py, self.inner.topology())?)?;
        Ok(d)
    }

    /// Writes the completed flows in the reference's FCT format.
    fn write_fct(&mut self, path: &str) -> PyResult<()> {
        let r = self.inner.snapshot();
        let mut w = create(path)?;
        fct::write_fct(&mut w, &r.records).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
    }

    /// Writes the PFC frames received in the reference's PFC format.
    fn write_pfc(&mut self, path: &str) -> PyResult<()> {
        let r = self.inner.snapshot();
        let mut w = create(path)?;
        pfc::write_pfc(&mut w, &r.pfc_events).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
    }

    /// True when the scenario has a `[trace]` table.
    fn trace_requested(&self) -> bool {
        self.inner.trace_requested()
    }

    /// Starts the per-packet trace into the CSV spool file `path`; returns its estimated
    /// size in bytes. A ValueError when the estimate exceeds `trace.max_bytes`.
    fn start_trace(&mut self, path: &str) -> PyResult<u64> {
        self.inner.start_trace(Path::new(path)).map_err(to_py)
    }

    /// Flushes the trace: (records written, truncated at the cap).
    fn finish_trace(&mut self) -> PyResult<(u64, bool)> {
        self.inner.finish_trace().map_err(to_py)
    }

    /// Number of hosts, switches and links.
    fn topology_size(&self) -> (usize, usize, usize) {
        let t = self.inner.topology();
        (t.hosts().count(), t.switches().count(), t.links.len())
    }
}

fn create(path: &str) -> PyResult<BufWriter<File>> {
    File::create(path).map(BufWriter::new).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
}

fn results_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let flows = PyDict::new(py);
    let col = |f: &dyn Fn(&rdmalab::stats::FlowRecord) -> u64| r.records.iter().map(f).collect::<Vec<u64>>();
    flows.set_item("flow", col(&|x| x.flow as u64).into_pyarray(py))?;
    flows.set_item("src", col(&|x| x.src.0 as u64).into_pyarray(py))?;
    flows.set_item("dst", col(&|x| x.dst.0 as u64).into_pyarray(py))?;
    flows.set_item("sip", col(&|x| x.sip as u64).into_pyarray(py))?;
    flows.set_item("dip", col(&|x| x.dip as u64).into_pyarray(py))?;
    flows.set_item("sport", col(&|x| x.sport as u64).into_pyarray(py))?;
    flows.set_item("dport", col(&|x| x.dport as u64).into_pyarray(py))?;
    flows.set_item("size", col(&|x| x.size).into_pyarray(py))?;
    flows.set_item("start_ps", col(&|x| x.start.0).into_pyarray(py))?;
    flows.set_item("fct_ps", col(&|x| x.fct.0).into_pyarray(py))?;
    flows.set_item("ideal_ps", col(&|x| x.ideal.0).into_pyarray(py))?;
    flows.set_item("tenant", col(&|x| x.tenant as u64).into_pyarray(py))?;
    d.set_item("flows", flows)?;
    d.set_item("tenant_names", r.tenant_names.clone())?;
    let tb = PyDict::new(py);
    let bins = &r.tenant_bins;
    tb.set_item("tenant", bins.iter().map(|b| b.tenant as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    tb.set_item("bin", bins.iter().map(|b| b.bin as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    tb.set_item("bytes", bins.iter().map(|b| b.bytes).collect::<Vec<u64>>().into_pyarray(py))?;
    let names: Vec<&str> = bins.iter().map(|b| r.tenant_names[b.tenant as usize].as_str()).collect();
    tb.set_item("tenant_name", names)?;
    d.set_item("tenant_bins", tb)?;
    d.set_item("tenant_bin_ps", rdmalab::tenancy::METER_BIN.0)?;
    let c = &r.counters;
    let counters = PyDict::new(py);
    for (k, v) in [
        ("events", c.events),
        ("data_packets_sent", c.data_packets_sent),
        ("payload_bytes_sent", c.payload_bytes_sent),
        ("payload_bytes_delivered", c.payload_bytes_delivered),
        ("payload_bytes_dropped", c.payload_bytes_dropped),
        ("payload_bytes_in_flight", r.payload_in_flight),
        ("packet_hops", c.packet_hops),
        ("drops", c.drops),
        ("pauses", c.pauses),
        ("resumes", c.resumes),
        ("ecn_marks", c.ecn_marks),
        ("timeouts", c.timeouts),
        ("nacks", c.nacks),
        ("wr_failures", c.wr_failures),
        ("qps_opened", c.qps_opened),
        ("qps_peak", c.qps_peak),
        ("link_error_losses", c.link_error_losses),
        ("link_down_losses", c.link_down_losses),
        ("no_route_drops", c.no_route_drops),
        ("link_failures", c.link_failures),
        ("reroutes", c.reroutes),
        ("qp_cache_hits", c.qp_cache_hits),
        ("qp_cache_misses", c.qp_cache_misses),
        ("deflections", c.deflections),
        ("resequenced", c.resequenced),
        ("reseq_escapes", c.reseq_escapes),
        ("reseq_held", r.reseq_held as u64),
        ("flows_total", r.flows_total as u64),
        ("flows_completed", r.records.len() as u64),
        ("flows_unreachable", r.unreachable.len() as u64),
        ("last_completion_ps", r.last_completion.0),
        ("end_time_ps", r.end_time.0),
        ("deadlocks", r.deadlocks),
    ] {
        counters.set_item(k, v)?;
    }
    d.set_item("counters", counters)?;
    d.set_item("unreachable", unreachable_dict(py, &r.unreachable)?)?;
    let ports = PyDict::new(py);
    let pc = |f: &dyn Fn(&rdmalab::stats::PortCounters) -> u64| r.ports.iter().map(f).collect::<Vec<u64>>();
    ports.set_item("tx_bytes", pc(&|p| p.tx_bytes).into_pyarray(py))?;
    ports.set_item("tx_packets", pc(&|p| p.tx_packets).into_pyarray(py))?;
    ports.set_item("pause_sent", pc(&|p| p.pause_sent).into_pyarray(py))?;
    ports.set_item("pause_received", pc(&|p| p.pause_received).into_pyarray(py))?;
    ports.set_item("paused_ps", pc(&|p| p.paused_ps).into_pyarray(py))?;
    ports.set_item("ecn_marks", pc(&|p| p.ecn_marks).into_pyarray(py))?;
    ports.set_item("drops", pc(&|p| p.drops).into_pyarray(py))?;
    d.set_item("ports", ports)?;
    d.set_item("classes", class_dict(py, &r.classes)?)?;
    let pfcd = PyDict::new(py);
    let ev = &r.pfc_events;
    pfcd.set_item("time_ps", ev.iter().map(|e| e.time.0).collect::<Vec<u64>>().into_pyarray(py))?;
    pfcd.set_item("node", ev.iter().map(|e| e.node.0 as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    pfcd.set_item("ifindex", ev.iter().map(|e| e.ifindex as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    pfcd.set_item("pause", ev.iter().map(|e| e.pause as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    d.set_item("pfc", pfcd)?;
    let q = PyDict::new(py);
    let qs = &r.queue_samples;
    q.set_item("time_ps", qs.iter().map(|s| s.0 .0).collect::<Vec<u64>>().into_pyarray(py))?;
    q.set_item("port", qs.iter().map(|s| s.1 .0 as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    q.set_item("bytes", qs.iter().map(|s| s.2).collect::<Vec<u64>>().into_pyarray(py))?;
    d.set_item("queue_samples", q)?;
    let l = PyDict::new(py);
    let ls = &r.link_samples;
    l.set_item("time_ps", ls.iter().map(|s| s.0 .0).collect::<Vec<u64>>().into_pyarray(py))?;
    l.set_item("port", ls.iter().map(|s| s.1 .0 as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    l.set_item("bytes", ls.iter().map(|s| s.2).collect::<Vec<u64>>().into_pyarray(py))?;
    d.set_item("link_samples", l)?;
    d.set_item("rates", rate_dict(py, &r.rate_samples)?)?;
    d.set_item("deadlock", deadlock_dict(py, r)?)?;
    d.set_item("stall_cause", r.stall_cause.clone())?;
    d.set_item("messages", message_dict(py, &r.mp_messages)?)?;
    d.set_item("chunks", chunk_dict(py, &r.mp_chunks)?)?;
    d.set_item("paths", path_dict(py, &r.mp_paths)?)?;
    d.set_item("host_model", host_model_dict(py, r)?)?;
    Ok(d)
}

/// Seed 000's host model: applications, their batches (ps; `seen_ps` NaN while
/// unfinished) and DRUM's per-period allocations.
fn host_model_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("app_name", r.host_apps.iter().map(|a| a.0.clone()).collect::<Vec<String>>())?;
    d.set_item("app_host", r.host_apps.iter().map(|a| a.1 .0 as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    d.set_item("app_dst", r.host_apps.iter().map(|a| a.2 .0 as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    d.set_item("app_done", r.host_apps.iter().map(|a| a.3 as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    let b = &r.host_batches;
    let col = |f: &dyn Fn(&rdmalab::app::closed_loop::BatchRecord) -> u64| {
        b.iter().map(f).collect::<Vec<u64>>().into_pyarray(py)
    };
    let batches = PyDict::new(py);
    batches.set_item("app", col(&|x| x.app as u64))?;
    batches.set_item("batch", col(&|x| x.batch as u64))?;
    batches.set_item("wr_num", col(&|x| x.wr_num as u64))?;
    batches.set_item("size", col(&|x| x.size))?;
    batches.set_item("posted_ps", col(&|x| x.posted.0))?;
    let seen: Vec<f64> = b.iter().map(|x| if x.seen == Time::MAX { f64::NAN } else { x.seen.0 as f64 }).collect();
    batches.set_item("seen_ps", seen.into_pyarray(py))?;
    d.set_item("batches", batches)?;
    let rows = &r.drum_rows;
    let drum = PyDict::new(py);
    drum.set_item("t_ps", rows.iter().map(|x| x.t.0).collect::<Vec<u64>>().into_pyarray(py))?;
    drum.set_item("app", rows.iter().map(|x| x.app as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    let fcol = |f: &dyn Fn(&rdmalab::app::drum_agent::DrumRow) -> f64| {
        rows.iter().map(f).collect::<Vec<f64>>().into_pyarray(py)
    };
    drum.set_item("x", fcol(&|x| x.x))?;
    drum.set_item("z", fcol(&|x| x.z))?;
    drum.set_item("a", fcol(&|x| x.a))?;
    drum.set_item("rate", fcol(&|x| x.rate))?;
    drum.set_item("active", rows.iter().map(|x| x.active as u64).collect::<Vec<u64>>().into_pyarray(py))?;
    d.set_item("drum", drum)?;
    d.set_item("wqes_processed", r.wqes_processed)?;
    Ok(d)
}

/// Traffic classes as columns, one row per class (empty without `[[fabric.classes]]`).
fn class_dict<'py>(py: Python<'py>, cs: &[rdmalab::sim::ClassRecord]) -> PyResult<Bound<'py, PyDict>> {
    use rdmalab::fabric::classes::Scheduler;
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&rdmalab::sim::ClassRecord) -> u64| cs.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    d.set_item("pg", col(&|c| c.pg as u64))?;
    d.set_item("scheduler", cs.iter().map(|c| c.config.scheduler.name()).collect::<Vec<&str>>())?;
    let weight = |c: &rdmalab::sim::ClassRecord| match c.config.scheduler {
        Scheduler::Dwrr(w) => w as u64,
        Scheduler::Strict => 0,
    };
    d.set_item("weight", col(&weight))?;
    d.set_item("pfc", cs.iter().map(|c| c.config.pfc).collect::<Vec<bool>>())?;
    d.set_item("tx_bytes", col(&|c| c.counters.tx_bytes))?;
    d.set_item("tx_packets", col(&|c| c.counters.tx_packets))?;
    d.set_item("drops", col(&|c| c.counters.drops))?;
    d.set_item("pauses", col(&|c| c.counters.pauses))?;
    d.set_item("ecn_marks", col(&|c| c.counters.ecn_marks))?;
    Ok(d)
}

/// The first PFC deadlock's cycle as columns (one row per hop; empty when none), with
/// when it formed and was found on every row.
fn deadlock_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let hops = r.deadlock.as_ref().map_or(&[][..], |x| &x.cycle[..]);
    let (formed, detected) = r.deadlock.as_ref().map_or((0, 0), |x| (x.formed.0, x.detected.0));
    let col = |f: &dyn Fn(&rdmalab::sim::CycleHop) -> u64| hops.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    d.set_item("node", col(&|h| h.node.0 as u64))?;
    d.set_item("port", col(&|h| h.ifindex as u64))?;
    d.set_item("priority", col(&|h| h.priority as u64))?;
    d.set_item("formed_ps", col(&|_| formed))?;
    d.set_item("detected_ps", col(&|_| detected))?;
    Ok(d)
}

/// A time in ps as a float, NaN when absent (unfinished).
fn opt_ps(t: Option<Time>) -> f64 {
    t.map_or(f64::NAN, |t| t.0 as f64)
}

/// Multipath messages as columns (times in ps; NaN where not finished).
fn message_dict<'py>(py: Python<'py>, ms: &[MpMessageRecord]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&MpMessageRecord) -> u64| ms.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    let fcol = |f: &dyn Fn(&MpMessageRecord) -> f64| ms.iter().map(f).collect::<Vec<f64>>().into_pyarray(py);
    d.set_item("message", col(&|m| m.message.0 as u64))?;
    d.set_item("src", col(&|m| m.src.0 as u64))?;
    d.set_item("dst", col(&|m| m.dst.0 as u64))?;
    d.set_item("size", col(&|m| m.size))?;
    d.set_item("qps", col(&|m| m.qps as u64))?;
    d.set_item("chunks", col(&|m| m.chunks))?;
    d.set_item("start_ps", col(&|m| m.start.0))?;
    d.set_item("fct_ps", fcol(&|m| opt_ps(m.fct)))?;
    d.set_item("recv_done_ps", fcol(&|m| opt_ps(m.recv_done)))?;
    d.set_item("ideal_ps", col(&|m| m.ideal.0))?;
    d.set_item("bytes_placed", col(&|m| m.bytes_placed))?;
    d.set_item("wrs", col(&|m| m.wrs))?;
    d.set_item("cqes", col(&|m| m.cqes))?;
    d.set_item("recv_cqe_ps", fcol(&|m| opt_ps(m.recv_cqe)))?;
    d.set_item("probe_ps", col(&|m| m.probe.0))?;
    Ok(d)
}

/// Virtuoso paths as columns.
fn path_dict<'py>(py: Python<'py>, ps: &[MpPathRecord]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&MpPathRecord) -> u64| ps.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    d.set_item("connection", col(&|p| p.conn.0 as u64))?;
    d.set_item("path", col(&|p| p.path as u64))?;
    d.set_item("sip", col(&|p| p.sip as u64))?;
    d.set_item("cap_gbps", ps.iter().map(|p| p.cap_gbps).collect::<Vec<f64>>().into_pyarray(py))?;
    d.set_item("bytes", col(&|p| p.bytes))?;
    d.set_item("max_wr", col(&|p| p.max_wr))?;
    Ok(d)
}

/// Multipath chunks as columns; `path` as node ids joined by `-`.
fn chunk_dict<'py>(py: Python<'py>, cs: &[MpChunkRecord]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&MpChunkRecord) -> u64| cs.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    let fcol = |f: &dyn Fn(&MpChunkRecord) -> f64| cs.iter().map(f).collect::<Vec<f64>>().into_pyarray(py);
    d.set_item("message", col(&|c| c.message.0 as u64))?;
    d.set_item("chunk", col(&|c| c.chunk as u64))?;
    d.set_item("qp", col(&|c| c.qp as u64))?;
    d.set_item("sport", col(&|c| c.sport as u64))?;
    d.set_item("sip", col(&|c| c.sip as u64))?;
    d.set_item("offset", col(&|c| c.offset))?;
    d.set_item("size", col(&|c| c.size))?;
    d.set_item("post_ps", col(&|c| c.post.0))?;
    d.set_item("done_ps", fcol(&|c| opt_ps(c.done)))?;
    d.set_item("recv_ps", fcol(&|c| opt_ps(c.recv)))?;
    let paths: Vec<String> =
        cs.iter().map(|c| c.path.iter().map(|n| n.0.to_string()).collect::<Vec<_>>().join("-")).collect();
    d.set_item("path", paths)?;
    Ok(d)
}

/// Flows given up because their destination became unreachable.
fn unreachable_dict<'py>(py: Python<'py>, u: &[UnreachableFlow]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&UnreachableFlow) -> u64| u.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    d.set_item("flow", col(&|x| x.flow as u64))?;
    d.set_item("src", col(&|x| x.src.0 as u64))?;
    d.set_item("dst", col(&|x| x.dst.0 as u64))?;
    d.set_item("size", col(&|x| x.size))?;
    d.set_item("start_ps", col(&|x| x.start.0))?;
    d.set_item("at_ps", col(&|x| x.at.0))?;
    Ok(d)
}

/// What names every port: its node and kind (0 host, 1 switch), its index on the node,
/// the peer's node and port index, its rate and its link, indexed by port id.
fn port_info<'py>(py: Python<'py>, t: &rdmalab::topology::Topology) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&rdmalab::topology::Port) -> u64| t.ports.iter().map(f).collect::<Vec<u64>>();
    d.set_item("node", col(&|p| p.node.0 as u64).into_pyarray(py))?;
    d.set_item("switch", col(&|p| !t.is_host(p.node) as u64).into_pyarray(py))?;
    d.set_item("port", col(&|p| p.ifindex as u64 - 1).into_pyarray(py))?;
    d.set_item("peer_node", col(&|p| p.peer_node.0 as u64).into_pyarray(py))?;
    d.set_item("peer_switch", col(&|p| !t.is_host(p.peer_node) as u64).into_pyarray(py))?;
    d.set_item("peer_port", col(&|p| t.ports[p.peer.idx()].ifindex as u64 - 1).into_pyarray(py))?;
    d.set_item("rate_bps", col(&|p| t.links[p.link.idx()].rate.0).into_pyarray(py))?;
    d.set_item("link_index", col(&|p| p.link.0 as u64).into_pyarray(py))?;
    Ok(d)
}

/// Per-QP rate samples as columns (empty when sampling was off).
fn rate_dict<'py>(py: Python<'py>, rs: &[RateSample]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&RateSample) -> u64| rs.iter().map(f).collect::<Vec<u64>>().into_pyarray(py);
    d.set_item("time_ps", col(&|s| s.time.0))?;
    d.set_item("qp", col(&|s| s.qp.0 as u64))?;
    d.set_item("flow", col(&|s| s.flow as u64))?;
    d.set_item("src", col(&|s| s.src.0 as u64))?;
    d.set_item("dst", col(&|s| s.dst.0 as u64))?;
    d.set_item("rate_bps", col(&|s| s.rate.0))?;
    d.set_item("throughput_bps", col(&|s| s.throughput.0))?;
    Ok(d)
}

/// A time in ns-3 spelling (`"2ms"`, `"500ns"`) in picoseconds, parsed as scenarios are.
#[pyfunction]
fn parse_time_ps(s: &str) -> PyResult<u64> {
    rdmalab::formats::units_parse::parse_time(s)
        .map(|t| t.0)
        .map_err(|e| PyValueError::new_err(format!("{s:?}: {}", e.0)))
}

/// Adds the simulator class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(parse_time_ps, m)?)
}
