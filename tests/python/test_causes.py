"""The investigations' base (`rdmalab.experiments.causes.base`): parts by name, an unknown part
refused with the list, the timing line, and runs kept in and read back from the results store."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import rdmalab
from rdmalab import Scenario
from rdmalab.experiments import causes
from rdmalab.experiments.causes import base
from rdmalab.experiments.store import Store

SCRIPTS = sorted(m.name for m in pkgutil.iter_modules(causes.__path__) if m.name != "base")


def _scenario() -> Scenario:
    return Scenario.star(3).flow(0, 2, 200_000).flow(1, 2, 100_000, start="2us")


def _investigation(seen: list):
    def one(size: str = "200000") -> None:
        seen.append(base.run(Scenario.star(3).flow(0, 2, int(size)).flow(1, 2, 100_000, start="2us")))

    return base.Investigation("demo", {"one": one, "two": lambda: None}, ["one"])


def test_a_run_is_stored_read_back_and_made_again_when_fresh(tmp_path, capsys):
    seen: list = []
    inv = _investigation(seen)
    assert inv.main(["--out", str(tmp_path / "s")]) == 0
    assert capsys.readouterr().out.strip().endswith(" s)")  # the timing line
    assert inv.main(["--out", str(tmp_path / "s"), "one"]) == 0
    assert inv.main(["--out", str(tmp_path / "s"), "--fresh"]) == 0
    first, again, fresh = seen
    assert [first.stored, again.stored, fresh.stored] == [False, True, False]
    assert first.run_id == again.run_id == fresh.run_id and len(Store(tmp_path / "s").run_ids()) == 1
    # The stored tables and counters are the simulated ones, and those are what `rdmalab.run` gives.
    direct = rdmalab.run(_scenario(), progress=False)
    for r in seen:
        assert r.flows.equals(direct.flows) and r.counters["drops"] == direct.counters["drops"]
    assert again.counters == {k: v for k, v in first.counters.items() if k in again.counters}
    assert len(again.counters) >= 10
    # Another argument is another scenario, so another run.
    assert inv.main(["--out", str(tmp_path / "s"), "one:300000"]) == 0
    assert not seen[-1].stored and len(Store(tmp_path / "s").run_ids()) == 2
    assert sorted(seen[-1].flows["size"].to_list()) == [100_000, 300_000]


def test_outside_main_a_run_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = base.run(_scenario())
    assert not r.stored and r.flows.height == 2 and not (tmp_path / "out").exists()
    with pytest.raises(AttributeError, match="no table 'nope'"):
        r.nope


def test_an_unknown_part_or_argument_is_refused_with_the_list(tmp_path, capsys):
    inv = _investigation([])
    assert inv.main(["--out", str(tmp_path), "three"]) == 2
    assert "unknown part 'three': choose from one, two" in capsys.readouterr().err
    assert inv.main(["--out", str(tmp_path), "two:1"]) == 2
    assert "part 'two' does not take ['1']" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match=r"default parts \['x'\]"):
        base.Investigation("demo", {"one": lambda: None}, ["x"])
    with pytest.raises(RuntimeError, match="traffic"):
        base.run(Scenario.star(2).flow(0, 5, 1000))
    # The engine's warnings reach the caller, as from `rdmalab.run`.
    two_links = Scenario.dumbbell(1, bottleneck_rate=["10Gbps", "10Gbps"]).flow(0, 1, 10_000)
    with pytest.warns(rdmalab.RdmalabWarning, match="joined by 2 links"):
        base.run(two_links)
    with pytest.raises(TypeError, match="a run takes a Scenario, a scenario dict or TOML text, got int"):
        base.run(42)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_is_on_the_base(script, capsys):
    mod = importlib.import_module(f"rdmalab.experiments.causes.{script}")
    inv = mod.INVESTIGATION
    assert inv.name == script and inv.parts and set(inv.default) <= set(inv.parts)
    assert inv.main(["no-such-part"]) == 2
    assert ", ".join(inv.parts) in capsys.readouterr().err


def test_conweave_causes_rows_fill_their_header():
    # Every column of conweave_causes' table has its value in a row (the drops and pauses
    # columns came with the `buffer` part), and the parts are there by name.
    from rdmalab.experiments.causes import conweave_causes as cw

    r = {k: 1 for k in ("avg", "p99", "ooo", "nacks", "retx", "untracked", "reorder_timeouts", "reorder_unheld",
                        "lb_reroutes", "drops", "release_drops", "pauses", "wall")}
    r.update({k: 0 for k in cw.CAUSES} | {"gaps_" + k: 0 for k in cw.CAUSES})
    header, rule = cw.HEADER.splitlines()
    line = cw.row("50 % | ecmp", r)
    assert line.count("|") == header.count("|") == rule.count("|")
    assert {"50", "80", "variants", "buffer"} <= set(cw.INVESTIGATION.parts)
