"""Python builds every section the TOML has, with the same names."""

import rdmalab
from rdmalab import Scenario

TOML = """
threads = "auto"
[topology]
kind = "fat_tree"
k = 4
[[traffic]]
kind = "flows"
flows = [{src = 0, dst = 15, size = 100000}]
[[links]]
a = 16
b = 24
error_rate = 0.0
[[events]]
kind = "link_down"
at = "5us"
a = 16
b = 24
[trace]
flows = [0]
max_bytes = 100000000
"""


def test_the_builders_write_what_the_toml_says(tmp_path):
    built = (Scenario.fat_tree(4).flow(0, 15, 100_000).with_threads("auto").link(16, 24, error_rate=0.0)
             .event("link_down", "5us", 16, 24).with_trace(flows=[0], max_bytes=100_000_000))
    read = Scenario.from_toml_text(TOML)
    for key in ("threads", "links", "events", "trace"):
        assert built.spec[key] == read.spec[key], key
    res = rdmalab.run(built, progress=False, trace_path=tmp_path / "t.parquet")
    assert res.counters["trace_records"] > 0 and len(res.flows) == 1


def test_partition_map_is_a_path(tmp_path):
    (tmp_path / "map.txt").write_text("".join(f"{n} {0 if n < 5 else 1}\n" for n in range(6)))
    sc = Scenario.star(5).flow(1, 2, 10_000).with_partition_map(tmp_path / "map.txt").with_threads(2)
    assert sc.spec["partition_map"] == str((tmp_path / "map.txt").resolve())
    res = rdmalab.run(sc, progress=False)
    assert len(res.flows) == 1 and "partition" in res.extra["engine"]
