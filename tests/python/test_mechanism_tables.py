"""A mechanism's own tables take one generic path from the engine
(`Mechanisms::tables`) to `res.<name>`, `res.tables()` and a parallel run's merge by key
columns. The tables' physics is checked in crates/rdmalab/tests/it/lb.rs and conweave.rs."""

import numpy as np
import polars as pl
import pytest

from rdmalab import Scenario, run
from rdmalab.mechanism_tables import MECHANISM_TABLES, mechanism_frames


def conweave() -> Scenario:
    # The scenario of test_load_balancing.py's ConWeave test: every reply late, so the
    # destination ToRs hold packets in every window.
    sc = Scenario.leaf_spine(2, 4, spines=2)
    for i in range(4):
        sc = sc.flow(i, 4 + i, 1_000_000).flow(4 + i, i, 1_000_000)
    return sc.with_fabric(cc="dcqcn", path_selection="conweave",
                          lb={"conweave_reply_extra": "1ns", "lb_window": "20us"})


def test_tables_arrive_by_name_in_window_order_and_merge_alike_across_threads():
    one = run(conweave(), progress=False)
    for name in ("balance", "reorder"):
        frame = getattr(one, name)
        assert frame is one.mechanisms[name] and one.tables()[name] is frame and frame.height > 0
        # Rows start on window boundaries (20 us) and are sorted by (window, switch).
        assert (frame["window_start_ns"] % 20_000.0 == 0).all()
        keys = list(zip(frame["window_start_ns"].to_list(), frame["switch"].to_list()))
        assert keys == sorted(keys)
    # The partition-independent event order (`threads = 1`) against two partitions, whose
    # parts are merged by the key columns. (The sequential run above keeps the reference's
    # tie order, whose events differ.)
    ordered, two = (run(conweave(), progress=False, threads=n) for n in (1, 2))
    assert two.extra["engine"] != ordered.extra["engine"]
    for name in ("balance", "reorder"):
        assert ordered.mechanisms[name].height > 0
        assert two.mechanisms[name].equals(ordered.mechanisms[name]), name


def test_a_run_without_the_mechanism_has_empty_frames_with_their_columns():
    res = run(Scenario.leaf_spine(2, 1, spines=2).flow(0, 1, 10_000), progress=False)
    for name, schema in MECHANISM_TABLES.items():
        frame = getattr(res, name)
        assert frame.height == 0 and frame.schema == pl.Schema(schema)
        assert name not in res.tables()
    with pytest.raises(AttributeError, match="no_such_table"):
        getattr(res, "no_such_table")


def test_an_unknown_table_is_taken_as_it_comes_with_ps_read_as_ns():
    raw = {"hot_egress": {"at_ps": np.array([1_500, 3_000], dtype=np.uint64),
                          "port": np.array([4, 7], dtype=np.uint64)}}
    frames = mechanism_frames(raw)
    assert frames["hot_egress"]["at_ns"].to_list() == [1.5, 3.0]
    assert frames["hot_egress"]["port"].to_list() == [4, 7]
    assert set(MECHANISM_TABLES) <= set(frames)
