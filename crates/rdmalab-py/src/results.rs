//! A run's `Results` as Python sees them: a dict of tables (each a dict of columns, see
//! [`Columns`]) and counters. Times are in ps; a time that has not happened is NaN.

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use rdmalab::app::closed_loop::BatchRecord;
use rdmalab::app::collective::CollectiveRecord;
use rdmalab::app::drum_agent::DrumRow;
use rdmalab::fabric::classes::Scheduler;
use rdmalab::fabric::PortCounters;
use rdmalab::multipath::{MpChunkRecord, MpMessageRecord, MpPathRecord};
use rdmalab::sim::{ClassRecord, CycleHop, GaveUp, Results, UnreachableFlow};
use rdmalab::stats::table::{Column, Table};
use rdmalab::stats::{FlowRecord, RateSample};
use rdmalab::topology::{Port, Topology};
use rdmalab::{PortId, Time};

use crate::columns::Columns;

/// Every table and counter of `r`.
pub fn results_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    // The whole table, read back from disk when the run wrote records out (`stats::spill`).
    let flows = r.all_records().map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("flow records: {e}")))?;
    d.set_item("flows", flow_dict(py, &flows)?)?;
    d.set_item("tenant_names", r.tenant_names.clone())?;
    d.set_item("tenant_bins", tenant_bin_dict(py, r)?)?;
    d.set_item("tenant_bin_ps", r.tenant_bin.0)?;
    d.set_item("counters", counter_dict(py, r)?)?;
    d.set_item("unreachable", unreachable_dict(py, &r.unreachable)?)?;
    d.set_item("ports", port_counter_dict(py, &r.ports)?)?;
    d.set_item("classes", class_dict(py, &r.classes)?)?;
    d.set_item("tables", tables_dict(py, &r.tables)?)?;
    d.set_item("collectives", collective_dict(py, &r.collectives)?)?;
    d.set_item("collective_steps", collective_step_dict(py, &r.collectives)?)?;
    let pfc = Columns::new(py, &r.pfc_events);
    pfc.u64("time_ps", |e| e.time.0)?.u64("node", |e| e.node.0 as u64)?;
    pfc.u64("ifindex", |e| e.ifindex as u64)?.u64("pause", |e| e.pause as u64)?;
    d.set_item("pfc", pfc.dict())?;
    d.set_item("queue_samples", port_sample_dict(py, &r.queue_samples)?)?;
    d.set_item("link_samples", port_sample_dict(py, &r.link_samples)?)?;
    d.set_item("rates", rate_dict(py, &r.rate_samples)?)?;
    d.set_item("deadlock", deadlock_dict(py, r)?)?;
    d.set_item("stall_cause", r.stall_cause.clone())?;
    d.set_item("messages", message_dict(py, &r.mp_messages)?)?;
    d.set_item("chunks", chunk_dict(py, &r.mp_chunks)?)?;
    d.set_item("paths", path_dict(py, &r.mp_paths)?)?;
    d.set_item("host_model", host_model_dict(py, r)?)?;
    Ok(d)
}

/// Completed flows.
fn flow_dict<'py>(py: Python<'py>, rs: &[FlowRecord]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, rs);
    t.u64("flow", |x| x.flow as u64)?.u64("src", |x| x.src.0 as u64)?.u64("dst", |x| x.dst.0 as u64)?;
    t.u64("sip", |x| x.sip as u64)?.u64("dip", |x| x.dip as u64)?;
    t.u64("sport", |x| x.sport as u64)?.u64("dport", |x| x.dport as u64)?.u64("size", |x| x.size)?;
    t.u64("start_ps", |x| x.start.0)?.u64("fct_ps", |x| x.fct.0)?.u64("ideal_ps", |x| x.ideal.0)?;
    t.u64("tenant", |x| x.tenant as u64)?;
    t.u64("retx_packets", |x| x.retx_packets as u64)?.u64("nacks", |x| x.nacks as u64)?;
    t.u64("ooo_packets", |x| x.rx.ooo_packets as u64)?;
    t.u64("cnps_ecn", |x| x.rx.cnps_ecn as u64)?.u64("cnps_ooo", |x| x.rx.cnps_ooo as u64)?;
    t.u64("timeouts", |x| x.timeouts as u64)?.u64("trimmed_packets", |x| x.rx.trimmed_packets as u64)?;
    Ok(t.dict())
}

