"""`rdmalab hpcc --dialect simai`: SimAI's config, topology and workload files
(docs/hpcc-dialects.md, "The simai dialect"), and the check against SimAI's published busbw."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from rdmalab.runner import detect_hpcc_dialect, run_hpcc

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "simai" / "ring32"
TOPO = "Rail_Opti_SingleToR_32g_8gps_400Gbps_H100"


def _bench():
    spec = importlib.util.spec_from_file_location("simai_published", REPO / "bench" / "simai_published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_detected_from_a_key_only_simai_reads():
    assert detect_hpcc_dialect(DATA / "SimAI.conf") == ("simai", ("BW_MON_FILE", 58))


def _copy(tmp_path: Path, extra: str = "") -> Path:
    for f in ("SimAI.conf", TOPO, "microAllReduce_8g.txt"):
        shutil.copy(DATA / f, tmp_path / f)
    (tmp_path / "out").mkdir()
    if extra:
        with open(tmp_path / "SimAI.conf", "a") as f:
            f.write(extra)
    return tmp_path


@pytest.mark.parametrize(("extra", "message"), [
    ("\nTOPOLOGY_FILE t.txt\n", "SimAI.conf:66: field `TOPOLOGY_FILE`: not a key of SimAI's ns-3 backend"),
    ("\nFIXED_WIN 100\n", "SimAI.conf:66: field `FIXED_WIN`: a key of the m4 dialect"),
    ("\nNIC_TOTAL_PAUSE_TIME 3\n", "field `NIC_TOTAL_PAUSE_TIME`: a budget of PFC pauses"),
])
def test_refuses_what_it_does_not_model_by_name(tmp_path, monkeypatch, extra, message):
    monkeypatch.chdir(_copy(tmp_path, extra))
    with pytest.raises(ValueError, match=message):
        run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO, workload="microAllReduce_8g.txt")


def test_needs_its_topology_and_workload(tmp_path, monkeypatch):
    monkeypatch.chdir(_copy(tmp_path))
    with pytest.raises(ValueError, match="needs SimAI's topology"):
        run_hpcc("SimAI.conf", progress=False, dialect="simai")


def test_ring_allreduces_match_simai_published_busbw():
    """The first two allreduces of SimAI's tutorial (16 and 32 MiB over 8 GPUs on NVLink):
    busbw within 10 % of the published (bench/simai_published.py runs all six)."""
    bench = _bench()
    rows, _ = bench.run(sizes=2)
    assert [s for s, _ in rows] == [16 * 2**20, 32 * 2**20]
    for size, t in rows:
        ratio = bench.busbw_gib(size, t) / bench.PUBLISHED[size // 2**20]
        assert abs(ratio - 1) <= 0.10, (size, t, ratio)


def test_nvls_allreduces_match_simai_published_busbw():
    """The first two allreduces of SimAI's NVLS case (AS_NVLS_ENABLE=1, NVLink at 1,360 Gb/s,
    AS_SEND_LAT=12): each runs through the NVSwitch as SimAI models NVLS, busbw within 10 %
    of the tutorial's "NVLS" column (bench/simai_published.py --nvls runs all six)."""
    bench = _bench()
    rows, _ = bench.run(sizes=2, nvls=True)
    assert [s for s, _ in rows] == [16 * 2**20, 32 * 2**20]
    for size, t in rows:
        ratio = bench.busbw_gib(size, t) / bench.PUBLISHED_NVLS[size // 2**20]
        assert abs(ratio - 1) <= 0.10, (size, t, ratio)


def _nvls_copy(tmp_path: Path, workload: str, gpu: str = "H100") -> Path:
    shutil.copy(DATA / "SimAI.conf", tmp_path / "SimAI.conf")
    topo = (DATA.parent / "nvls32" / TOPO).read_text().split("\n", 1)
    (tmp_path / TOPO).write_text(topo[0].replace("H100", gpu) + "\n" + topo[1])
    (tmp_path / "w.txt").write_text(workload)
    (tmp_path / "out").mkdir()
    return tmp_path


W_HEAD = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 8 "
          "checkpoints: 0 checkpoint_initiates: 0\n")


def test_nvls_is_simai_choice_on_hopper_only(tmp_path, monkeypatch):
    """SimAI's `get_algo_proto_info` picks NVLS for a tensor-parallel allreduce of 8 ranks on
    H100 or H800 with AS_NVLS_ENABLE=1, a ring otherwise (A100 here); its flows go to and
    from the NVSwitch (node 32), whose FCT rows SimAI writes too."""
    w = W_HEAD + "1\nl -1 1000 ALLREDUCE 1048576 1 NONE 0 1 NONE 0 1\n"
    monkeypatch.setenv("AS_NVLS_ENABLE", "1")
    monkeypatch.setenv("AS_SEND_LAT", "12")
    algos = {}
    for gpu in ("H100", "A100"):
        sub = tmp_path / gpu
        sub.mkdir()
        monkeypatch.chdir(_nvls_copy(sub, w, gpu))
        res, fct, _ = run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO, workload="w.txt")
        algos[gpu] = res.collectives["algorithm"].to_list()
        ends = {(r["src"], r["dst"]) for r in res.flows.iter_rows(named=True)}
        assert any(32 in e for e in ends) == (gpu == "H100"), (gpu, sorted(ends)[:4])
    assert algos == {"H100": ["nvls"], "A100": ["ring"]}


