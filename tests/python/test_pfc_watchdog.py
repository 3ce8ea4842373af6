"""The switches' PFC watchdog from Python (`[fabric.pfc_watchdog]`): an incast across a
leaf-spine pauses the spine's port toward the receiver's leaf and leaf 1's uplink; a watchdog
with a detection time shorter than those pauses declares storms exactly `detection_time` after the PAUSE the
core logged, and its drops are all the run's drops; one longer than the pause changes
nothing. Bad values name their field. The deadlock case (a ring) is checked in
crates/rdmalab/tests/it/pfc_watchdog.rs."""

import polars as pl
import pytest

from rdmalab import Scenario, run

TOML = """
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 1
host_rate = "100Gbps"
fabric_rate = "400Gbps"

[fabric]
cc = "none"
buffer_mb = 1

[fabric.pfc_watchdog]
detection_time = "{detection}"
restoration_time = "10us"

[[traffic]]
kind = "incast"
senders = [4, 5, 6, 7]
receiver = 0
size = 2000000
"""


def scenario(tmp_path, detection: str, extra: str = "") -> Scenario:
    path = tmp_path / "s.toml"
    path.write_text(TOML.format(detection=detection) + extra)
    return Scenario.from_toml(path)


def test_storms_begin_detection_time_after_a_logged_pause_and_own_every_drop(tmp_path):
    # The incast's pauses of the spine and of leaf 1's uplink last about 8 us each.
    res = run(scenario(tmp_path, "5us"), progress=False)
    storms = res.pfc_watchdog
    assert storms.height > 0
    assert ((storms["detected_ns"] - storms["paused_at_ns"] - 5_000.0).abs() < 1e-3).all()
    pauses = res.pfc.filter(pl.col("pause") == 1).select(pl.col("node"), pl.col("ifindex").cast(pl.UInt32), "time_ps")
    began = storms.select("node", pl.col("ifindex").cast(pl.UInt32),
                          (pl.col("paused_at_ns") * 1000).round().cast(pl.UInt64).alias("time_ps"))
    assert began.join(pauses, on=["node", "ifindex", "time_ps"], how="anti").height == 0
    dropped = int(storms["dropped"].sum())
    assert dropped > 0
    assert res.counters["pfcwd_drops"] == dropped == res.counters["drops"]
    assert res.counters["pfcwd_storms"] == storms.height
    assert res.flows.height == 4, "go-back-N resends what the watchdog dropped"


def test_a_watchdog_slower_than_every_pause_changes_nothing(tmp_path):
    quiet = run(scenario(tmp_path, "10ms"), progress=False)
    spec = scenario(tmp_path, "10ms")
    del spec.spec["fabric"]["pfc_watchdog"]
    plain = run(spec, progress=False)
    assert quiet.pfc_watchdog.height == 0 and quiet.counters["pfcwd_drops"] == 0
    assert quiet.flows.equals(plain.flows) and quiet.pfc.equals(plain.pfc)
    assert plain.pfc_watchdog.height == 0 and "pfcwd_storms" not in plain.counters


@pytest.mark.parametrize("body, field, words", [
    ("restoration_time = \"30us\"", "fabric.pfc_watchdog.detection_time", "required"),
    ("detection_time = \"0us\"", "fabric.pfc_watchdog.detection_time", "positive"),
    ("detection_time = \"1ms\"\naction = \"forward\"", "fabric.pfc_watchdog.action", "not modelled"),
    ("detection_time = \"1ms\"\naction = \"reboot\"", "fabric.pfc_watchdog.action", "unknown action"),
    ("detection_time = \"1ms\"\ndetect = \"1ms\"", "detect", "unknown field"),
])
def test_bad_settings_name_their_field(tmp_path, body, field, words):
    path = tmp_path / "bad.toml"
    path.write_text("[topology]\nkind = \"star\"\nhosts = 2\n[fabric.pfc_watchdog]\n" + body + "\n")
    with pytest.raises(Exception) as e:
        run(Scenario.from_toml(path), progress=False)
    assert field in str(e.value) and words in str(e.value) and "bad.toml" in str(e.value), str(e.value)


def test_a_lossy_fabric_has_nothing_to_watch(tmp_path):
    s = Scenario.star(2, rate="100Gbps").with_fabric(lossless=False, pfc_watchdog={"detection_time": "1ms"})
    with pytest.raises(ValueError, match=r"^<python scenario>: field `fabric\.pfc_watchdog`: PFC is off"):
        run(s.flows([{"src": 0, "dst": 1, "size": 1000}]), progress=False)


@pytest.mark.parametrize("table, setting, words", [
    ("pfc_watchdog", {"detection_time": "1ms"}, "nothing to watch"),
    ("pfc_pause", {"quanta": 1000}, "no PAUSE is sent"),
])
def test_a_class_table_with_no_lossless_class_has_nothing_to_watch_or_pause(table, setting, words):
    # Classes decide PFC once a table exists: one that leaves every class lossy (those it
    # does not list follow `lossless`) is as PFC-free as `lossless = false` alone.
    def with_classes(lossless, classes):
        s = Scenario.star(2, rate="100Gbps").with_fabric(lossless=lossless, classes=classes, **{table: setting})
        return s.flows([{"src": 0, "dst": 1, "size": 1000}])
    refused = rf"^<python scenario>: field `fabric\.{table}`: PFC is off on every class .*: {words}"
    with pytest.raises(ValueError, match=refused):
        run(with_classes(False, [{"pg": 3, "pfc": False}]), progress=False)
    with pytest.raises(ValueError, match=refused):
        run(with_classes(True, [{"pg": q, "pfc": False} for q in range(1, 8)]), progress=False)
    # One lossless class is enough for PAUSE frames: accepted, and the flow finishes.
    assert run(with_classes(False, [{"pg": 3, "pfc": True}]), progress=False).flows.height == 1
    assert run(with_classes(True, [{"pg": 3, "pfc": False}]), progress=False).flows.height == 1
