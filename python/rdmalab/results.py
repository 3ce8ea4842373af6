"""Results of a run as DataFrames, and the field's standard summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rdmalab import _core
from rdmalab.collectives import collective_lines, collective_steps_frame, collectives_frame
from rdmalab.host_results import apps_frame, drum_frame, settings_line, wqes_frame
from rdmalab.mechanism_tables import mechanism_frames, ps_columns_frame
from rdmalab.port_names import PORT_COLUMNS, port_label, port_names, with_port_names  # noqa: F401 (re-exported)
from rdmalab.summary import SIZE_BUCKETS, RunOutcome, percentile, slowdown_rows  # noqa: F401 (re-exported)

#: Columns of the per-QP rate samples, with their types (so an empty table has them too).
RATE_COLUMNS = {"time_ps": pl.UInt64, "qp": pl.UInt32, "flow": pl.UInt32, "src": pl.UInt32, "dst": pl.UInt32,
                "rate_gbps": pl.Float64, "throughput_gbps": pl.Float64, "ccti": pl.UInt32,
                "window_bytes": pl.UInt64}


#: Columns of the deadlock cycle: one row per hop (node, port as its ifindex, priority), with when
#: the cycle formed and was found.
DEADLOCK_COLUMNS = {"node": pl.UInt32, "port": pl.UInt32, "priority": pl.UInt8, "formed_ns": pl.Float64,
                    "detected_ns": pl.Float64}


def deadlock_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    """The engine's deadlock cycle as a DataFrame (empty when no deadlock was found)."""
    if not raw or len(raw.get("node", [])) == 0:
        return pl.DataFrame(schema=DEADLOCK_COLUMNS)
    return pl.DataFrame({
        "node": raw["node"], "port": raw["port"], "priority": raw["priority"],
        "formed_ns": raw["formed_ps"] / 1000.0, "detected_ns": raw["detected_ps"] / 1000.0,
    }).cast(DEADLOCK_COLUMNS)


def rates_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """The engine's rate samples (bit/s integers) as a DataFrame in Gb/s."""
    if not raw or len(raw.get("time_ps", [])) == 0:
        return pl.DataFrame(schema=RATE_COLUMNS)
    return pl.DataFrame({
        "time_ps": raw["time_ps"], "qp": raw["qp"], "flow": raw["flow"], "src": raw["src"], "dst": raw["dst"],
        "rate_gbps": raw["rate_bps"] / 1e9, "throughput_gbps": raw["throughput_bps"] / 1e9,
        "ccti": raw.get("ccti", np.zeros(len(raw["time_ps"]), dtype=np.uint32)),
        "window_bytes": raw.get("window_bytes", np.zeros(len(raw["time_ps"]), dtype=np.uint64)),
    }).cast(RATE_COLUMNS)


def links_frame(raw: dict[str, Any], names: pl.DataFrame) -> pl.DataFrame:
    """Bytes each port (one direction of a link) sent per `fabric.link_sample_interval`,
    with the port named and its utilisation: bytes x 8 / (interval x rate). A row's
    `time_ps` ends its interval; the first interval starts at time zero."""
    df = pl.DataFrame(raw or {"time_ps": [], "port": [], "bytes": []}).rename({"port": "port_id"}).cast(
        {"time_ps": pl.UInt64, "port_id": pl.UInt32, "bytes": pl.UInt64})
    df = with_port_names(df, names)
    if df.height == 0 or "rate_bps" not in df.columns:
        return df.with_columns(pl.lit(None, dtype=pl.Float64).alias("utilization"))
    start = pl.col("time_ps").shift(1).over("port_id").fill_null(0)
    interval = (pl.col("time_ps") - start).cast(pl.Float64)
    return df.with_columns((pl.col("bytes").cast(pl.Float64) * 8e12 / (interval * pl.col("rate_bps")))
                           .alias("utilization"))


