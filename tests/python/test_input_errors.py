"""Every error names the file, the line and the full field, whichever way the
scenario reaches the engine (a file, TOML text, a `Scenario` read from TOML, a dict)."""

import re

import pytest

import rdmalab
from rdmalab import cli

BASE = """seed = 1
[topology]
kind = "star"
hosts = 2
[[traffic]]
kind = "flows"
flows = [{src = 0, dst = 1, size = 1000}]
"""


def error_of(tmp_path, text: str) -> str:
    """The ValueError that running `text` as the file s.toml gives."""
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as e:
        rdmalab.run(path, progress=False)
    return str(e.value)


def line_of(text: str, needle: str) -> int:
    return 1 + text[: text.index(needle)].count("\n")


@pytest.mark.parametrize("field", ["queue_sample_interval", "rate_sample_interval", "link_sample_interval"])
def test_a_zero_sample_interval_names_file_line_and_field(tmp_path, field):
    text = BASE + f'[fabric]\n{field} = "0ns"\n'
    e = error_of(tmp_path, text)
    assert re.search(rf"s\.toml:{line_of(text, field)}: field `fabric\.{field}`: must be positive", e), e


def test_threads_zero_and_auto(tmp_path):
    e = error_of(tmp_path, "threads = 0\n" + BASE)
    assert re.search(r"s\.toml:1: field `threads`: 0: must be a count", e), e
    e = error_of(tmp_path, 'threads = "many"\n' + BASE)
    assert re.search(r"s\.toml:1: field `threads`: .*\"auto\"", e), e
    path = tmp_path / "auto.toml"
    path.write_text('threads = "auto"\n' + BASE)
    res = rdmalab.run(path, progress=False)
    assert len(res.flows) == 1 and "--threads 1" in res.extra["engine"]  # a star is one partition


def test_trace_caps_name_the_trace_table(tmp_path):
    text = BASE + "[trace]\nmax_bytes = 1\n"
    e = error_of(tmp_path, text)
    assert re.search(rf"s\.toml:{line_of(text, 'max_bytes')}: field `trace\.max_bytes`: the trace would take", e), e
    text = BASE + "[trace]\nmax_bytes = 1000000000000000000000000000000\n"
    e = error_of(tmp_path, text)
    assert re.search(rf"s\.toml:{line_of(text, 'max_bytes')}: field `trace\.max_bytes`", e), e


def test_a_list_of_three_for_a_range_says_what_it_takes(tmp_path):
    text = BASE.replace("seed = 1", 'seed = 1\nstop_time = "10us"') + "[[app]]\nhost = 0\ndst = 1\nwr_num = 1\nsize = [1, 2, 3]\n"
    e = error_of(tmp_path, text)
    assert "untagged" not in e and "[lo, hi]" in e, e
    assert re.search(rf"s\.toml:{line_of(text, 'size = [')}: field `app\[0\]\.size`", e), e