def test_nvls_beside_other_nvlink_traffic_is_refused(tmp_path, monkeypatch):
    """With NVLS the NVSwitch is an endpoint here, so an allgather over the same NVLink
    (which SimAI would forward through it) is refused by name."""
    w = W_HEAD + "1\nl -1 1000 ALLREDUCE 1048576 1 ALLGATHER 1048576 1 NONE 0 1\n"
    monkeypatch.setenv("AS_NVLS_ENABLE", "1")
    monkeypatch.chdir(_nvls_copy(tmp_path, w))
    with pytest.raises(ValueError, match=r"field `AS_NVLS_ENABLE`: .*l\.ig.*NVLS beside other NVLink traffic"):
        run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO, workload="w.txt")


def test_per_layer_file_is_simai_end_to_end_csv(tmp_path, monkeypatch):
    """`ncclFlowModel_EndToEnd.csv` in the working directory, as SimAI's rank 0 writes it: the
    summary first, then a row per layer, SUM and the totals. The tutorial's busbw are this
    file's busbw column (GiB/s): for its first two allreduces, each layer's within 10 % of
    the published, and its total time is the run's last byte plus the update time."""
    from rdmalab.hpcc_simai import FILE_NAME, HEADER, SUMMARY_KEYS
    bench = _bench()
    monkeypatch.chdir(_copy(tmp_path))
    lines = (tmp_path / "microAllReduce_8g.txt").read_text().splitlines()
    (tmp_path / "microAllReduce_8g.txt").write_text("\n".join([lines[0], "2"] + lines[2:4]) + "\n")
    monkeypatch.setenv("AS_SEND_LAT", "2")
    res, _, _ = run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO,
                         workload="microAllReduce_8g.txt")
    rows = (tmp_path / FILE_NAME).read_text().splitlines()
    assert rows[0] == SUMMARY_KEYS and rows[2] == HEADER and rows[5].startswith("SUM,test1,")
    assert rows[6].startswith("total exposed comm,") and len(rows) == 7
    cols = HEADER.split(",")
    end_us = (res.collectives["end_ns"].max() + 1) / 1000
    for mib, row in zip((16, 32), rows[3:5]):
        cells = row.split(",")
        assert len(cells) == len(cols) and cells[:2] == ["embedding_layer", "test1"]
        assert float(cells[2]) == 556.0  # fwd compute, us
        assert float(cells[cols.index("fwd total comm")]) == float(cells[cols.index("fwd exposed comm")])
        busbw = float(cells[cols.index("busbw")])  # the fwd's
        assert abs(busbw / bench.PUBLISHED[mib] - 1) <= 0.10, (mib, busbw)
        assert cells[-1] == f"{end_us:f}"
        assert cells[cols.index("wg total comm")] == "0.000000"
    summary = rows[1].split(", ")
    assert summary[0] == "test1" and summary[-1] == f"{end_us:.0f}"


def test_pxn_over_several_servers_is_refused(tmp_path, monkeypatch):
    """AS_PXN_ENABLE=1 changes SimAI's rings over several servers, which the dialect does not
    model: a data-parallel ring over GPUs 0 and 8 is refused naming it (the tutorial's rings,
    inside one server, run with it: bench/simai_published.py sets it)."""
    w = W_HEAD.replace("all_gpus: 8", "all_gpus: 16") + "1\nl -1 1000 NONE 0 1 NONE 0 1 ALLREDUCE 1048576 1\n"
    monkeypatch.setenv("AS_PXN_ENABLE", "1")
    monkeypatch.chdir(_nvls_copy(tmp_path, w))
    with pytest.raises(ValueError, match=r"field `AS_PXN_ENABLE`: .*l\.wg runs a ring over the servers of GPUs 0 and 8"):
        run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO, workload="w.txt")


def test_nvls_run_is_identical_on_1_2_and_4_threads(tmp_path, monkeypatch):
    """The NVSwitch hosts and their flows give the same files on 1, 2 and 4 threads."""
    w = W_HEAD + "1\nl -1 1000 ALLREDUCE 4194304 1 NONE 0 1 NONE 0 1\n"
    monkeypatch.setenv("AS_NVLS_ENABLE", "1")
    monkeypatch.setenv("AS_SEND_LAT", "12")
    outs = []
    for threads in (1, 2, 4):
        sub = tmp_path / str(threads)
        sub.mkdir()
        monkeypatch.chdir(_nvls_copy(sub, w))
        _, fct, _ = run_hpcc("SimAI.conf", progress=False, threads=threads, dialect="simai", topology=TOPO,
                             workload="w.txt")
        outs.append(((sub / fct).read_bytes(), (sub / "ncclFlowModel_EndToEnd.csv").read_bytes()))
    assert outs[0][0].count(b"\n") == 64 and outs[0] == outs[1] == outs[2]