def flows_frame(f: dict[str, Any], unreachable: dict[str, Any] | None,
                tenant_names: list[str] | None = None) -> pl.DataFrame:
    """Completed flows (`status` "completed"), then the flows given up, no FCT, no tenant:
    `status` "unreachable" (their destination cut off by link failures), "retry_exceeded"
    (a WR exhausted `retry_cnt` / `fabric.retry_limit`) or "rnr_retry_exceeded" (a SEND
    exhausted `rnic.rnr_retry`), with `gave_up_ns`, when their source gave them up (null for
    a completed flow)."""
    names = tenant_names or ["default"]
    tenant_idx = f.get("tenant", np.zeros(len(f["flow"]), dtype=np.uint64))
    flows = pl.DataFrame({
        "flow": f["flow"], "src": f["src"], "dst": f["dst"], "sip": f["sip"], "dip": f["dip"],
        "sport": f["sport"], "dport": f["dport"], "size": f["size"],
        "start_ns": f["start_ps"] / 1000.0, "fct_ns": f["fct_ps"] / 1000.0, "ideal_ns": f["ideal_ps"] / 1000.0,
        "tenant": pl.Series(names, dtype=pl.Utf8).gather(np.asarray(tenant_idx, dtype=np.int64)),  # one per flow
        # Loss recovery and reordering: the sender's retransmissions, NACKs heard and
        # timeouts, the receiver's out-of-order arrivals, CNPs by cause and trimmed headers
        # (docs/model/loss-and-failures.md, "Loss recovery"; docs/uet.md, "Outputs").
        **{k: f.get(k, np.zeros(len(f["flow"]), dtype=np.uint64))
           for k in ("retx_packets", "nacks", "timeouts", "ooo_packets", "cnps_ecn", "cnps_ooo", "trimmed_packets")},
    })
    flows = flows.with_columns((pl.col("fct_ns") / pl.col("ideal_ns")).clip(lower_bound=1.0).alias("slowdown"),
                               pl.lit("completed").alias("status"), pl.lit(None, dtype=pl.Float64).alias("gave_up_ns"))
    if not unreachable or len(unreachable.get("flow", [])) == 0:
        return flows
    lost = pl.DataFrame({"flow": unreachable["flow"], "src": unreachable["src"], "dst": unreachable["dst"],
                         "size": unreachable["size"], "start_ns": unreachable["start_ps"] / 1000.0,
                         "gave_up_ns": unreachable["at_ps"] / 1000.0,
                         "status": list(unreachable.get("status", ["unreachable"] * len(unreachable["flow"])))})
    return pl.concat([flows, lost.cast({c: flows.schema[c] for c in lost.columns})], how="diagonal")


def pfc_frame(raw: dict[str, Any], names: pl.DataFrame) -> pl.DataFrame:
    """PFC frames received, with the receiving port named (`ifindex` is the reference's
    1-based port number, kept for its PFC file)."""
    pfc = pl.DataFrame(raw)
    if names.height == 0:
        return pfc
    # No frame: the join keeps its columns and types without hashing every port.
    ports = names if pfc.height else names.clear()
    keyed = ports.with_columns((pl.col("port") + 1).cast(pl.UInt64).alias("ifindex")).select(
        pl.col("node").cast(pl.UInt64).alias("_node"), "ifindex", "port_id")
    pfc = pfc.join(keyed, left_on=["node", "ifindex"], right_on=["_node", "ifindex"], how="left")
    return with_port_names(pfc.drop("node"), names)


def describe(scenario, results: Results | None = None) -> str:  # noqa: ANN001
    """What a run is, for titles and legends: its congestion control, offered load(s) and
    flow count, e.g. `CC dcqcn, load 0.3, 2,321 flows`."""
    spec = scenario.spec if hasattr(scenario, "spec") else dict(scenario)
    parts = [f"CC {(spec.get('fabric') or {}).get('cc', 'none')}"]
    loads = [t["load"] for t in spec.get("traffic", []) if "load" in t]
    if loads:
        parts.append("load " + "/".join(f"{x:g}" for x in loads))
    if results is not None:
        parts.append(f"{results.counters['flows_total']:,} flows")
    return ", ".join(parts)


