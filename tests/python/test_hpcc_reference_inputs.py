"""Inputs the reference (alibaba-edu/High-Precision-Congestion-Control) publishes or its own
scripts write, run by `rdmalab hpcc` as the reference runs them."""

from __future__ import annotations

import polars as pl
import pytest

import rdmalab
from rdmalab.runner import RdmalabWarning


def test_trace_file_ids_past_the_topology_are_skipped_as_the_reference_does(reference_copy, monkeypatch):
    """The reference's `mix/trace.txt` lists the 348 nodes of its fat tree; its `mix/config.txt`
    pairs it with the 66-node `mix/topology.txt` and `ENABLE_TRACE 1`. The reference skips ids
    past its nodes (`third.cc`: `if (nid >= n.GetN()) continue;`): so does rdmalab, with a
    warning, tracing the 66 that exist."""
    monkeypatch.chdir(reference_copy)
    flows = (reference_copy / "S2_flow.txt").read_text().splitlines()
    (reference_copy / "S2_flow.txt").write_text("\n".join(["20"] + flows[1:21]) + "\n")
    cfg = reference_copy / "S2_dcqcn_config.txt"
    cfg.write_text(cfg.read_text().replace("ENABLE_TRACE 0", "ENABLE_TRACE 1"))
    assert (reference_copy / "trace.txt").read_text().split()[0] == "348"
    with pytest.warns(RdmalabWarning, match="trace.txt: 282 node ids of 66 or more not traced"):
        res, _, _ = rdmalab.run_hpcc(cfg.name, progress=False)
    trace = pl.read_parquet(reference_copy / "S2_dcqcn_mix.tr")
    assert res.flows.height == 20 and set(trace["node"]) <= set(range(66)) and trace.height > 0