def _one_allreduce(work, topology, monkeypatch):
    """The tutorial's allreduce, one iteration, on `topology` (a generator's file) in the new
    folder `work`: its time in ns."""
    work.mkdir()
    _copy(work)
    shutil.copy(topology, work / topology.name)
    lines = (work / "microAllReduce_8g.txt").read_text().splitlines()
    (work / "microAllReduce_8g.txt").write_text("\n".join([lines[0], "1", lines[2]]) + "\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("AS_SEND_LAT", "2")
    res, _, _ = run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=topology.name,
                         workload="microAllReduce_8g.txt")
    row = res.collectives.row(0, named=True)
    return row["end_ns"] - row["start_ns"]


def test_gpus_of_a_server_under_one_tor_still_talk_over_nvlink(tmp_path, monkeypatch):
    """SimAI's DCN+ template hangs every GPU of a server under one ToR beside its NVSwitch:
    two equal-cost next hops between two GPUs of a server, of which SimAI's routing keeps the
    NVSwitch (`common.h`, `CalculateRoute`, `via_nvswitch`). The tutorial's 16 MiB allreduce
    over server 0's 8 GPUs then takes the same time as on the rail-optimized file, where
    the GPUs have no common ToR (and at the NIC's 400 Gb/s it would take four times as long),
    and the FCT file's standalone FCTs are those of the NVSwitch path, as SimAI's pairRtt and
    pairBw follow the first path its search finds (the NVSwitch's, listed first)."""
    dcn = "DCN+SingleToR_32g_8gps_400Gbps_H100"
    times, standalone = [], []
    for topo, data in ((TOPO, DATA), (dcn, DATA.parent / "dcn32")):
        work = tmp_path / topo.replace("+", "")
        times.append(_one_allreduce(work, data / topo, monkeypatch))
        standalone.append(sorted(line.split()[7] for line in (work / "out" / "llama_hpn7_fct.txt").open()))
    assert times[1] == times[0], times
    assert standalone[1] == standalone[0]


def test_qps_of_a_gpu_spread_over_its_two_nvswitches(tmp_path, monkeypatch):
    """With two NVSwitches per server (the generator's `-nsps 2`) a GPU has two equal next
    hops to a GPU of its server, and SimAI puts each QP on one of them by the QP's hash
    (`rdma-hw.cc`, `GetNicIdxOfQp`): the eight channels of the tutorial's 16 MiB allreduce
    share two NVLinks per GPU, not one, and it ends well before the one-NVSwitch run."""
    times = []
    for data in (DATA, DATA.parent / "nsps2"):
        times.append(_one_allreduce(tmp_path / data.name, data / TOPO, monkeypatch))
    assert times[1] < 0.8 * times[0], times


def test_an_output_folder_that_does_not_exist_is_refused_before_the_run(tmp_path, monkeypatch):
    """SimAI.conf writes its outputs under `out/`: without that folder the run is refused
    before it starts, naming the key and its line, not after it has run."""
    work = _copy(tmp_path)
    (work / "out").rmdir()
    monkeypatch.chdir(work)
    with pytest.raises(ValueError, match=r"SimAI.conf:9: field `FCT_OUTPUT_FILE`: the folder of "
                                         r"out/llama_hpn7_fct.txt does not exist"):
        run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO, workload="microAllReduce_8g.txt")


def test_a_config_without_simai_only_keys_is_simai_when_given_its_topology_and_workload(tmp_path, monkeypatch):
    """SimAI.conf without its monitor keys has no key only SimAI reads; given SimAI's -n and -w
    (which only the simai dialect takes) it is run as SimAI's, not refused as the reference's."""
    work = _copy(tmp_path)
    simai_only = ("BW_MON_FILE", "RATE_MON_FILE", "CNP_MON_FILE", "MON_START", "MON_END", "QP_MON_INTERVAL",
                  "BW_MON_INTERVAL", "QLEN_MON_INTERVAL", "NIC_TOTAL_PAUSE_TIME")
    lines = (work / "SimAI.conf").read_text().splitlines()
    (work / "SimAI.conf").write_text("\n".join(l for l in lines if l.split()[:1] not in [[k] for k in simai_only]))
    lines = (work / "microAllReduce_8g.txt").read_text().splitlines()
    (work / "microAllReduce_8g.txt").write_text("\n".join([lines[0], "1", lines[2]]) + "\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("AS_SEND_LAT", "2")
    assert detect_hpcc_dialect("SimAI.conf") == ("reference", None)
    res, _, _ = run_hpcc("SimAI.conf", progress=False, topology=TOPO, workload="microAllReduce_8g.txt")
    assert res.collectives.height == 1
