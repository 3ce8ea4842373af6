"""The PFC timeline's spans (PAUSE to the RESUME that ends it, bounded for huge runs) and the
share of each time slice they cover, drawn as one image."""
from types import SimpleNamespace

import numpy as np
import polars as pl

from rdmalab.plots import PFC_SLICES, pause_spans, paused_share, pfc_timeline


def test_spans_follow_pause_and_resume_frames():
    # A leading RESUME, a repeated PAUSE, and a PAUSE still open at the end of the run.
    t = [5, 10, 12, 30, 40, 50]
    p = [0, 1, 1, 0, 0, 1]
    assert pause_spans(np.array(t) * 10**6, np.array(p), 80 * 10**6) == [(10.0, 20.0), (50.0, 30.0)]


def test_a_million_pauses_draw_at_most_the_figure_resolution():
    n = 1_000_000
    t = np.arange(2 * n, dtype=np.int64) * 1000        # pause 1 ns, resume 1 ns, ...
    p = np.tile([1, 0], n)
    spans = pause_spans(t, p, int(t[-1]) + 1000, max_spans=5000)
    assert len(spans) <= 5000
    # Joined spans cover everything the frames paused, from the first PAUSE to the last RESUME.
    assert spans[0][0] == 0.0 and abs(sum(length for _, length in spans) - t[-1] / 1e6) < 1e-6
    # Gaps wider than the figure resolves are kept.
    # Three spans, at most two drawn: the 1 ps gap is joined, the 1 ms gap is kept.
    t2 = np.array([0, 1, 2, 3, 10**9, 10**9 + 1], dtype=np.int64)
    spans2 = pause_spans(t2, np.array([1, 0, 1, 0, 1, 0]), 10**9 + 2, max_spans=2)
    assert spans2 == [(0.0, 3e-6), (1000.0, 1e-6)]


def _overlap_by_loop(starts, ends, end_ps, slices):
    """Each slice's paused share, summed span by span (the definition, slowly)."""
    edges = np.linspace(0.0, float(end_ps), slices + 1)
    out = []
    for b0, b1 in zip(edges[:-1], edges[1:]):
        covered = sum(max(0.0, min(float(e), b1) - max(float(s), b0)) for s, e in zip(starts, ends))
        out.append(covered / (b1 - b0))
    return np.array(out)


def test_each_slice_gets_the_share_of_it_the_spans_cover():
    rng = np.random.default_rng(7)
    for _ in range(50):
        cuts = np.sort(rng.choice(10**6, size=2 * rng.integers(0, 30), replace=False))
        starts, ends = cuts[0::2], cuts[1::2]  # sorted, disjoint, some shorter than a slice
        slices = int(rng.integers(1, 300))
        got = paused_share(starts, ends, 10**6, slices)
        assert np.allclose(got, _overlap_by_loop(starts, ends, 10**6, slices), atol=1e-9)
    # A span open to the end of the run covers the rest; nothing paused is all zeros.
    assert np.allclose(paused_share(np.array([500]), np.array([1000]), 1000, 4), [0, 0, 1, 1])
    assert not paused_share(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 1000, 4).any()


def test_the_timeline_is_one_image_however_many_pauses():
    n_ports, pauses = 30, PFC_SLICES  # a slice is then two whole PAUSE-RESUME periods
    t = np.tile(np.arange(2 * pauses, dtype=np.int64) * 1000, n_ports)
    pfc = pl.DataFrame({"time_ps": t, "pause": np.tile([1, 0], pauses * n_ports).astype(bool),
                        "port_id": np.repeat(np.arange(n_ports), 2 * pauses)})
    pfc = pfc.with_columns(node=pl.col("port_id"), node_kind=pl.lit("switch"), port=pl.lit(0),
                           peer_node=pl.col("port_id") + 100, peer_port=pl.lit(0),
                           link=pl.format("sw{}:0-sw{}:0", pl.col("port_id"), pl.col("port_id") + 100))
    res = SimpleNamespace(pfc=pfc, counters={"end_time_ps": 4 * pauses * 1000})
    ax = pfc_timeline(res).axes[0]
    assert len(ax.images) == 1 and not ax.collections  # no bar per span
    shares = ax.images[0].get_array()
    assert shares.shape == (n_ports, PFC_SLICES)
    # Pause 1 ns, resume 1 ns for the first half of the run: half of each slice there, none after.
    assert np.allclose(shares[:, : PFC_SLICES // 2], 0.5) and not shares[:, PFC_SLICES // 2 + 1:].any()
