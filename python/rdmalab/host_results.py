"""Results of the DRUM paper's host model (`[[app]]`, docs/drum-fabric.md) as DataFrames.

The engine reports one row per batch (its WQEs share size, post time and CQE); `wqes`
expands it to one row per WQE, and `apps` summarises it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

#: One row per WQE: application index and name, its host, batch number, size in bytes,
#: when the application posted it and its completion time (post to its batch's CQE seen by
#: the application; NaN while unfinished), in ns, and where it was when the run ended
#: (`state`, one of WQE_STATES).
WQE_COLUMNS = {"app": pl.UInt32, "name": pl.Utf8, "host": pl.UInt32, "batch": pl.UInt32, "size": pl.UInt64,
               "posted_ns": pl.Float64, "ct_ns": pl.Float64, "state": pl.Utf8}
#: Every place a WQE can be: `queued` in software (DRUM's per-application queue, a SHARE
#: lock, or waiting for room in a full send queue), `posted` in a QP's send queue (or the
#: RNIC's WQE engine) with no byte sent, `wire` sent from and not yet acknowledged,
#: `completed` acknowledged with its batch's CQE not yet seen, `seen` by the application.
WQE_STATES = ("queued", "posted", "wire", "completed", "seen")
#: One row per application: completed WQEs and their bytes, WQE rate per µs and Gb/s over
#: the time from its first post to the end of the run, WQE completion-time percentiles,
#: its first post and, for an application that posted its `total_bytes` and saw the last
#: CQE, when it saw it (`done_ns`; NaN otherwise).
APP_COLUMNS = {"app": pl.UInt32, "name": pl.Utf8, "host": pl.UInt32, "dst": pl.UInt32, "wqes": pl.UInt64,
               "bytes": pl.UInt64, "wqe_per_us": pl.Float64, "gbps": pl.Float64, "p50_ct_ns": pl.Float64,
               "p80_ct_ns": pl.Float64, "p99_ct_ns": pl.Float64, "first_post_ns": pl.Float64,
               "done_ns": pl.Float64}
#: One row per DRUM control period and application: t_ns (period start), x (WQE rate per
#: µs enforced from t on), z (its CQE rate, the poller's weight), a (CQEs per WQE used),
#: active (holds a dedicated QP), rate (WQEs released per µs over the period ending at t).
DRUM_COLUMNS = {"t_ns": pl.Float64, "app": pl.UInt32, "x": pl.Float64, "z": pl.Float64, "a": pl.Float64,
                "active": pl.Boolean, "rate": pl.Float64}


def _pct(v: np.ndarray, p: float) -> float:
    """The project's percentile rule (sort, take element int(n·p))."""
    if len(v) == 0:
        return float("nan")
    s = np.sort(v)
    return float(s[min(int(len(s) * p), len(s) - 1)])


def _states(b: dict[str, Any]) -> np.ndarray:
    """Each WQE's index into WQE_STATES, batch by batch: in a batch the first `completed`
    WQEs completed, then `wire` on the wire, then the rest of the `released` posted, the
    others queued (a QP sends and completes its WQEs in order)."""
    n = np.asarray(b["wr_num"], dtype=np.int64)
    k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    rep = [np.repeat(np.asarray(b[c], dtype=np.int64), n) for c in ("completed", "wire", "released")]
    done, wire, rel = rep
    state = np.where(k < done, 3, np.where(k < done + wire, 2, np.where(k < rel, 1, 0)))
    return np.where(np.repeat(~np.isnan(np.asarray(b["seen_ps"], dtype=np.float64)), n), 4, state)


def wqes_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    if not raw or len(raw["batches"]["app"]) == 0:
        return pl.DataFrame(schema=WQE_COLUMNS)
    b = raw["batches"]
    n = np.asarray(b["wr_num"], dtype=np.int64)
    app = np.repeat(np.asarray(b["app"], dtype=np.int64), n)
    names = np.asarray(raw["app_name"], dtype=object)
    hosts = np.asarray(raw["app_host"], dtype=np.int64)
    posted = np.asarray(b["posted_ps"], dtype=np.float64)
    ct = (np.asarray(b["seen_ps"], dtype=np.float64) - posted) / 1000.0
    state = np.asarray(WQE_STATES, dtype=object)[_states(b)]
    return pl.DataFrame({
        "app": app, "name": names[app].tolist(), "host": hosts[app], "batch": np.repeat(b["batch"], n),
        "size": np.repeat(b["size"], n), "posted_ns": np.repeat(posted / 1000.0, n), "ct_ns": np.repeat(ct, n),
        "state": state.tolist(),
    }).cast(WQE_COLUMNS)


def apps_frame(raw: dict[str, Any] | None, wqes: pl.DataFrame, end_ps: float) -> pl.DataFrame:
    if not raw or len(raw["app_name"]) == 0:
        return pl.DataFrame(schema=APP_COLUMNS)
    rows = []
    done = wqes.filter(pl.col("ct_ns").is_not_nan())
    for i, name in enumerate(raw["app_name"]):
        mine = wqes.filter(pl.col("app") == i)
        d = done.filter(pl.col("app") == i)
        ct = d["ct_ns"].to_numpy()
        nbytes = int(d["size"].sum()) if d.height else 0
        first = float(mine["posted_ns"].min()) if mine.height else float("nan")
        span_us = (end_ps / 1000.0 - first) / 1000.0 if mine.height else float("nan")
        finished = bool(raw["app_done"][i]) and d.height == mine.height and d.height > 0
        done_ns = float((d["posted_ns"] + d["ct_ns"]).max()) if finished else float("nan")
        rows.append({"app": i, "name": name, "host": int(raw["app_host"][i]), "dst": int(raw["app_dst"][i]),
                     "wqes": d.height, "bytes": nbytes,
                     "wqe_per_us": d.height / span_us if span_us and span_us > 0 else float("nan"),
                     "gbps": nbytes * 8 / (span_us * 1e3) if span_us and span_us > 0 else float("nan"),
                     "p50_ct_ns": _pct(ct, 0.5), "p80_ct_ns": _pct(ct, 0.8), "p99_ct_ns": _pct(ct, 0.99),
                     "first_post_ns": first, "done_ns": done_ns})
    return pl.DataFrame(rows).cast(APP_COLUMNS)


def drum_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    if not raw or len(raw["drum"]["app"]) == 0:
        return pl.DataFrame(schema=DRUM_COLUMNS)
    d = raw["drum"]
    return pl.DataFrame({"t_ns": d["t_ps"] / 1000.0, "app": d["app"], "x": d["x"], "z": d["z"], "a": d["a"],
                         "active": d["active"].astype(bool), "rate": d["rate"]}).cast(DRUM_COLUMNS)


def settings_line(settings: dict[str, Any] | None) -> str:
    """The host model's settings a run used, for its summary: the mechanism, the send-queue
    depth and, under DRUM, the shared QPs' window and what `a` was measured as."""
    if not settings:
        return "host model        (settings not reported)"
    line = f"host model        {settings['mechanism']}, max_send_wr {settings['max_send_wr']}"
    if settings["mechanism"] == "drum":
        line += f", shared_window {settings['shared_window']} B, a = {settings['a']}"
        line += f", select = {settings.get('select', 'smallest_a')}"
    return line