/// Bytes per tenant and metering bin.
fn tenant_bin_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, &r.tenant_bins);
    t.u64("tenant", |b| b.tenant as u64)?.u64("bin", |b| b.bin as u64)?.u64("bytes", |b| b.bytes)?;
    t.list("tenant_name", |b| r.tenant_names[b.tenant as usize].as_str())?;
    Ok(t.dict())
}

/// The run's counters, one number each.
pub(crate) fn counter_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let c = &r.counters;
    let counters = PyDict::new(py);
    for (k, v) in [
        ("events", c.events),
        ("data_packets_sent", c.data_packets_sent),
        ("payload_bytes_sent", c.payload_bytes_sent),
        ("payload_bytes_delivered", c.payload_bytes_delivered),
        ("payload_bytes_dropped", c.payload_bytes_dropped),
        ("payload_bytes_discarded", c.payload_bytes_discarded),
        ("payload_bytes_in_flight", r.payload_in_flight),
        ("packet_hops", c.packet_hops),
        ("drops", c.drops),
        ("pauses", c.pauses),
        ("resumes", c.resumes),
        ("ecn_marks", c.ecn_marks),
        ("fecn_marks", r.mechanism_count("fecn_marks")),
        ("becns", r.mechanism_count("becns")),
        ("timeouts", c.timeouts),
        ("nacks", c.nacks),
        ("retx_packets", c.retx_packets),
        ("ooo_packets", c.ooo_packets),
        ("cnps_ecn", c.cnps_ecn),
        ("cnps_ooo", c.cnps_ooo),
        ("wr_failures", c.wr_failures),
        ("qps_opened", c.qps_opened),
        ("qps_peak", c.qps_peak),
        ("link_error_losses", c.link_error_losses),
        ("link_down_losses", c.link_down_losses),
        ("no_route_drops", c.no_route_drops),
        ("link_failures", r.mechanism_count("link_failures")),
        ("reroutes", r.mechanism_count("reroutes")),
        ("qp_cache_hits", c.qp_cache_hits),
        ("qp_cache_misses", c.qp_cache_misses),
        ("messages_lost", r.mechanism_count("messages_lost")),
    ] {
        counters.set_item(k, v)?;
    }
    // The mechanisms' counters every run reports, by the names they give
    // (`Mechanisms::counters`); those named above keep the places they had when they were
    // the core's (setting a key again does not move it).
    for (k, v) in &r.mechanism_counters.always {
        counters.set_item(k, v)?;
    }
    for (k, v) in [
        ("reseq_held", r.reseq_held as u64),
        ("flows_total", r.flows_total as u64),
        ("flows_completed", r.flows_completed() as u64),
        ("flows_unreachable", r.unreachable.iter().filter(|u| u.why == GaveUp::Unreachable).count() as u64),
        // Given up by a retry limit (`retry_cnt`, `rnr_retry`): the run's exit status says so.
        ("flows_failed", r.unreachable.iter().filter(|u| u.why != GaveUp::Unreachable).count() as u64),
        ("last_completion_ps", r.last_completion.0),
        ("end_time_ps", r.end_time.0),
        ("deadlocks", r.deadlocks),
    ] {
        counters.set_item(k, v)?;
    }
    // Then those only some runs report (ConWeave's out-of-order causes), so that
    // every other run's counters keep their columns.
    for (k, v) in &r.mechanism_counters.conditional {
        counters.set_item(k, v)?;
    }
    Ok(counters)
}

