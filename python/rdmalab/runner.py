"""Running a scenario: progress bar, Ctrl-C (or SIGTERM) that keeps what was measured, results."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rdmalab import _core
from rdmalab.failure import RunFailed, check_record
from rdmalab.hpcc_simai import write_end_to_end
from rdmalab.scenario import Scenario, looks_like_toml
from rdmalab.summary import Outcome, RunOutcome

if TYPE_CHECKING:
    from rdmalab.results import Results

#: Events per slice between progress updates (about 0.1-0.3 s of work).
SLICE_EVENTS = 1_000_000


class Terminated(KeyboardInterrupt):
    """SIGTERM during a run (a batch scheduler's time limit, `kill`): the run stops as at
    Ctrl-C and keeps what it measured."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_stops_run() -> Iterator[None]:
    """While a run is in progress, SIGTERM stops it as Ctrl-C does, so that the results up to
    that moment are kept and written. Only in the main thread (the one signals reach) and
    only where SIGTERM still has its default action: a handler the caller installed (Ray's,
    a notebook's) is left alone. The default comes back once the run has stopped, so a second
    SIGTERM while the outputs are written ends the process as usual."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class RdmalabWarning(UserWarning):
    """A scenario setting that is valid but probably unintended; the message says what the
    run does with it (a duplicate link, a stop time before every flow, ...)."""


def warn_scenario(sim: "_core.Simulation") -> None:
    """Issues the engine's warnings about the scenario as `RdmalabWarning`s."""
    for text in sim.warnings():
        warnings.warn(text, RdmalabWarning, stacklevel=3)


#: Columns of the per-packet trace, in the engine's spool order (`sim::trace::COLUMNS`), by
#: their polars type's name.
TRACE_COLUMNS = {"time_ps": "UInt64", "event": "Utf8", "node": "UInt32", "port_id": "UInt32", "flow": "UInt32",
                 "qp": "UInt32", "kind": "Utf8", "seq": "UInt64", "pg": "UInt8", "wire": "UInt32",
                 "payload": "UInt32", "qlen": "UInt64"}


def _progress_bar(total: int, progress: bool):  # noqa: ANN202
    """The progress bar (tqdm's notebook bar under IPython, its text bar elsewhere), or None."""
    if not progress:
        return None
    if "IPython" in sys.modules:
        # Lazy on purpose: tqdm.auto loads asyncio (some 0.1 s); only a run with a bar needs it.
        from tqdm.auto import tqdm
    else:
        # Lazy on purpose: a run without a progress bar (`--quiet`) does without tqdm.
        from tqdm import tqdm
    return tqdm(total=total, unit="flow", delay=1.0, leave=False)


def drive(sim: "_core.Simulation", progress: bool = True, check: bool = True,
          trace_path: str | Path | None = None, release: bool = True, tables: bool = True) -> RunOutcome:
    """Runs `sim` to the end in slices, showing a progress bar after one second.

    Ctrl-C stops the run cleanly: the results hold every flow completed so far and
    `interrupted` is set. SIGTERM does the same in the main thread where it has its default
    action (`extra["interrupted_by"]` says which of the two it was). A run that fails an
    internal check (`check`: a lossless fabric that dropped packets, bytes not conserved)
    raises `RunFailed`, which carries the results up to that moment and the failure record
    (`rdmalab.failure`). A scenario with `[trace]` writes
    its trace to `trace_path` (default: a temporary folder), streamed: `Results.trace` scans
    it lazily.

    With `release`, the engine is freed once its results and trace are taken, before Python
    builds its tables from them (`Simulation.release`: at a million hosts the engine is most
    of the run's memory); the results still write their FCT and PFC files.

    Without `tables`, a run that ends normally and whose summary reads no table returns an
    `Outcome` (counters, summary, the FCT and PFC files; no polars loaded) instead of
    `Results`.
    """
    spool = _start_trace(sim, trace_path)
    before = len(sim.warnings())
    t0 = time.perf_counter()
    done, total = sim.progress()
    bar = _progress_bar(total, progress)
    reason, interrupted, slices, signal_name = "paused", False, 0, None
    try:
        with _sigterm_stops_run():
            while reason == "paused":
                reason = sim.run(max_events=SLICE_EVENTS)
                slices += 1
                if bar is not None:
                    done_now, _ = sim.progress()
                    bar.update(done_now - done)
                    done = done_now
                    bar.set_postfix_str(f"t={sim.now_ps() / 1e6:.1f}us", refresh=False)
    except KeyboardInterrupt as stop:
        interrupted = True
        reason = "interrupted"
        signal_name = "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    _warn_new(sim, before)
    if reason == "stalled":
        check = False
    stats = sim.parallel_stats()
    traced = sim.finish_trace() if spool is not None else None
    if not tables and spool is None:
        # The summary without tables, when the run has nothing a table must show and
        # nothing failed: no record becomes a column (and neither numpy nor polars loads).
        lean = sim.outcome(check=check and not interrupted)
        if "failure" not in lean and not lean["needs_tables"]:
            if release:
                sim.release()
            outcome = Outcome(lean, reason, interrupted, wall)
            outcome.extra["core"] = sim
            if signal_name is not None:
                outcome.extra["interrupted_by"] = signal_name
            return outcome
    raw = sim.results(check=check and not interrupted, release=release, keep=True)
    failure = raw.pop("failure", None)
    # Lazy on purpose: polars (the tables) only for a run whose tables are read.
    from rdmalab.results import Results

    results = Results.from_core(raw, reason, interrupted, wall)
    results.extra["core"] = sim
    if signal_name is not None:  # which stop the failure record and the exit status name
        results.extra["interrupted_by"] = signal_name
    results.extra["engine"] = sim.engine()
    if (cc := sim.cc_settings()) is not None:  # InfiniBand CC: which preset and table it ran
        results.extra["cc_settings"] = cc
    if stats is not None:  # where the threads spent the run (docs/parallel.md, "Speed")
        results.extra["parallel"] = stats | {"slices": slices}
    if spool is not None:
        _finish_trace(spool, traced, results)
    if failure is not None:
        record = check_record(failure, results)
        raise RunFailed(record["message"], results, record)
    return results


def _warn_new(sim: "_core.Simulation", before: int) -> None:
    """Warnings the engine raised during the run (sampling stopped at its memory cap)."""
    for text in sim.warnings()[before:]:
        warnings.warn(text, RdmalabWarning, stacklevel=3)


def _start_trace(sim: "_core.Simulation", trace_path: str | Path | None) -> tuple[Path, Path] | None:
    """Starts the engine's trace into a CSV spool beside the Parquet file it becomes."""
    if not sim.trace_requested():
        return None
    dest = Path(trace_path) if trace_path else Path(tempfile.mkdtemp(prefix="rdmalab-trace-")) / "trace.parquet"
    dest.parent.mkdir(parents=True, exist_ok=True)
    spool = dest.with_suffix(".csv.part")
    sim.start_trace(str(spool))
    return spool, dest


def _finish_trace(spool: tuple[Path, Path], traced: tuple[int, bool], results: Results) -> None:
    """Converts the spool (flushed by the engine: `traced` is its (records, truncated)) to
    Parquet by streaming (never the whole trace in memory), the port named by its `link` and
    its index on the node."""
    # Lazy on purpose: polars only for a run with a trace (its tables are built already).
    import polars as pl

    csv, dest = spool
    records, truncated = traced
    names = results.ports.select("port_id", "port", "link").lazy()
    schema = {name: getattr(pl, kind) for name, kind in TRACE_COLUMNS.items()}
    trace = pl.scan_csv(csv, schema=schema).join(names, on="port_id", how="left", maintain_order="left")
    trace.select(list(TRACE_COLUMNS)[:3] + ["port", "link"] + list(TRACE_COLUMNS)[3:]).sink_parquet(dest)
    csv.unlink()
    results.counters["trace_records"] = records
    results.counters["trace_truncated"] = int(truncated)
    results.extra["trace_path"] = dest


def run(scenario: Scenario | dict | str | Path, progress: bool = True, trace_path: str | Path | None = None,
        threads: int | str | None = None) -> Results:
    """Simulates a scenario (a `Scenario`, a dict of the TOML's structure, a TOML file's path
    or TOML text) and returns its results. With a
    `[trace]` table, the trace goes to `trace_path` (default: a temporary folder).

    `threads`: the parallel engine's partition-independent event order (results do not depend
    on the number); `None` keeps the scenario's `threads` or, absent, the sequential engine with
    the reference's order. More than 1 cuts the fabric into up to that many partitions, one
    thread each (docs/model/determinism.md, "Parallel engine"); mechanisms not split yet are refused.
    `"auto"` (what `rdmalab run` does without `--threads`): the scenario's `threads` if it names
    one, else the machine's cores capped by the partitions where that is expected to be faster
    than one thread (else one thread; docs/parallel.md, "When `auto` cuts"), falling back to the
    sequential engine for a scenario the parallel one refuses; `results.extra["engine"]` says
    which ran."""
    return run_with_option(scenario, progress, trace_path, threads, None)


def run_with_option(scenario: Scenario | dict | str | Path, progress: bool, trace_path: str | Path | None,
                    threads: int | str | None, threads_option: str | None) -> Results:
    """`run`, where `threads` came from the command line's option `threads_option`
    (`--threads`) when it names one: a count the engine refuses names that option (else the
    argument `threads=`), with the scenario."""
    threads = _threads_arg(threads)
    sim = _simulation(scenario, threads, threads_option)
    warn_scenario(sim)
    return drive(sim, progress=progress, trace_path=trace_path)


def _simulation(scenario: Scenario | dict | str | Path, threads: int | None,
                option: str | None = None) -> "_core.Simulation":
    """The engine's simulation of a `Scenario`, a dict of the TOML's structure, a TOML file's
    path, or TOML text (a string with a newline or `=` that names no file)."""
    if isinstance(scenario, dict):
        scenario = Scenario(scenario)
    if isinstance(scenario, Path) or (isinstance(scenario, str) and not looks_like_toml(scenario)):
        return _core.Simulation.from_toml_file(str(scenario), threads, option)
    if isinstance(scenario, str):
        # Paths inside: the current folder.
        return _core.Simulation.from_toml(scenario, "<toml string>", threads, option)
    if not isinstance(scenario, Scenario):
        raise TypeError(f"run() takes a Scenario, a dict, a TOML file's path or TOML text, "
                        f"got {type(scenario).__name__}")
    text = scenario.toml_source()
    if text is not None and scenario.path is not None:
        return _core.Simulation.from_toml(text, str(scenario.path), threads, option)
    return _core.Simulation.from_json(scenario.to_json(), scenario.base_dir(), threads, option)


def _threads_arg(threads: int | str | None) -> int | None:
    """`threads` for the core: a count of at least 1, `None`, or 0 for "auto"."""
    if threads == "auto":
        return 0
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a count of at least 1 or 'auto', got {threads!r}")
    return threads


def detect_hpcc_dialect(config: str | Path) -> tuple[str, tuple[str, int] | None]:
    """The dialect an HPCC config's keys show ("conweave" or "simai" when it has a key only
    that fork reads, else "m4" when it has a key of m4's fork, else "reference"), with that
    key and its line."""
    return _core.Simulation.detect_hpcc_dialect(str(config))


def run_hpcc(config: str | Path, progress: bool = True, threads: int | str | None = None,
             dialect: str | None = None, topology: str | Path | None = None,
             workload: str | Path | None = None) -> tuple[Results, str, str]:
    """Runs an ns-3 HPCC simulator config; writes its FCT and PFC files like `third` does,
    and with ENABLE_TRACE its packet trace (as Parquet) to TRACE_OUTPUT_FILE, with
    QLEN_MON_START < QLEN_MON_END the queue-length monitor to QLEN_MON_FILE.

    `threads` as in `run`: `None` (the default) runs the reference's event order.
    `dialect`: "reference", "m4", "simai" or "conweave" (docs/hpcc-dialects.md); `None`
    detects it from the keys. The simai dialect takes SimAI's `topology` and `workload` files
    besides the config (SimAI's `-n` and `-w`).

    Returns the results and the two output paths.
    """
    return hpcc_files(config, progress, threads, dialect, tables=True, topology=topology, workload=workload)


def _check_output_folders(config: str | Path, outputs: list[tuple[str, str | None]]) -> None:
    """Refuses, before the run, an output path whose folder does not exist (the reference's
    `fopen` would fail there): otherwise the run would end unable to write what it measured."""
    for key, path in outputs:
        if not path or Path(path).parent.is_dir():
            continue
        line = next((i for i, text in enumerate(Path(config).read_text().splitlines(), 1)
                     if text.split()[:1] == [key]), 0)
        raise ValueError(f"{config}:{line}: field `{key}`: the folder of {path} does not exist "
                         f"(paths are relative to the folder the run starts in, {os.getcwd()})")


def hpcc_files(config: str | Path, progress: bool = True, threads: int | str | None = None,
               dialect: str | None = None, tables: bool = False, topology: str | Path | None = None,
               workload: str | Path | None = None, threads_option: str | None = None
               ) -> tuple[RunOutcome, str, str]:
    """`run_hpcc`; without `tables` (what `rdmalab hpcc` does: it prints the summary and
    writes the reference's files) the results are an `Outcome` when the run needs no table
    (`drive`), and polars is never loaded. `threads_option` as in `run_with_option`."""
    opt = [None if p is None else str(p) for p in (topology, workload)]
    if dialect is None and any(opt) and detect_hpcc_dialect(config)[1] is None:
        dialect = "simai"  # SimAI's -n and -w, which only the simai dialect takes
    tables = tables or workload is not None  # the simai dialect's per-layer file reads `collectives`
    sim = _core.Simulation.from_hpcc_config(str(config), _threads_arg(threads), dialect, *opt, threads_option)
    warn_scenario(sim)
    trace_path, qlen_path = sim.monitor_paths()
    fct_path, pfc_path = sim.output_paths()
    outputs = [("FCT_OUTPUT_FILE", fct_path), ("PFC_OUTPUT_FILE", pfc_path), ("TRACE_OUTPUT_FILE", trace_path),
               ("QLEN_MON_FILE", qlen_path)] + [(k, p) for k, p in sim.hpcc_not_written() if k == "FLOW_INPUT_FILE"]
    _check_output_folders(config, outputs)
    for key, path in (("FCT_OUTPUT_FILE", fct_path), ("PFC_OUTPUT_FILE", pfc_path)):
        if path and Path(path).exists():  # said before the run, so there is time to stop it
            warnings.warn(f"{config}: {key} {path} exists and will be overwritten at the end of the run, as the "
                          "reference simulator does (copy it first to keep it)", RdmalabWarning, stacklevel=2)
    # The ConWeave artifact opens FLOW_INPUT_FILE and leaves it empty: so does the dialect.
    empty = [path for key, path in sim.hpcc_not_written() if key == "FLOW_INPUT_FILE"]
    not_written = [(key, path) for key, path in sim.hpcc_not_written() if key != "FLOW_INPUT_FILE"]
    if not_written:  # the ConWeave artifact's monitors: named before the run, never silently skipped
        names = ", ".join(f"{key} {path}" for key, path in not_written)
        warnings.warn(f"{config}: not written (the ConWeave artifact's monitors and logs, which the conweave "
                      f"dialect does not model; docs/hpcc-dialects.md): {names}", RdmalabWarning, stacklevel=2)
    try:
        results = drive(sim, progress=progress, trace_path=trace_path, release=not qlen_path, tables=tables)
    except RunFailed as e:  # what it measured up to the failure, in the reference's files too
        e.results.write_fct(fct_path)
        e.results.write_pfc(pfc_path)
        raise
    results.write_fct(fct_path)
    results.write_pfc(pfc_path)
    for path in empty:
        Path(path).write_text("")
    if workload is not None:  # the simai dialect: SimAI's per-layer file, where SimAI writes it
        lat = os.environ.get("AS_SEND_LAT")
        lat_ns = 6000 if lat is None else int(lat.strip()) * 1000  # the engine has checked it
        results.extra["end_to_end_path"] = write_end_to_end(results, workload, lat_ns)
    if qlen_path:
        sim.write_qlen_monitor(qlen_path)
        results.extra["qlen_path"] = qlen_path
        sim.release()
    return results, fct_path, pfc_path
