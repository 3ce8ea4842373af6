"""`rdmalab hpcc --dialect` (docs/hpcc-dialects.md): m4's published scenario runs from its
files, detected by its keys, and its FCTs match the fork's published file per size bucket;
the dialects not supported yet say so (the ConWeave dialect: test_hpcc_conweave.py)."""

import importlib.util
import shutil
from pathlib import Path

import pytest

from rdmalab import cli
from rdmalab.runner import detect_hpcc_dialect

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "data" / "m4" / "demo2"


def _bench():
    spec = importlib.util.spec_from_file_location("m4_published", REPO / "bench" / "m4_published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name,flows,exact_small", [("demo0", [67, 26, 33, 59], 40), ("demo1", [94, 33, 41, 95], 65),
                                                     ("demo2", [102, 29, 41, 92], 40), ("demo3", [107, 36, 48, 74], 60),
                                                     ("demo4", [98, 29, 39, 98], 45)])
def test_published_m4_scenarios_match_the_forks_fct_files_per_size_bucket(name, flows, exact_small):
    bench = _bench()
    fork = bench.read_fct(REPO / "tests" / "data" / "m4" / name / "fct_published_cut.txt")
    ours, _ = bench.run_demo(REPO / "tests" / "data" / "m4" / name)
    rows = bench.compare(ours, fork)
    assert [r["flows"] for r in rows] == flows
    for r in rows:
        # Every flow's standalone FCT is the fork's own number (a closed form of the path).
        assert r["standalone_equal"] == r["flows"], r
        assert abs(r["ratio"] - 1) <= 0.10, r
    # Flows that met no other traffic finish at the fork's nanosecond (55, 82, 55, 77, 50 of those below 1 kB).
    assert rows[0]["exact"] >= exact_small, rows[0]
    # With the fork's switch buffer, flows of 100 kB and more finish as in the fork: medians
    # 0.994 to 1.008 of its (0 to 6.5 % late under the reference's buffer rules).
    assert abs(rows[-1]["ratio"] - 1) <= 0.01, rows[-1]


def test_the_forks_switch_buffer_is_what_brings_large_flows_to_the_forks_fcts():
    # The cause of the buffer's part (bench/m4_published.py --mmu both): the same cut with the
    # reference's buffer rules in place of the fork's, everything else the m4 dialect's.
    bench = _bench()
    folder = REPO / "tests" / "data" / "m4" / "demo0"
    fork = bench.read_fct(folder / "fct_published_cut.txt")
    with pytest.warns(UserWarning, match="pause threshold is 0"):
        ref_rows = bench.compare(bench.run_demo(folder, mmu="reference")[0], fork)
    m4_rows = bench.compare(bench.run_demo(folder, mmu="m4")[0], fork)
    assert ref_rows[-1]["ratio"] > 1.015, ref_rows[-1]
    assert abs(m4_rows[-1]["ratio"] - 1) < abs(ref_rows[-1]["ratio"] - 1) / 3, (ref_rows[-1], m4_rows[-1])
    assert sum(r["exact"] for r in m4_rows) > sum(r["exact"] for r in ref_rows) + 40