def test_threads_on_the_command_line(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    with pytest.raises(SystemExit) as e:
        cli.main(["run", str(path), "--threads", "abc"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "expected a thread count of at least 1 or 'auto', got 'abc'" in err and "_threads" not in err, err


def test_from_toml_reads_back_to_toml_and_still_reads_files(tmp_path, monkeypatch):
    # The README: `sc.to_toml()` is the text `Scenario.from_toml` reads back.
    sc = rdmalab.Scenario.fat_tree(4).incast(senders=[4, 8], receiver=0, size=10_000).with_seed(3)
    assert rdmalab.Scenario.from_toml(sc.to_toml()).spec == sc.spec
    # A path, as a Path or a string, is still a file (even one whose name has an `=`).
    path = tmp_path / "a=b.toml"
    sc.to_toml(path)
    assert rdmalab.Scenario.from_toml(path).spec == sc.spec
    assert rdmalab.Scenario.from_toml(str(path)).spec == sc.spec
    monkeypatch.chdir(tmp_path)
    assert rdmalab.Scenario.from_toml("a=b.toml").spec == sc.spec
    with pytest.raises(FileNotFoundError):
        rdmalab.Scenario.from_toml("missing.toml")


def test_run_takes_a_dict_toml_text_or_a_scenario_read_from_toml(tmp_path):
    spec = {"topology": {"kind": "star", "hosts": 2}, "traffic": [{"kind": "flows", "flows": [
        {"src": 0, "dst": 1, "size": 1000}]}]}
    assert len(rdmalab.run(spec, progress=False).flows) == 1
    assert len(rdmalab.run(BASE, progress=False).flows) == 1
    with pytest.raises(TypeError, match="run\\(\\) takes a Scenario, a dict"):
        rdmalab.run(42, progress=False)
    with pytest.raises(TypeError, match="Scenario\\(\\) takes the scenario as a dict"):
        rdmalab.Scenario("scenario.toml")
    # TOML text: its errors name the string and the line.
    bad = 'stop_time = "soon"\n' + BASE
    with pytest.raises(ValueError, match=r"^<toml string>:1: field `stop_time`"):
        rdmalab.run(bad, progress=False)
    # A scenario read from a file keeps the file's lines until a builder changes it.
    text = BASE + '[fabric]\nqueue_sample_interval = "0ns"\n'
    path = tmp_path / "read.toml"
    path.write_text(text)
    sc = rdmalab.Scenario.from_toml(path)
    with pytest.raises(ValueError, match=rf"read\.toml:{line_of(text, 'queue_sample')}: field `fabric\.queue"):
        rdmalab.run(sc, progress=False)
    with pytest.raises(ValueError, match=r"<python scenario>: field `fabric\.queue_sample_interval`"):
        rdmalab.run(sc.with_seed(2), progress=False)


# Keys that would do nothing in the run as configured: refused at their line from a file, by
# their full field from a scenario built in Python.
@pytest.mark.parametrize("extra, field, needle, words", [
    ('[fabric]\nqp_cache_miss_penalty = "1us"\n', "fabric.qp_cache_miss_penalty", "qp_cache_miss",
     "needs `qp_cache_entries`"),
    ('[fabric]\nlink_layer = "infiniband"\n[fabric.pfc_pause]\nquanta = 1000\n', "fabric.pfc_pause",
     "[fabric.pfc_pause]", "credit-based flow control"),
    ('[fabric]\nlink_layer = "infiniband"\n[fabric.pfc_watchdog]\ndetection_time = "1ms"\n', "fabric.pfc_watchdog",
     "[fabric.pfc_watchdog]", "credit-based flow control"),
    ('[fabric]\nlossless = false\n[fabric.pfc_watchdog]\ndetection_time = "1ms"\n', "fabric.pfc_watchdog",
     "[fabric.pfc_watchdog]", "PFC is off"),
    ('[fabric]\nlossless = false\n[fabric.pfc_pause]\nquanta = 1000\n', "fabric.pfc_pause", "[fabric.pfc_pause]",
     "PFC is off"),
    ('[fabric]\nlossless = false\n[[fabric.classes]]\npg = 3\npfc = false\n[fabric.pfc_watchdog]\ndetection_time = "1ms"\n',
     "fabric.pfc_watchdog", "[fabric.pfc_watchdog]", "PFC is off on every class"),
    ('[fabric]\nlossless = false\n[fabric.pfc_pause]\nquanta = 1000\n[[fabric.classes]]\npg = 3\npfc = false\n',
     "fabric.pfc_pause", "[fabric.pfc_pause]", "PFC is off on every class"),
    ('[fabric]\nloss_recovery = "irn"\n[rnic]\nrecv_queue_depth = 4\n', "rnic.recv_queue_depth", "recv_queue",
     "go-back-N only"),
])
def test_a_key_with_nothing_to_act_on_is_refused_by_file_line_and_full_field(tmp_path, extra, field, needle, words):
    text = BASE + extra
    e = error_of(tmp_path, text)
    assert e.startswith(f"{tmp_path / 's.toml'}:{line_of(text, needle)}: field `{field}`: ") and words in e, e
    path = tmp_path / "read.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as built:
        rdmalab.run(rdmalab.Scenario.from_toml(path).with_seed(2), progress=False)
    assert str(built.value).startswith(f"<python scenario>: field `{field}`: ") and words in str(built.value)


def test_a_miss_penalty_without_a_qp_cache_is_refused():
    sc = rdmalab.Scenario.star(3).flow(1, 0, 20000).with_fabric(qp_cache_miss_penalty="1us")
    with pytest.raises(ValueError, match=r"^<python scenario>: field `fabric\.qp_cache_miss_penalty`: needs"):
        rdmalab.run(sc, progress=False)


def test_an_engine_check_names_the_python_scenario_and_the_field_like_a_file(tmp_path):
    # The parallel engine's own check (a zero-delay link on a cut between partitions) runs
    # after parsing: from a file it names the file's line, from Python the scenario's field.
    text = 'threads = 2\n[topology]\nkind = "fat_tree"\nk = 4\ndelay = "0ns"\n' \
           '[[traffic]]\nkind = "flows"\nflows = [{src = 1, dst = 0, size = 20000}]\n'
    e = error_of(tmp_path, text)
    assert re.search(r"s\.toml:1: field `threads`: a link of zero delay joins two partitions", e), e
    sc = rdmalab.Scenario.fat_tree(4, delay="0ns").flow(1, 0, 20000).with_threads(2)
    with pytest.raises(ValueError, match=r"^<python scenario>: field `threads`: a link of zero delay joins two"):
        rdmalab.run(sc, progress=False)


ZERO_DELAY = '[topology]\nkind = "fat_tree"\nk = 4\ndelay = "0ns"\n' \
             '[[traffic]]\nkind = "flows"\nflows = [{src = 1, dst = 0, size = 20000}]\n'
REFUSED = "a link of zero delay joins two partitions"


def test_a_refused_threads_argument_names_the_argument_and_the_scenario(tmp_path):
    # The count is the caller's, not a field of the scenario: the error says so, and which
    # scenario's links refuse it.
    path = tmp_path / "s.toml"
    path.write_text(ZERO_DELAY)
    for scenario, name in ((path, str(path)), (ZERO_DELAY, "<toml string>"),
                           (rdmalab.Scenario.from_toml(path), str(path)),
                           (rdmalab.Scenario.fat_tree(4, delay="0ns").flow(1, 0, 20000), "<python scenario>")):
        with pytest.raises(ValueError) as e:
            rdmalab.run(scenario, progress=False, threads=2)
        assert str(e.value).startswith(f"{name}: argument threads=2: {REFUSED}"), e.value
        assert "field `threads`" not in str(e.value) and "scenario: threads" not in str(e.value)
    # The argument overrides the scenario's own count, and is named instead of it.
    path.write_text("threads = 4\n" + ZERO_DELAY)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: argument threads=2: {REFUSED}"):
        rdmalab.run(path, progress=False, threads=2)


def test_a_refused_threads_option_names_the_option_and_the_file(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(ZERO_DELAY)
    assert cli.main(["run", str(path), "--threads", "2", "--out", str(tmp_path / "out"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert f"rdmalab: error: {path}: --threads 2: {REFUSED}" in err, err
    assert "field `threads`" not in err and "scenario: threads" not in err
