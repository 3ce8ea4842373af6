"""`collectives_simai_causes nvlink` (docs/collectives.md, "collectives-simai"): on the quick
iteration in SimAI's placement, NVLink takes the TP pairs' bytes off the rails, and their
communications shorten; the data-parallel ring keeps the rails."""

from __future__ import annotations

import polars as pl

from rdmalab.experiments.causes import base
from rdmalab.experiments.causes.collectives_simai_causes import scenario


def spans(r) -> dict[int, float]:
    c = r.collectives.with_columns(span=pl.col("end_ns") - pl.col("start_ns"))
    return {n: c.filter(pl.col("ranks") == n)["span"].sum() for n in (2, 8)}


def rail_bytes(r) -> int:
    return r.ports.filter((pl.col("node_kind") == "host") & (pl.col("port") == 0))["tx_bytes"].sum()


def test_nvlink_takes_the_tp_pairs_off_the_rails():
    rails, nv = base.run(scenario(None, None)), base.run(scenario("400Gbps", "1us"))
    # 17 communications either way, one row each.
    assert rails.collectives.height == nv.collectives.height == 17
    # At the rails' own rate, NVLink only removes the spine crossings and their collisions.
    assert spans(nv)[2] < 0.2 * spans(rails)[2]
    # What the rail NICs still send is the data-parallel ring's (and the ACKs): the same
    # bytes at any NVLink rate.
    assert rail_bytes(nv) < 0.4 * rail_bytes(rails)
    assert rail_bytes(base.run(scenario("3600Gbps", "1us"))) == rail_bytes(nv)
