"""The collective reproductions (docs/collectives.md "Reproductions"): each
quick variant runs through `rdmalab repro run`, and what it measures is held against closed
forms worked out here by hand and against directions the fabric forces."""

from __future__ import annotations

import math

import pytest

from rdmalab.cli import main
from rdmalab.experiments import repro
from rdmalab.experiments.repro.collectives import cc_name, order_name, results, wire
from rdmalab.experiments.store import Store, load_sweep

RATE = 400e9          # the quick fabrics' links
MTU, HDR, ACK = 4096, 48, 60


def tx_ns(nbytes: float) -> float:
    return nbytes * 8 / RATE * 1e9


def _run(name: str, tmp_path, capsys) -> tuple[list[dict], dict, str]:  # noqa: ANN001
    out = tmp_path / name
    assert main(["repro", "run", name, "--quick", "--out", str(out), "--quiet", "--workers", "2"]) == 0
    text = capsys.readouterr().out
    runs, flows = load_sweep(out)
    exp = repro.get(name)
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(out))}
    return results(Store(out), runs), rows, text


def test_busbw_quick_matches_the_idle_rings_closed_form_and_orders_the_algorithms(tmp_path, capsys):
    recs, rows, text = _run("collectives-busbw", tmp_path, capsys)
    assert (tmp_path / "collectives-busbw" / "figures" / "busbw_vs_size.png").is_file()
    assert "| allreduce/ring |" in text and "closed form us" in text
    by = {(r["kind"], r["algorithm"], r["size"]): r for r in recs}
    assert len(by) == 7 * 3 and all(math.isfinite(r["end_ns"]) for r in recs)
    big = 8 * 1024 ** 2
    # Ring allreduce of 8 MiB over 16 ranks in rail order, 4 servers of 4 GPUs, 2 servers a
    # leaf: one loop of 512 KiB segments (128 packets of 4096 B). A hop's uplink carries each
    # packet with its 48 B header and the 60 B ACK it returns for a received one; a hop under
    # one leaf is 2 links, one between leaves 4. Half the ring's hops cross leaves, so the
    # last rank's chain of 2(n-1) = 30 hops has 15 of each, and 29 ACKs precede data.
    ser = 128 * tx_ns(MTU + HDR + ACK)
    a2 = ser + tx_ns(MTU + HDR) + 2 * 1000
    a4 = ser + 3 * tx_ns(MTU + HDR) + 4 * 1000
    t = 15 * a2 + 15 * a4 + 29 * tx_ns(ACK)
    ring = by[("allreduce", "ring", big)]
    assert ring["end_ns"] - ring["start_ns"] == pytest.approx(t, rel=0.005)
    assert rows[("allreduce/ring 8MiB", "busbw / closed form")].theirs == pytest.approx(
        big * 8 / t * 2 * 15 / 16, rel=1e-6)
    # Allgather and reduce-scatter are the two halves of that ring: 15 hops each.
    for kind in ("allgather", "reduce_scatter"):
        r = by[(kind, "ring", big)]
        half = max(8 * a2 + 7 * a4, 7 * a2 + 8 * a4) + 14 * tx_ns(ACK)
        assert r["end_ns"] - r["start_ns"] == pytest.approx(half, rel=0.005)
    # Nothing beats a link's payload rate; small sizes are latency-bound.
    ceiling = RATE / 1e9 * MTU / (MTU + HDR + ACK)
    assert all(r["busbw_gbps"] <= ceiling for r in recs)
    for kind, alg in {(k, a) for k, a, _ in by}:
        sizes = sorted(s for k, a, s in by if (k, a) == (kind, alg))
        assert by[(kind, alg, sizes[0])]["busbw_gbps"] < by[(kind, alg, sizes[-1])]["busbw_gbps"]
    # The rail-order ring collides nowhere; halving-doubling's and all-to-all's exchanges
    # cross the spines together (ECMP collisions, incast), so both fall below it at 8 MiB.
    for kind, alg in (("alltoall", "direct"), ("allreduce", "halving_doubling")):
        assert by[(kind, alg, big)]["busbw_gbps"] < ring["busbw_gbps"]


def test_cc_quick_every_row_completes_and_collisions_cost_every_cc(tmp_path, capsys):
    recs, rows, text = _run("collectives-cc", tmp_path, capsys)
    assert (tmp_path / "collectives-cc" / "figures" / "busbw_by_cc.png").is_file()
    assert "| host order | ib (IB) |" in text
    key = {(cc_name(r["scenario"]), int(r["scenario"]["collective"][0]["channels"]), order_name(r["scenario"])): r
           for r in recs}
    assert set(key) == {(cc, ch, o) for cc in ("none", "dcqcn", "hpcc", "ib (IB)") for ch in (1, 4)
                        for o in ("rail", "host")}
    assert all(math.isfinite(r["end_ns"]) and r["busbw_gbps"] > 0 for r in recs)
    for cc in ("none", "dcqcn", "hpcc", "ib (IB)"):
        # Rail order, one channel: the idle ring of the first test, in this CC's packet format
        # (HPCC adds 42 B of INT to data and echoes it in 88 B ACKs; InfiniBand has 26 B headers,
        # 30 B ACKs and a 6 B credit packet per packet).
        rail = key[(cc, 1, "rail")]
        c = rows[(f"{cc} ch=1 rail", "busbw / idle ring")]
        assert c.ours == pytest.approx(c.theirs, rel=0.005)
        w = wire(rail["scenario"])
        assert (w.header, w.back) == {"hpcc": (90, 88), "ib (IB)": (26, 36)}.get(cc, (48, 60))
        # Host order: every hop crosses a spine and ECMP puts two of a leaf's flows on one
        # uplink somewhere, so each CC loses to its own rail order; spreading the ring over
        # four channels (four QPs per neighbour, hashed apart) recovers part of it.
        for ch in (1, 4):
            assert key[(cc, ch, "host")]["busbw_gbps"] < 0.95 * key[(cc, ch, "rail")]["busbw_gbps"]
        assert key[(cc, 4, "host")]["busbw_gbps"] > key[(cc, 1, "host")]["busbw_gbps"]
