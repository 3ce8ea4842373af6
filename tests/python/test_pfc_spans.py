"""The PFC timeline's spans: PAUSE to the RESUME that ends it, and bounded for huge runs."""
import numpy as np

from rdmalab.plots import pause_spans


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