/// Counters per port, indexed by port id.
fn port_counter_dict<'py>(py: Python<'py>, ps: &[PortCounters]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, ps);
    t.u64("tx_bytes", |p| p.tx_bytes)?.u64("tx_packets", |p| p.tx_packets)?;
    t.u64("pause_sent", |p| p.pause_sent)?.u64("pause_received", |p| p.pause_received)?;
    t.u64("paused_ps", |p| p.paused_ps)?.u64("ecn_marks", |p| p.ecn_marks)?.u64("drops", |p| p.drops)?;
    t.u64("credit_stall_ps", |p| p.credit_stall_ps)?;
    t.u64("trims", |p| p.trims)?.u64("trimmed_bytes", |p| p.trimmed_bytes)?;
    Ok(t.dict())
}

/// Samples `(time, port, bytes)` of queue lengths or link bytes.
fn port_sample_dict<'py>(py: Python<'py>, ss: &[(Time, PortId, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, ss);
    t.u64("time_ps", |s| s.0 .0)?.u64("port", |s| s.1 .0 as u64)?.u64("bytes", |s| s.2)?;
    Ok(t.dict())
}

/// The DRUM paper's host model: applications, their batches (ps; `seen_ps` NaN while
/// unfinished) and DRUM's per-period allocations.
fn host_model_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let apps = Columns::new(py, &r.host_apps);
    apps.list("app_name", |a| a.0.clone())?.u64("app_host", |a| a.1 .0 as u64)?;
    apps.u64("app_dst", |a| a.2 .0 as u64)?.u64("app_done", |a| a.3 as u64)?;
    let d = apps.dict();
    let b = Columns::new(py, &r.host_batches);
    b.u64("app", |x: &BatchRecord| x.app as u64)?.u64("batch", |x| x.batch as u64)?;
    b.u64("wr_num", |x| x.wr_num as u64)?.u64("size", |x| x.size)?.u64("posted_ps", |x| x.posted.0)?;
    b.f64("seen_ps", |x| if x.seen == Time::MAX { f64::NAN } else { x.seen.0 as f64 })?;
    b.u64("released", |x| x.released as u64)?
        .u64("completed", |x| x.completed as u64)?
        .u64("wire", |x| x.wire as u64)?;
    d.set_item("batches", b.dict())?;
    let drum = Columns::new(py, &r.drum_rows);
    drum.u64("t_ps", |x: &DrumRow| x.t.0)?.u64("app", |x| x.app as u64)?;
    drum.f64("x", |x| x.x)?.f64("z", |x| x.z)?.f64("a", |x| x.a)?.f64("rate", |x| x.rate)?;
    drum.u64("active", |x| x.active as u64)?;
    d.set_item("drum", drum.dict())?;
    d.set_item("wqes_processed", r.wqes_processed)?;
    if let Some((h, dr)) = r.host_cfg {
        let set = PyDict::new(py);
        set.set_item("mechanism", format!("{:?}", h.mechanism).to_lowercase())?;
        set.set_item("max_send_wr", h.max_send_wr)?;
        set.set_item("shared_window", dr.shared_window)?;
        set.set_item("a", dr.a.name())?;
        set.set_item("select", dr.select.name())?;
        d.set_item("settings", set)?;
    }
    Ok(d)
}

/// Traffic classes as columns, one row per class (empty without `[[fabric.classes]]`).
fn class_dict<'py>(py: Python<'py>, cs: &[ClassRecord]) -> PyResult<Bound<'py, PyDict>> {
    let weight = |c: &ClassRecord| match c.config.scheduler {
        Scheduler::Dwrr(w) => w as u64,
        Scheduler::Strict => 0,
    };
    let t = Columns::new(py, cs);
    t.u64("pg", |c| c.pg as u64)?.list("scheduler", |c| c.config.scheduler.name())?.u64("weight", weight)?;
    t.list("pfc", |c| c.config.pfc)?;
    t.u64("tx_bytes", |c| c.counters.tx_bytes)?.u64("tx_packets", |c| c.counters.tx_packets)?;
    t.u64("drops", |c| c.counters.drops)?.u64("pauses", |c| c.counters.pauses)?;
    t.u64("ecn_marks", |c| c.counters.ecn_marks)?;
    Ok(t.dict())
}