#: Columns of the multipath tables (so an empty table has them too). Times in ns:
#: messages' start_ns is absolute, fct_ns and recv_done_ns are durations from start_ns
#: (NaN while unfinished); chunks' post_ns, done_ns, recv_ns are absolute.
MESSAGE_COLUMNS = {"message": pl.UInt32, "src": pl.UInt32, "dst": pl.UInt32, "size": pl.UInt64, "qps": pl.UInt32,
                   "chunks": pl.UInt64, "start_ns": pl.Float64, "fct_ns": pl.Float64, "recv_done_ns": pl.Float64,
                   "ideal_ns": pl.Float64, "bytes_placed": pl.UInt64, "wrs": pl.UInt64, "cqes": pl.UInt64,
                   "recv_cqe_ns": pl.Float64, "probe_ns": pl.Float64}
#: Columns of the Virtuoso paths table (one row per path of each connection).
PATH_COLUMNS = {"connection": pl.UInt32, "path": pl.UInt32, "sip": pl.UInt32, "cap_gbps": pl.Float64,
                "bytes": pl.UInt64, "max_wr": pl.UInt64}
CHUNK_COLUMNS = {"message": pl.UInt32, "chunk": pl.UInt32, "qp": pl.UInt32, "sport": pl.UInt32, "sip": pl.UInt32,
                 "offset": pl.UInt64, "size": pl.UInt64, "post_ns": pl.Float64, "done_ns": pl.Float64,
                 "recv_ns": pl.Float64, "path": pl.Utf8}


#: Columns of the traffic-class table (one row per class with `[[fabric.classes]]`).
CLASS_COLUMNS = {"pg": pl.UInt8, "scheduler": pl.Utf8, "weight": pl.UInt32, "pfc": pl.Boolean,
                 "tx_bytes": pl.UInt64, "tx_packets": pl.UInt64, "drops": pl.UInt64, "pauses": pl.UInt64,
                 "ecn_marks": pl.UInt64}


def classes_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    """Traffic classes (`[[fabric.classes]]`), one row per class 0..7: its settings and what
    the switch ports counted for it; empty when the run has no class table."""
    if not raw or len(raw.get("pg", [])) == 0:
        return pl.DataFrame(schema=CLASS_COLUMNS)
    return pl.DataFrame({k: raw[k] for k in CLASS_COLUMNS}).cast(CLASS_COLUMNS)


def messages_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """Multipath messages (one row per message posted) as a DataFrame."""
    return ps_columns_frame(raw, MESSAGE_COLUMNS)


def paths_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """Virtuoso paths (one row per path of each connection) as a DataFrame."""
    return ps_columns_frame(raw, PATH_COLUMNS)


def chunks_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """Multipath chunks (one row per chunk posted) as a DataFrame."""
    return ps_columns_frame(raw, CHUNK_COLUMNS)