def test_the_dialect_is_detected_and_printed(tmp_path, capsys, monkeypatch):
    assert detect_hpcc_dialect(DEMO / "config.txt") == ("m4", ("ENABLE_PFC", 2))
    work = tmp_path / "demo"
    shutil.copytree(DEMO, work)
    # A reference-dialect run of the m4 file stops at the first m4 key, naming it.
    monkeypatch.chdir(work)
    assert cli.main(["hpcc", "config.txt", "--dialect", "reference", "--quiet"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "config.txt:2: field `ENABLE_PFC`" in err and "--dialect m4" in err


def test_an_m4_config_in_the_simai_dialect_names_the_first_key_simai_lacks(capsys):
    assert cli.main(["hpcc", str(DEMO / "config.txt"), "--dialect", "simai", "--quiet"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "config.txt:" in err and ("not a SimAI key" in err or "not a key of SimAI" in err), err


def _m4_scenario(folder: Path, flows: str, extra: str = "") -> None:
    """Host 0, switches 1-5 in a line, host 6 (six 10 Gb/s links of 1 us), in m4's files."""
    folder.mkdir(parents=True)
    links = "".join(f"{i} {i + 1} 10Gbps 1000ns 0\n" for i in range(6))
    (folder / "topology.txt").write_text(f"7 5 6\n1 2 3 4 5\n{links}")
    (folder / "flows.txt").write_text(flows)
    (folder / "config_topology_flows.txt").write_text(
        "ENABLE_QCN 1\nENABLE_PFC 1.0\nTOPOLOGY_FILE topology.txt\nFLOW_FILE flows.txt\n"
        "FCT_OUTPUT_FILE fct_topology_flows.txt\nPFC_OUTPUT_FILE pfc_topology_flows.txt\nCC_MODE 8\n"
        "KMAX_MAP 1 10000000000 16\nKMIN_MAP 1 10000000000 4\nPMAX_MAP 1 10000000000 0.2\nENABLE_TRACE 0\n"
        f"BUFFER_SIZE 126.15\nFIXED_WIN 5290.0\nMAX_INFLIGHT_FLOWS 0\n{extra}")


def test_a_folder_of_configs_runs_with_a_status_per_config(tmp_path, capsys):
    for i in range(3):
        _m4_scenario(tmp_path / f"s{i}", f"1\n{i} 0 6 3 100 170 1\n")
    _m4_scenario(tmp_path / "bad", "1\n0 0 6 3 100 170 1\n", extra="MAX_INFLIGHT_FLOWS_TYPO 3\n")
    assert cli.main(["hpcc", str(tmp_path), "--workers", "2", "--quiet"]) == cli.EXIT_FAILED
    out = capsys.readouterr().out
    assert "4 configs under" in out and "3 of 4 ran" in out
    assert "field `MAX_INFLIGHT_FLOWS_TYPO`" in out  # the failure, on its config's line
    for i in range(3):
        # Each scenario's FCT file in its own folder, in m4's columns (DCTCP: 6 x (1,000 + 174) ns).
        line = (tmp_path / f"s{i}" / "fct_topology_flows.txt").read_text()
        assert line == f"{i} 0b000001 0b000601 10000 100 170 1000000000 7044 7044\n"


def test_a_folder_of_twenty_m4_scenarios_is_built_and_each_checked_against_the_published_fcts(tmp_path, capsys):
    # bench/m4_folder.py: 20 scenarios in m4's layout from the three published cuts (the first
    # k flows of each); the two smallest run here through one command and are checked.
    spec = importlib.util.spec_from_file_location("m4_folder", REPO / "bench" / "m4_folder.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    made = bench.build(tmp_path / "all", 20)
    assert len({name for name, _, _ in made}) == 20
    assert {cut for _, cut, _ in made} == {"demo0", "demo2", "demo4"}
    assert all((tmp_path / "all" / n / "config_topology_flows.txt").is_file() for n, _, _ in made)
    assert max(k for _, c, k in made if c == "demo4") == 300  # every cut's last scenario is all of it
    small = sorted(made, key=lambda m: m[2])[:2]
    for name, _, _ in small:
        shutil.copytree(tmp_path / "all" / name, tmp_path / "run" / name)
    assert cli.main(["hpcc", str(tmp_path / "run"), "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 ran" in out and out.count("ok     ") == 2
    for name, cut, k in small:
        r = bench.check(tmp_path / "run", name, cut, k)
        # Published flows done before the first flow left out starts: all there, as in the fork.
        assert r["missing"] == 0 and r["checked"] >= 30, r
        assert abs(r["ratio"] - 1) <= 0.10, r


def test_a_conweave_artifact_config_is_named_as_such(tmp_path, capsys):
    # The head of a config as the ConWeave artifact's run.py writes it (conweave-project/
    # conweave-ns3): its own keys are named as that dialect's, not as unknown keys.
    (tmp_path / "config.txt").write_text(
        "TOPOLOGY_FILE config/leaf_spine_128_100G_OS2.txt\nFLOW_FILE config/flow.txt\n\n"
        "FLOW_INPUT_FILE mix/output/1/1_in.txt\nCNP_OUTPUT_FILE mix/output/1/1_out_cnp.txt\n"
        "BUFFER_SIZE 9\nCC_MODE 1\nLB_MODE 9\nENABLE_PFC 1\nENABLE_IRN 0\n")
    # Detected, the dialect is the artifact's; read as the reference's, its keys say which to use.
    assert detect_hpcc_dialect(tmp_path / "config.txt") == ("conweave", ("FLOW_INPUT_FILE", 4))
    assert cli.main(["hpcc", str(tmp_path / "config.txt"), "--quiet", "--dialect", "reference"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "config.txt:4: field `FLOW_INPUT_FILE`" in err, err
    assert "ConWeave artifact" in err and "--dialect conweave" in err, err


# The longer copies that `bench/m4_published.py --full` runs (bench/data/m4/README.md): the
# flows kept and the start of the first flow left out, from the published flow files (None
# for a whole scenario: nothing left out).
_BENCH_CUTS = {"demo0": (649, 1_045_267_791), "demo2": (747, 1_032_965_047), "demo4": (748, 1_043_831_949)}


@pytest.mark.parametrize("name", sorted(_BENCH_CUTS))
def test_the_longer_published_copies_agree_with_themselves_and_with_the_test_cuts(name):
    from decimal import Decimal  # lazy: this test alone parses decimal seconds
    bench = _bench()
    kept, next_start = _BENCH_CUTS[name]
    folder = REPO / "bench" / "data" / "m4" / name
    lines = bench.read_text(folder / "flows.txt.gz").split("\n")
    rows = [ln.split() for ln in lines[1:] if ln.strip()]
    assert int(lines[0]) == len(rows) == kept
    flows = {}
    for k, r in enumerate(rows):
        assert int(r[0]) == k and r[3:5] == ["3", "100"], r
        flows[k] = (int(r[1]), int(r[2]), int(r[5]), int(Decimal(r[6]) * 10**9))
    starts = [f[3] for f in flows.values()]
    assert starts == sorted(starts)
    end = next_start if next_start is not None else float("inf")
    assert starts[-1] < end
    fct_text = bench.read_text(folder / "fct_published.txt.gz")
    last = 0
    for line in fct_text.split("\n")[:-1]:
        t = line.split()
        src, dst, size, start = flows[int(t[0])]
        # The fork's address of host n is 0x0b000001 + (n << 8); its line repeats the flow's
        # size and start: a line copied wrong disagrees with its flow.
        assert (int(t[1], 16), int(t[2], 16)) == (0x0B000001 + (src << 8), 0x0B000001 + (dst << 8)), line
        assert (int(t[5]), int(t[6])) == (size, start), line
        finish = int(t[6]) + int(t[7])
        assert last <= finish < end, line  # in the order they finished, all before the cut
        last = finish
    # The test cuts are the first lines of these.
    cut = REPO / "tests" / "data" / "m4" / name
    cut_rows = [ln.split() for ln in (cut / "flows.txt").read_text().split("\n")[1:] if ln.strip()]
    assert 0 < len(cut_rows) <= kept and rows[:len(cut_rows)] == cut_rows
    assert fct_text.startswith((cut / "fct_published_cut.txt").read_text())


# The whole scenarios checked bucket by bucket, with each size bucket's count of flows:
# whole_fattree, 1,000 TIMELY flows on 1,120 nodes as the fork's author committed them with
# the FCT file the fork wrote; whole_train3 and whole_train17, parsimon-eval's eval_train_demo
# 3 (2,000 DCTCP flows on the 46-node tree its log describes) and 17 (2,000 DCQCN flows on its
# published 43-node tree with one core switch). Every standalone FCT the fork's checks the tree.
_WHOLE_BUCKETS = {"whole_fattree": [323, 135, 139, 403],
                  "whole_train3": [14, 112, 707, 1167],
                  "whole_train17": [6, 34, 321, 1639]}


@pytest.mark.parametrize("name", sorted(_WHOLE_BUCKETS))
def test_a_whole_published_scenario_matches_its_fct_file_per_size_bucket(name, tmp_path, monkeypatch):
    from rdmalab.runner import run_hpcc
    bench = _bench()
    fork = bench.read_fct(REPO / "tests" / "data" / "m4" / name / "fct_published.txt.gz")
    config = bench.prepare_whole(name, tmp_path / "run")
    monkeypatch.chdir(config.parent)
    _, fct, _ = run_hpcc(config.name, progress=False)
    ours = bench.read_fct(config.parent / fct)
    assert len(ours) == len(fork) == sum(_WHOLE_BUCKETS[name])  # every flow finished, as in the fork
    rows = bench.compare(ours, fork)
    assert [r["flows"] for r in rows] == _WHOLE_BUCKETS[name]
    for r in rows:
        assert r["standalone_equal"] == r["flows"], r
        assert abs(r["ratio"] - 1) <= 0.10, r
    # The packet trace of no node (trace.txt lists none) is no trace, as in the fork.
    assert not (config.parent / "mix_topology_flows.tr").exists()


# The whole scenarios (tests/data/m4/NAME/README.md): flow file, and the characters of the
# flow and FCT files as published (whole_train3's and whole_train17's were copied from the
# index's text).
_WHOLE = {"whole_fattree": ("flows_test.txt.gz", 35_390, 61_262),
          "whole_tree46": ("flows_test.txt.gz", 69_029, 128_630),
          "whole_train3": ("flows.txt.gz", 68_182, 127_187),
          "whole_train17": ("flows.txt.gz", 68_683, 128_191)}


@pytest.mark.parametrize("name", sorted(_WHOLE))
def test_the_whole_scenarios_fct_file_names_every_flow_of_its_flow_file(name):
    # The FCT file is the one the config names, written for these flows: one line per flow,
    # each with the flow's hosts, size and start, in the order the flows finished.
    from decimal import Decimal  # lazy: this test alone parses decimal seconds
    bench = _bench()
    folder = REPO / "tests" / "data" / "m4" / name
    flow_file, flow_chars, fct_chars = _WHOLE[name]
    text = bench.read_text(folder / flow_file)
    fct_text = bench.read_text(folder / "fct_published.txt.gz")
    assert (len(text), len(fct_text)) == (flow_chars, fct_chars)
    lines = text.split("\n")
    rows = [ln.split() for ln in lines[1:] if ln.strip()]
    assert int(lines[0]) == len(rows)
    flows = {int(r[0]): (int(r[1]), int(r[2]), int(r[5]), int(Decimal(r[6]) * 10**9)) for r in rows}
    fct = [ln.split() for ln in fct_text.split("\n") if ln.strip()]
    assert sorted(int(t[0]) for t in fct) == sorted(flows)
    last = 0
    for t in fct:
        src, dst, size, start = flows[int(t[0])]
        assert (int(t[1], 16), int(t[2], 16)) == (0x0B000001 + (src << 8), 0x0B000001 + (dst << 8)), t
        assert (int(t[5]), int(t[6])) == (size, start), t
        assert last <= int(t[6]) + int(t[7]), t
        last = int(t[6]) + int(t[7])
    config = bench.WHOLE_CONFIG.get(name, "config_test.txt")
    assert bench.config_value(folder / config, "FCT_OUTPUT_FILE") == "fct_topology_flows.txt"
    assert bench.config_value(folder / config, "FLOW_FILE") == flow_file.removesuffix(".gz")