/// The mechanisms' own tables (`rdmalab::stats::table`), by name, each a dict of columns:
/// one generic path, so that a mechanism's new table needs no code here.
fn tables_dict<'py>(py: Python<'py>, tables: &[Table]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for t in tables {
        let cols = PyDict::new(py);
        for (name, c) in &t.columns {
            match c {
                Column::U64(v) => cols.set_item(name, v.clone().into_pyarray(py))?,
                Column::F64(v) => cols.set_item(name, v.clone().into_pyarray(py))?,
                Column::Text(v) => cols.set_item(name, v.clone())?,
            }
        }
        d.set_item(&t.name, cols)?;
    }
    Ok(d)
}

/// Collectives (`[[collective]]`): one row per iteration, times in ps (NaN: unfinished).
fn collective_dict<'py>(py: Python<'py>, rows: &[CollectiveRecord]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, rows);
    t.list("name", |c| c.name.clone())?.list("kind", |c| c.kind)?.list("algorithm", |c| c.algorithm)?;
    t.u64("ranks", |c| c.ranks as u64)?.u64("size", |c| c.size)?;
    t.f64("start_ps", |c| c.start.0 as f64)?.f64("end_ps", |c| opt_ps(c.end))?;
    t.f64("algbw_gbps", |c| c.algbw_gbps)?.f64("busbw_gbps", |c| c.busbw_gbps)?;
    t.i64("slowest_rank", |c| if c.slowest_rank.is_none() { -1 } else { c.slowest_rank.0 as i64 })?;
    t.u64("steps", |c| c.steps as u64)?.f64("step_spread_ps", |c| c.step_spread.0 as f64)?;
    Ok(t.dict())
}

/// Collectives' steps: one row per (iteration, step) with the step's first and last receive
/// completion in ps (NaN: no receive yet), for the figure of completion by step.
fn collective_step_dict<'py>(py: Python<'py>, rows: &[CollectiveRecord]) -> PyResult<Bound<'py, PyDict>> {
    let steps: Vec<(&str, u64, Time, Time)> = rows
        .iter()
        .flat_map(|c| {
            let each = c.step_first.iter().zip(&c.step_last).enumerate();
            each.map(|(k, (f, l))| (c.name.as_str(), k as u64, *f, *l))
        })
        .collect();
    let unfinished = |t: Time| if t == Time::MAX { f64::NAN } else { t.0 as f64 };
    let t = Columns::new(py, &steps);
    t.list("name", |s| s.0)?.u64("step", |s| s.1)?;
    t.f64("first_ps", |s| unfinished(s.2))?.f64("last_ps", |s| unfinished(s.3))?;
    Ok(t.dict())
}

/// The first PFC deadlock's cycle as columns (one row per hop; empty when none), with
/// when it formed and was found on every row.
fn deadlock_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let hops = r.deadlock.as_ref().map_or(&[][..], |x| &x.cycle[..]);
    let (formed, detected) = r.deadlock.as_ref().map_or((0, 0), |x| (x.formed.0, x.detected.0));
    let t = Columns::new(py, hops);
    t.u64("node", |h: &CycleHop| h.node.0 as u64)?.u64("port", |h| h.ifindex as u64)?;
    t.u64("priority", |h| h.priority as u64)?.u64("formed_ps", |_| formed)?.u64("detected_ps", |_| detected)?;
    Ok(t.dict())
}

/// A time in ps as a float, NaN when absent (unfinished).
fn opt_ps(t: Option<Time>) -> f64 {
    t.map_or(f64::NAN, |t| t.0 as f64)
}

/// Multipath messages as columns (times in ps; NaN where not finished).
fn message_dict<'py>(py: Python<'py>, ms: &[MpMessageRecord]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, ms);
    t.u64("message", |m| m.message.0 as u64)?.u64("src", |m| m.src.0 as u64)?.u64("dst", |m| m.dst.0 as u64)?;
    t.u64("size", |m| m.size)?.u64("qps", |m| m.qps as u64)?.u64("chunks", |m| m.chunks)?;
    t.u64("start_ps", |m| m.start.0)?.f64("fct_ps", |m| opt_ps(m.fct))?;
    t.f64("recv_done_ps", |m| opt_ps(m.recv_done))?.u64("ideal_ps", |m| m.ideal.0)?;
    t.u64("bytes_placed", |m| m.bytes_placed)?.u64("wrs", |m| m.wrs)?.u64("cqes", |m| m.cqes)?;
    t.f64("recv_cqe_ps", |m| opt_ps(m.recv_cqe))?.u64("probe_ps", |m| m.probe.0)?;
    Ok(t.dict())
}