@dataclass
class Results(RunOutcome):
    """What a run measured.

    `flows` has one row per completed flow: src, dst, sip, dip, sport, dport, size,
    start_ns, fct_ns, ideal_ns, slowdown (fct/ideal clamped below at 1, as the reference's
    analysis does) and status "completed"; then one row per flow given up because a link
    failure cut its destination off (status "unreachable", no FCT or slowdown).
    `counters` holds run totals, among them `last_completion_ps` (when the last flow completed
    or was given up: the run's makespan, what the summary calls simulated time) and
    `end_time_ps` (the time of the last event, which a leftover timer may set later than
    the last completion, or the stop time). Every port-level table (`ports`, `queue_samples`,
    `pfc`) names its port with `node`, `node_kind` (host/switch), `port` (index on the node),
    `peer_node`, `peer_port`, `rate_bps` and `link` (e.g. `sw8:2-h1:0`), plus the engine's
    `port_id`. `ports` holds per-port counters; `pfc` the PFC frames
    received; `queue_samples` switch queue lengths when sampling was asked for; `rates` one row
    per active QP per `fabric.rate_sample_interval`: time_ps, qp, flow, src, dst, rate_gbps
    (what congestion control allows), throughput_gbps (payload acknowledged since the
    previous sample, over the interval), ccti (InfiniBand CC's table index, 0 under other
    schemes) and window_bytes (the QP's window: Swift's or NSCC's, or `fabric.window`'s; 0
    when it has none); `links` one row per port (one direction of a link)
    per `fabric.link_sample_interval`: time_ps (end of the interval), the port's names, bytes
    sent in the interval and utilization (of the port's rate). All three are empty when not
    sampled.

    `stop_reason` is `finished`, `stop_time`, `stalled` (with `stall_cause` saying why, in
    one line), `pfc_deadlock`, or `interrupted` after Ctrl-C or SIGTERM (`interrupted` is then true; `extra["interrupted_by"]` says which). `deadlock` is the first PFC deadlock found, one row per hop of
    its cycle: node, port (its ifindex), priority, formed_ns, detected_ns; empty when none.
    `counters["deadlocks"]` counts them (more than one only with `fabric.on_deadlock = "continue"`).

    `[[collective]]` (`Scenario.collective`) adds `collectives`, one row per iteration
    (`collectives.COLLECTIVE_COLUMNS`, docs/collectives.md), and `collective_steps`, one row
    per iteration and step: the step's first and last receive completion.

    Multipath traffic (`Scenario.multipath`) adds `messages`, one row per message: message,
    src, dst, size, qps, chunks, start_ns, fct_ns (last chunk's completion at the sender,
    from start), recv_done_ns (last byte placed at the receiver, from start), ideal_ns,
    bytes_placed; and `chunks`, one row per chunk: message, chunk, qp (0-based within the
    connection), sport, sip, offset, size, post_ns, done_ns, recv_ns (absolute times) and
    path (node ids joined by `-`). Each message is also one row of `flows`; its chunks are not.
    Messages also have wrs (WRs posted for it), cqes (completions the sender polled),
    recv_cqe_ns (the receiver's one completion, from start: a SEND's, or a partition
    message's last chunk; NaN for Virtuoso's WRITE and READ, whose receiver is passive) and
    probe_ns (time waiting for Virtuoso's path probe). `split = "virtuoso"` adds `paths`,
    one row per path of each connection: connection, path, sip, cap_gbps (the capacity
    estimate eq. 1 used last), bytes (data sent over it) and max_wr (its largest WR).

    Closed-loop applications (`Scenario.app`, the DRUM paper, docs/drum-fabric.md) add `wqes`
    (one row per WQE: app, name, host, batch, size, posted_ns, ct_ns), `apps` (per app:
    wqes, bytes, wqe_per_us, gbps, p50/p80/p99_ct_ns) and, under DRUM, `drum` (per control
    period and app: t_ns, app, x, z, a, active, rate); see `rdmalab.host_results`.

    With `[[fabric.classes]]`, `classes` has one row per class 0..7: pg, scheduler
    (strict|dwrr), weight (0 for strict), pfc, and summed over switch ports tx_bytes and
    tx_packets (sent out of egress queues), drops (at admission: lossy classes), pauses
    (PAUSE frames sent for the class) and ecn_marks. Class 0 is the control class (ACKs,
    PFC frames). Empty without a class table.

    With a switch-side balancer (`fabric.path_selection` = spray|drill|letflow|conga|conweave)
    or a `[fabric.lb]` table, `balance` has one row per ToR and `lb_window` in which data went up:
    switch (node id), window_start_ns, uplinks, min_bytes, max_bytes, mean_bytes and
    imbalance = (max - min) / mean (docs/load-balancing.md). Under `conweave`, `reorder` has
    one row per destination ToR and `lb_window` in which it held packets: switch,
    window_start_ns, and the most reorder queues in use (queues) and packets and bytes held
    at once.
    """

    flows: pl.DataFrame
    counters: dict[str, int]
    ports: pl.DataFrame
    pfc: pl.DataFrame
    queue_samples: pl.DataFrame
    rates: pl.DataFrame = field(default_factory=lambda: rates_frame({}))
    deadlock: pl.DataFrame = field(default_factory=lambda: deadlock_frame(None))
    stall_cause: str | None = None
    links: pl.DataFrame = field(default_factory=lambda: links_frame({}, pl.DataFrame()))
    messages: pl.DataFrame = field(default_factory=lambda: messages_frame({}))
    chunks: pl.DataFrame = field(default_factory=lambda: chunks_frame({}))
    paths: pl.DataFrame = field(default_factory=lambda: paths_frame({}))
    wqes: pl.DataFrame = field(default_factory=lambda: wqes_frame(None))
    apps: pl.DataFrame = field(default_factory=lambda: apps_frame(None, wqes_frame(None), 0.0))
    drum: pl.DataFrame = field(default_factory=lambda: drum_frame(None))
    classes: pl.DataFrame = field(default_factory=lambda: classes_frame(None))
    collectives: pl.DataFrame = field(default_factory=lambda: collectives_frame(None))
    collective_steps: pl.DataFrame = field(default_factory=lambda: collective_steps_frame(None))
    #: The mechanisms' own tables by name (`rdmalab.mechanism_tables`), each also `res.<name>`.
    mechanisms: dict[str, pl.DataFrame] = field(default_factory=lambda: mechanism_frames(None))
    stop_reason: str = "finished"
    interrupted: bool = False
    wall_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_core(cls, raw: dict[str, Any], stop_reason: str, interrupted: bool, wall: float) -> "Results":
        """The results of the engine's raw output (`Simulation.results()`); `rdmalab.run` calls it."""
        tenant_names = list(raw.get("tenant_names", ["default"]))
        flows = flows_frame(raw["flows"], raw.get("unreachable"), tenant_names)
        names = port_names(raw.get("port_info", {}))
        ports = with_port_names(pl.DataFrame(raw["ports"]).with_row_index("port_id"), names)
        queues = pl.DataFrame(raw["queue_samples"]).rename({"port": "port_id"}).cast({"port_id": pl.UInt32})
        hm = raw.get("host_model")
        wqes = wqes_frame(hm)
        return cls(flows=flows, counters=dict(raw["counters"]), ports=ports, pfc=pfc_frame(raw["pfc"], names),
                   queue_samples=with_port_names(queues, names), rates=rates_frame(raw.get("rates", {})),
                   links=links_frame(raw.get("link_samples"), names),
                   deadlock=deadlock_frame(raw.get("deadlock")), stall_cause=raw.get("stall_cause"),
                   messages=messages_frame(raw.get("messages", {})), chunks=chunks_frame(raw.get("chunks", {})),
                   paths=paths_frame(raw.get("paths", {})), classes=classes_frame(raw.get("classes")),
                   wqes=wqes, apps=apps_frame(hm, wqes, float(raw["counters"]["end_time_ps"])),
                   drum=drum_frame(hm), mechanisms=mechanism_frames(raw.get("tables")),
                   collectives=collectives_frame(raw.get("collectives")),
                   collective_steps=collective_steps_frame(raw.get("collective_steps")),
                   stop_reason=stop_reason,
                   interrupted=interrupted, wall_seconds=wall,
                   extra={"tenant_names": tenant_names, "tenant_bins": raw.get("tenant_bins"),
                          "tenant_bin_ps": raw.get("tenant_bin_ps", 1_000_000),
                          "host_settings": (hm or {}).get("settings")})

    def __getattr__(self, name: str) -> pl.DataFrame:
        """A mechanism's table by its name (`res.balance`, `res.reorder`, ...)."""
        if name.startswith("__") or name == "mechanisms":
            raise AttributeError(name)
        try:
            return self.mechanisms[name]
        except KeyError:
            raise AttributeError(f"Results has no table or attribute {name!r}") from None

    @property
    def trace(self) -> pl.LazyFrame | None:
        """The per-packet trace (`[trace]`), scanned lazily from its Parquet file (filter
        before `collect()`: a trace can be large); None when the run had none."""
        path = self.extra.get("trace_path")
        return pl.scan_parquet(path) if path else None

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table of the run by its file name: `flows`, `ports`, `pfc`, and `queues`,
        `rates` and `links` when they were sampled, `messages` and `chunks` with multipath
        traffic, `paths` with Virtuoso, `deadlock` when one was found, `classes` with
        `[[fabric.classes]]`, `balance` with a switch-side balancer or `[fabric.lb]`, `reorder`
        under `conweave`, `collectives` and `collective_steps` with `[[collective]]`, `wqes`,
        `apps` and `drum` with closed-loop applications (what `rdmalab run` writes as Parquet)."""
        out = {"flows": self.flows, "ports": self.ports, "pfc": self.pfc}
        if self.queue_samples.height:
            out["queues"] = self.queue_samples
        if self.rates.height:
            out["rates"] = self.rates
        if self.links.height:
            out["links"] = self.links
        if self.messages.height:  # multipath traffic
            out["messages"] = self.messages
            out["chunks"] = self.chunks
        if self.paths.height:
            out["paths"] = self.paths
        if self.deadlock.height:
            out["deadlock"] = self.deadlock
        if self.classes.height:
            out["classes"] = self.classes
        for name, frame in self.mechanisms.items():  # the mechanisms' own tables
            if frame.height:
                out[name] = frame
        for name in ("collectives", "collective_steps", "wqes", "apps", "drum"):  # closed-loop apps last
            if getattr(self, name).height:
                out[name] = getattr(self, name)
        return out

    @property
    def completed(self) -> pl.DataFrame:
        """The completed flows only (`flows` minus those given up: unreachable or failed)."""
        return self.flows.filter(pl.col("status") == "completed")

    def tenant_share(self, start: str | int = 0, end: str | int | None = None) -> pl.DataFrame:
        """Payload each tenant's receivers accepted in order during `[start, end)`.

        `start`/`end` are time strings (`"1ms"`) or picoseconds; `end` defaults to the end of
        the run. Receivers count bytes in 1 µs bins; a bin counts if it starts inside the
        window, so windows on the µs grid are exact. Columns: tenant, bytes, gbps (bytes over
        the window length), share (of all tenants' bytes; 0 when nothing was delivered). One
        row per declared tenant, in declaration order (`default` first).
        """
        def ps(t: str | int | None, default: int) -> int:
            if t is None:
                return default
            return int(t) if isinstance(t, (int, np.integer)) else _core.parse_time_ps(t)

        lo, hi = ps(start, 0), ps(end, int(self.counters["end_time_ps"]))
        if hi <= lo:
            raise ValueError(f"tenant_share: end ({end}) must be after start ({start})")
        names = self.extra.get("tenant_names", ["default"])
        bins = self.extra.get("tenant_bins")
        totals = np.zeros(len(names), dtype=np.float64)
        if bins is not None and len(bins["bin"]):
            t0 = np.asarray(bins["bin"], dtype=np.uint64) * np.uint64(self.extra["tenant_bin_ps"])
            sel = (t0 >= lo) & (t0 < hi)
            np.add.at(totals, np.asarray(bins["tenant"], dtype=np.int64)[sel],
                      np.asarray(bins["bytes"], dtype=np.float64)[sel])
        elif bins is None:
            raise ValueError("tenant_share: this run kept no per-tenant meter (`rdmalab hpcc` runs do not)")
        total = totals.sum()
        seconds = (hi - lo) / 1e12
        return pl.DataFrame({
            "tenant": names,
            "bytes": totals.astype(np.uint64),
            "gbps": totals * 8 / seconds / 1e9,
            "share": totals / total if total > 0 else np.zeros(len(names)),
        })

    def slowdown_table(self) -> pl.DataFrame:
        """p50/p95/p99 FCT slowdown per size bucket, with the flow count of each bucket."""
        return pl.DataFrame(self._slowdown_rows())

    def _slowdown_rows(self) -> list[dict[str, Any]]:
        done = self.completed
        return slowdown_rows(done["size"].to_numpy(), done["slowdown"].to_numpy())

    def _flows_span(self) -> tuple[int, int]:
        """[first flow start, rounded down to the tenant bins, simulated time): the window over
        which the summary's tenant Gb/s are averaged (not the leftover timers after it)."""
        hi = max(self.simulated_ps, 1)
        if not self.flows.height or "start_ns" not in self.flows.columns:
            return 0, hi
        bin_ps = int(self.extra.get("tenant_bin_ps", 1_000_000))
        lo = int(self.flows["start_ns"].min()) * 1000 // bin_ps * bin_ps
        return (lo, hi) if lo < hi else (0, hi)

    def _repr_html_(self) -> str:
        """A notebook's view: the summary's counters and the slowdown table."""
        head, _, _ = self.summary().partition("\n\n")
        rows = "".join(f"<tr><th style='text-align:left'>{escape(line[:18].strip())}</th>"
                       f"<td style='text-align:left'>{escape(line[18:].strip())}</td></tr>"
                       for line in head.splitlines())
        return f"<div><table>{rows}</table>{self.slowdown_table()._repr_html_()}</div>"

    def _table_lines(self) -> list[str]:
        """The summary's blocks read from tables: tenants, applications, classes, collectives."""
        lines: list[str] = []
        bins = self.extra.get("tenant_bins")
        if bins is not None and len(bins["bin"]):
            lines.append("")
            lo, hi = self._flows_span()
            lines.append(f"{'tenant':<16}{'bytes':>22}{'Gb/s':>12}{'share':>8}   (payload delivered; Gb/s over "
                         f"{lo / 1e6:.3f}-{hi / 1e6:.3f} us, first flow start to the simulated time)")
            for r in self.tenant_share(lo, hi).iter_rows(named=True):
                # Wide enough for a 1,024-GPU iteration's 2 TB at 100+ Tb/s, a space to spare.
                lines.append(f"{r['tenant']:<16}{r['bytes']:>22,}{r['gbps']:>12.2f}{r['share']:>8.3f}")
        if self.apps.height:
            lines += ["", settings_line(self.extra.get("host_settings"))]
            lines.append(f"{'application':<16}{'WQEs':>10}{'Gb/s':>9}{'p50 us':>10}{'p80 us':>10}{'p99 us':>10}"
                         "   (closed-loop apps; first 20)")
            for r in self.apps.head(20).iter_rows(named=True):
                lines.append(f"{r['name']:<16}{r['wqes']:>10}{r['gbps']:>9.3f}{r['p50_ct_ns'] / 1e3:>10.2f}"
                             f"{r['p80_ct_ns'] / 1e3:>10.2f}{r['p99_ct_ns'] / 1e3:>10.2f}")
        if self.classes.height:
            lines.append("")
            lines.append(f"{'class':<7}{'scheduler':<11}{'pfc':<6}{'tx bytes':>16}{'drops':>9}{'pauses':>8}"
                         f"{'ECN':>8}")
            for r in self.classes.filter(pl.col("tx_packets") + pl.col("drops") > 0).iter_rows(named=True):
                sched = r["scheduler"] + (f" {r['weight']}" if r["scheduler"] == "dwrr" else "")
                pfc = "-" if r["pg"] == 0 else "on" if r["pfc"] else "off"  # class 0 is outside the MMU
                lines.append(f"{r['pg']:<7}{sched:<11}{pfc:<6}{r['tx_bytes']:>16,}"
                             f"{r['drops']:>9}{r['pauses']:>8}{r['ecn_marks']:>8}")
        return lines + collective_lines(self.collectives)

    def deadlock_rows(self) -> list[dict[str, Any]]:
        """The first PFC deadlock's cycle, one dict per hop (the rows of `deadlock`)."""
        return list(self.deadlock.iter_rows(named=True))
