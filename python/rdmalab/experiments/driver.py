"""Running a sweep: expand, skip what the store already has, execute, store, summarise."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, TextIO

import numpy as np
import polars as pl
from tqdm.auto import tqdm

from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.store import Store
from rdmalab.experiments.sweep import RunSpec, Sweep, SweepError, check_base
from rdmalab.experiments.tenants import run_shares
from rdmalab.results import percentile
from rdmalab.runner import Terminated

#: A run gets its own progress bar once it has taken this long (short runs would only flicker).
RUN_BAR_DELAY_S = 0.5


@dataclass
class SweepReport:
    """What a sweep did: counts, and one summary row per run of the sweep."""

    out: Path
    total: int
    skipped: int = 0
    ok: int = 0
    failed: int = 0
    interrupted: bool = False
    #: What stopped the sweep when `interrupted`: "Ctrl-C" or "SIGTERM".
    interrupted_by: str | None = None
    wall_s: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)

    def table(self, max_rows: int = 40) -> str:
        """The end-of-sweep summary table: per run its status, flow count, what it measured
        (`run_result`) and wall time, then its full label (never cut: runs that differ only
        at the end of a long label must stay apart)."""
        head = f"{'status':<11} {'flows':>7}  {'result':<46} {'wall s':>7}  run"
        lines = [head, "-" * (len(head) + 37)]
        for r in self.rows[:max_rows]:
            lines.append(f"{r['status']:<11} {r['flows']:>7}  {r['result']:<46} {r['wall_s']:>7.2f}  {r['label']}")
        if len(self.rows) > max_rows:
            lines.append(f"... and {len(self.rows) - max_rows} more runs")
        lines.append("")
        counts = {st: sum(1 for r in self.rows if r["status"] == st) for st in ("ok", "error", "not run")}
        lines.append(f"{self.total} runs: {counts['ok']} ok, {counts['error']} failed, {counts['not run']} not run; "
                     f"{self.ok + self.failed} ran now, {self.skipped} were already done"
                     + (f"  (interrupted by {self.interrupted_by or 'Ctrl-C'}: rerun with --resume)"
                        if self.interrupted else ""))
        lines.extend(f"  error in {r['label']}: {r['error'].splitlines()[0]}" for r in self.rows
                     if r["status"] == "error" and r["error"])
        lines.extend(f"  {r['stop_reason'].replace('_', ' ')} in {r['label']}"
                     + (f": {r['stall_cause']}" if r.get("stall_cause") else "") for r in self.rows
                     if r.get("stop_reason") in ("pfc_deadlock", "stalled"))
        lines.append(f"results in {self.out} (wall {self.wall_s:.1f} s)")
        return "\n".join(lines)


def run_sweep(sweep: Sweep, out: str | Path, executor: Any = None, resume: bool = False,
              retry_failed: bool = False, progress: bool = True,
              only: dict[str, Any] | None = None) -> SweepReport:
    """Runs every run of `sweep` not yet in the store at `out`; returns the report.

    Without `resume`, a folder that already holds finished runs is an error. With it,
    finished runs are skipped (failed ones too, unless `retry_failed`). Ctrl-C stops the
    sweep; finished runs stay stored and `resume` continues. SIGTERM (a batch scheduler's
    time limit) does the same where it has its default action (`_sigterm_stops_sweep`).
    `only` (`Sweep.select`) runs a part of the sweep; the report still lists every run (the others as "not run"), and a
    later `resume` of the whole sweep in the same folder keeps what the part ran.
    """
    t0 = time.perf_counter()
    # Decided before the executor starts: Ray's driver installs a SIGTERM handler of its own.
    owns_sigterm = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    check_base(sweep)
    store = Store(out)
    runs = sweep.expand()
    wanted = {r.run_id for r in sweep.select(only)} if only else None
    done = _finished(store, resume, retry_failed)
    store.write_manifest(sweep, runs)
    todo = [r for r in runs if r.run_id not in done and (wanted is None or r.run_id in wanted)]
    finished = sum(r.run_id in done for r in runs if wanted is None or r.run_id in wanted)
    report = SweepReport(out=store.root, total=len(runs), skipped=finished)
    executor = executor or LocalExecutor()
    bar = _Progress(sweep.name, len(todo) + finished, finished, progress, executor)
    by_id = {r.run_id: r for r in todo}
    source = Path(sweep.source).name if sweep.source else sweep.name
    results = executor.run([{**r.task(), "source": source} for r in todo], events=bar.event)
    heard: list[str] = []
    try:
        with _sigterm_stops_sweep(owns_sigterm, heard):
            for res in results:
                _record(store, by_id[res["run_id"]], res, sweep.name, report, bar)
    except KeyboardInterrupt as stop:
        report.interrupted = True
        # The handler's note, not the exception's type: Ray's wait turns what a signal
        # handler raises into a plain KeyboardInterrupt.
        report.interrupted_by = "SIGTERM" if heard or isinstance(stop, Terminated) else "Ctrl-C"
    finally:
        results.close()
        bar.close()
    report.wall_s = time.perf_counter() - t0
    report.rows = _summary_rows(store, runs)
    return report


@contextlib.contextmanager
def _sigterm_stops_sweep(owned: bool, heard: list[str]) -> Iterator[None]:
    """While runs execute, SIGTERM stops the sweep as Ctrl-C does: the runs stored so far stay,
    the executor's workers end, the summary is printed and `--resume` continues. `owned`: the
    handler was SIGTERM's default when the sweep began (a handler its caller installed is left
    alone); one the executor installed since (Ray's driver exits on SIGTERM) is replaced for
    the loop and put back after it. `heard` gets "SIGTERM" when it arrives."""
    if not owned:
        yield
        return

    def stop(signum: int, frame: object) -> None:
        heard.append("SIGTERM")
        # A second SIGTERM while the executor stops and the summary is made ends the process.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated

    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


def _finished(store: Store, resume: bool, retry_failed: bool) -> set[str]:
    """Ids of the runs to skip."""
    store.clean_temporaries()
    statuses = store.statuses()
    if statuses and not resume:
        raise SweepError(f"{store.root} already holds {len(statuses)} finished runs: pass --resume to "
                         "continue that sweep, or choose another --out")
    return {rid for rid, st in statuses.items() if st == "ok" or (st == "error" and not retry_failed)}


def _record(store: Store, spec: RunSpec, res: dict[str, Any], name: str, report: SweepReport,
            bar: "_Progress") -> None:
    if res["status"] == "interrupted":
        bar.finished(spec.run_id, failed=False, counted=False)
        return
    store.write_run(spec, res, name)
    failed = res["status"] != "ok"
    report.failed += failed
    report.ok += not failed
    bar.finished(spec.run_id, failed)


def _summary_rows(store: Store, runs: list[RunSpec]) -> list[dict[str, Any]]:
    """One row per run of the sweep, from the store (so resumed runs are included)."""
    stored = store.runs()
    info = {r["run_id"]: r for r in stored.iter_rows(named=True)} if stored.height else {}
    shares = _tenant_shares(store, stored)
    rows = []
    for spec in runs:
        r = info.get(spec.run_id)
        ok = bool(r) and r["status"] == "ok"
        rows.append({"run_id": spec.run_id, "label": spec.label(), "status": r["status"] if r else "not run",
                     "flows": (r or {}).get("flows") or 0, "result": run_result(store, r, shares) if ok else "",
                     "wall_s": (r or {}).get("wall_s") or 0.0, "error": (r or {}).get("error"),
                     "stop_reason": (r or {}).get("stop_reason"), "stall_cause": (r or {}).get("stall_cause")})
    return rows


def run_result(store: Store, run: dict[str, Any], shares: pl.DataFrame | None = None) -> str:
    """What a successful run measured, in one short line: each tenant's Gb/s when the run has
    tenants (attacks), else the multipath messages' median completion time, the
    applications' throughput, or the flows' p50 and p99 FCT slowdown. `shares`: `_tenant_shares`."""
    rid = run["run_id"]
    if shares is not None and shares.height:
        mine = shares.filter((pl.col("run_id") == rid) & (pl.col("tenant") != "default"))
        if mine.height:
            return ", ".join(f"{t} {g:.1f}" for t, g in mine.select("tenant", "gbps").iter_rows()) + " Gb/s"
    if store.path("messages", rid).is_file():
        fct = pl.read_parquet(store.path("messages", rid), columns=["fct_ns"])["fct_ns"].drop_nulls().to_numpy()
        fct = fct[~np.isnan(fct)]
        if len(fct):
            return f"{len(fct)} messages, FCT p50 {percentile(fct, 0.5) / 1e3:,.1f} us"
    if store.path("apps", rid).is_file():
        apps = pl.read_parquet(store.path("apps", rid), columns=["gbps", "p99_ct_ns"])
        if apps.height:
            p99 = apps["p99_ct_ns"].max()
            return f"{apps.height} apps, {apps['gbps'].sum():.1f} Gb/s" + (
                f", p99 completion {p99 / 1e3:,.1f} us" if p99 is not None and p99 == p99 else "")
    if store.path("flows", rid).is_file():
        slow = pl.read_parquet(store.path("flows", rid), columns=["slowdown"])["slowdown"].to_numpy()
        slow = slow[~np.isnan(slow)]  # unreachable flows have no slowdown
        if len(slow):
            return f"slowdown p50 {percentile(slow, 0.5):.3f}  p99 {percentile(slow, 0.99):.3f}"
    return "nothing completed"


def _tenant_shares(store: Store, runs: pl.DataFrame) -> pl.DataFrame | None:
    """Per run and tenant, Gb/s over [T/4, T) (`run_shares`), when the sweep metered tenants."""
    if runs.height == 0 or not (store.root / "tenant_bins").is_dir():
        return None
    return run_shares(store, runs)


class _Progress:
    """The sweep's bar (runs done, running, failed, ETA) and one bar per running run."""

    def __init__(self, name: str, total: int, skipped: int, enabled: bool, executor: Any,
                 stream: TextIO | None = None):
        self.enabled = enabled
        self.executor = executor
        self.started: set[str] = set()
        # Runs already finished: a worker's "start" event travels on another queue than
        # its result and can arrive after it; it must not count the run as running again.
        self.ended: set[str] = set()
        self.running_bars: dict[str, tqdm] = {}
        self.done = self.failed = 0
        self.submitted = total - skipped
        self.capacity = executor.capacity() if hasattr(executor, "capacity") else 1
        # sys.stderr as it is now, not at import: whoever redirected it (a test, a notebook) gets the bar.
        self.bar = tqdm(total=total, initial=skipped, unit="run", desc=name[:24], disable=not enabled,
                        file=stream or sys.stderr, dynamic_ncols=True)
        self._postfix()

    def running(self) -> int:
        """Runs executing now: those started and not finished (the local pool reports
        starts), else as many as the executor runs at once."""
        left = self.submitted - self.done - self.failed
        if self.started:
            left = len(self.started)
        return min(self.capacity, left)

    def _postfix(self) -> None:
        self.bar.set_postfix_str(f"done={self.done} running={self.running()} failed={self.failed}")

    def event(self, ev: tuple) -> None:
        """A worker's start or progress event."""
        kind, rid = ev[0], ev[1]
        if kind == "start":
            if rid in self.ended:
                return
            self.started.add(rid)
            if self.enabled:
                used = {b.pos for b in self.running_bars.values()}
                pos = next(i for i in range(1, len(used) + 2) if i not in used and -i not in used)
                self.running_bars[rid] = tqdm(total=0, unit="flow", desc=f"  {rid[:8]}", leave=False,
                                              delay=RUN_BAR_DELAY_S,
                                              position=pos, file=self.bar.fp, dynamic_ncols=True)
            self._postfix()
        elif kind == "progress" and rid in self.running_bars:
            b = self.running_bars[rid]
            b.total = ev[3]
            b.update(ev[2] - b.n)

    def finished(self, rid: str, failed: bool, counted: bool = True) -> None:
        """A run ended (and was stored unless `counted` is False)."""
        self.started.discard(rid)
        self.ended.add(rid)
        b = self.running_bars.pop(rid, None)
        if b is not None:
            b.close()
        if counted:
            self.failed += failed
            self.done += not failed
            self.bar.update(1)
        self._postfix()

    def close(self) -> None:
        for b in self.running_bars.values():
            b.close()
        self.bar.close()


def slowdown_summary(flows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """p50/p95/p99 slowdown per group of runs (e.g. by `fabric.cc`), pooling their flows."""
    rows = []
    for key, g in flows.group_by(by, maintain_order=True):
        s = g["slowdown"].to_numpy()
        s = s[~np.isnan(s)]  # unreachable flows have no slowdown
        rows.append({**dict(zip(by, key)), "flows": len(s), "p50": percentile(s, 0.5),
                     "p95": percentile(s, 0.95), "p99": percentile(s, 0.99),
                     "mean": float(np.mean(s)) if len(s) else float("nan")})
    return pl.DataFrame(rows)