/// Virtuoso paths as columns.
fn path_dict<'py>(py: Python<'py>, ps: &[MpPathRecord]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, ps);
    t.u64("connection", |p| p.conn.0 as u64)?.u64("path", |p| p.path as u64)?.u64("sip", |p| p.sip as u64)?;
    t.f64("cap_gbps", |p| p.cap_gbps)?.u64("bytes", |p| p.bytes)?.u64("max_wr", |p| p.max_wr)?;
    Ok(t.dict())
}

/// Multipath chunks as columns; `path` as node ids joined by `-`.
fn chunk_dict<'py>(py: Python<'py>, cs: &[MpChunkRecord]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, cs);
    t.u64("message", |c| c.message.0 as u64)?.u64("chunk", |c| c.chunk as u64)?.u64("qp", |c| c.qp as u64)?;
    t.u64("sport", |c| c.sport as u64)?.u64("sip", |c| c.sip as u64)?.u64("offset", |c| c.offset)?;
    t.u64("size", |c| c.size)?.u64("post_ps", |c| c.post.0)?;
    t.f64("done_ps", |c| opt_ps(c.done))?.f64("recv_ps", |c| opt_ps(c.recv))?;
    t.list("path", |c| c.path.iter().map(|n| n.0.to_string()).collect::<Vec<_>>().join("-"))?;
    Ok(t.dict())
}

/// Flows given up: their destination became unreachable, or a retry limit failed them
/// (`status`: `GaveUp::name`).
fn unreachable_dict<'py>(py: Python<'py>, u: &[UnreachableFlow]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, u);
    t.u64("flow", |x| x.flow as u64)?.u64("src", |x| x.src.0 as u64)?.u64("dst", |x| x.dst.0 as u64)?;
    t.u64("size", |x| x.size)?.u64("start_ps", |x| x.start.0)?.u64("at_ps", |x| x.at.0)?;
    t.list("status", |x| x.why.name().to_string())?;
    Ok(t.dict())
}

/// What names every port: its node and kind (0 host, 1 switch), its index on the node,
/// the peer's node and port index, its rate and its link, indexed by port id.
pub fn port_info<'py>(py: Python<'py>, topo: &Topology) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, &topo.ports);
    t.u64("node", |p: &Port| p.node.0 as u64)?.u64("switch", |p| !topo.is_host(p.node) as u64)?;
    t.u64("port", |p| p.ifindex as u64 - 1)?.u64("peer_node", |p| p.peer_node.0 as u64)?;
    t.u64("peer_switch", |p| !topo.is_host(p.peer_node) as u64)?;
    t.u64("peer_port", |p| topo.ports[p.peer.idx()].ifindex as u64 - 1)?;
    t.u64("rate_bps", |p| topo.links[p.link.idx()].rate.0)?.u64("link_index", |p| p.link.0 as u64)?;
    Ok(t.dict())
}

/// Per-QP rate samples as columns (empty when sampling was off).
fn rate_dict<'py>(py: Python<'py>, rs: &[RateSample]) -> PyResult<Bound<'py, PyDict>> {
    let t = Columns::new(py, rs);
    t.u64("time_ps", |s| s.time.0)?.u64("qp", |s| s.qp.0 as u64)?.u64("flow", |s| s.flow as u64)?;
    t.u64("src", |s| s.src.0 as u64)?.u64("dst", |s| s.dst.0 as u64)?;
    t.u64("rate_bps", |s| s.rate.0)?.u64("throughput_bps", |s| s.throughput.0)?.u64("ccti", |s| s.ccti as u64)?;
    t.u64("window_bytes", |s| s.window)?;
    Ok(t.dict())
}
