"""SimAI's per-layer file, `ncclFlowModel_EndToEnd.csv`, from a run of the simai dialect.

SimAI's ns-3 run (aliyun/SimAI at cef83f9) has rank 0 write it to the working directory:
`RESULT_PATH "./ncclFlowModel_"` and run name `"test1"` (`network_frontend/ns3/AstraSimNetwork.cc`
lines 44 and 295-318), file `EndToEnd.csv` (`workload/Workload.cc` line 71), rows from
`Layer::report` (`workload/Layer.cc` lines 337-538) and `Layer::compute_busbw` (lines
1037-1051). docs/hpcc-dialects.md, "The per-layer file", gives each column.

The times come from `res.collectives` (each communication's first post and last byte over all
its ranks), where SimAI's are rank 0's: a communication is issued the send latency before its
first post, and is over its `wg_update` time after its last byte (SimAI adds that time to
every communication's finish, `Layer.cc` lines 117-120, 160-163, 203-206).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

#: What SimAI names the file (RESULT_PATH + "EndToEnd.csv"), in the working directory.
FILE_NAME = "ncclFlowModel_EndToEnd.csv"
#: SimAI's run name (the `Sys` constructor's argument in AstraSimNetwork.cc).
RUN_NAME = "test1"
#: The columns of a layer's row (`Layer.cc` line 423).
HEADER = ("layer_name," + RUN_NAME + ",fwd compute,wg compute,ig compute,fwd exposed comm,wg exposed comm,"
          "ig exposed comm,fwd total comm,algbw,busbw,wg total comm,algbw,busbw,ig total comm,algbw,busbw,"
          "workload finished at")
#: The summary's keys, which SimAI writes first (`Layer.cc` line 515, `CSVWriter::write_res`).
SUMMARY_KEYS = ("File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, "
                "Expose_PP_comm, bubble time, total comp, total exposed comm, Total time")
PHASES = ("fwd", "ig", "wg")


@dataclass
class _Comm:
    kind: str       # ALLREDUCE, ..., or NONE
    group: str      # TP, DP, EP or DP_EP
    size: int


@dataclass
class _Layer:
    name: str
    compute: dict[str, int]   # ns per phase
    comm: dict[str, _Comm]
    update: int               # ns, wg_update (SimAI's update time of all three phases)


def _read_workload(path: str | Path) -> tuple[dict[str, int], str, list[_Layer]]:
    """The header's numbers, the policy and the layers of a workload the run has read
    (the engine's reader checked it: `formats::simai`)."""
    lines = [ln for ln in Path(path).read_text().splitlines() if ln.strip()]
    head = lines[0].split()
    keys = {head[i].rstrip(":"): head[i + 1] for i in range(1, len(head) - 1, 2)}
    numbers = {k: int(v) for k, v in keys.items() if v.lstrip("-").isdigit()}
    layers = []
    for row in lines[2:2 + int(lines[1].split()[0])]:
        f = row.split()
        comm = {}
        for phase, (t, s) in zip(PHASES, ((f[3], f[4]), (f[6], f[7]), (f[9], f[10]))):
            base, group = t, "DP" if phase == "wg" else "TP"
            for suffix, g in (("_DP_EP", "DP_EP"), ("_EP", "EP")):
                if t.endswith(suffix):
                    base, group = t[: -len(suffix)], g
                    break
            comm[phase] = _Comm(base, group, int(s))
        layers.append(_Layer(f[0], {"fwd": int(f[2]), "ig": int(f[5]), "wg": int(f[8])}, comm, int(f[11])))
    return numbers, head[0], layers


def _group_size(numbers: dict[str, int], group: str) -> int:
    tp, ep = numbers.get("model_parallel_NPU_group", 1), numbers.get("ep", 1)
    dp = numbers["all_gpus"] // max(tp, 1)
    return {"TP": tp, "DP": dp, "EP": ep, "DP_EP": dp // max(ep, 1)}[group]


def _f(x: float) -> str:
    """C++'s `std::to_string` of a double (`%f`); 0/0 prints as glibc prints x86's NaN."""
    if math.isnan(x):
        return "-nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:f}"


def _div(a: float, b: float) -> float:
    """IEEE division, as C++'s: x/0 is ±inf, 0/0 NaN."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def _bw(kind: str, n: int, size: int, total_ns: float) -> tuple[float, float]:
    """`Layer::compute_busbw`: algbw and busbw in GiB/s (SimAI's GBps is 1/2^30)."""
    algbw = _div(size, total_ns / 1000.0) * 1_000_000 / 2**30
    if kind == "ALLREDUCE":
        return algbw, algbw * 2 * (n - 1) / n
    if kind in ("ALLGATHER", "REDUCESCATTER", "ALLTOALL"):
        return algbw, algbw * (n - 1) / n
    return algbw, 0.0


def end_to_end(results, workload: str | Path, send_latency_ns: int) -> str:
    """The text of SimAI's `ncclFlowModel_EndToEnd.csv` for a simai-dialect run of
    `workload` (its `res.collectives`, in issue order) with `send_latency_ns`."""
    numbers, policy, layers = _read_workload(workload)
    moves = []  # (layer, phase) of each communication that moves bytes, in issue order
    order = [(i, "fwd") for i in range(len(layers))]
    order += [(i, p) for i in reversed(range(len(layers))) for p in ("ig", "wg")]
    for i, phase in order:
        c = layers[i].comm[phase]
        if phase == "fwd" and policy == "HYBRID_TRANSFORMER_FWD_IN_BCKWD" and 0 < c.size < 4096:
            c.size = 4096  # SimAI raises it before the issue (Workload.cc, the fwd_in_bckwd loop)
        if c.kind != "NONE" and c.size > 0 and _group_size(numbers, c.group) >= 2:
            moves.append((i, phase))
    rows = list(results.collectives.iter_rows(named=True))
    names = [r["name"] for r in rows]
    want, seen = [], {}  # a layer name repeated per transformer layer: `#k`, its k-th row
    for i, p in moves:
        key = f"{layers[i].name}.{p}"
        want.append(f"{key}#{seen.get(key, 0)}")
        seen[key] = seen.get(key, 0) + 1
    if names != want:
        raise ValueError(f"{workload}: the run's communications {names[:5]}... are not the workload's {want[:5]}...")
    total = {}    # (layer, phase) -> ns from issue to finish
    finish = {}   # (layer, phase) -> ns
    issue = {}
    for (i, p), r in zip(moves, rows):
        issue[i, p] = r["start_ns"] - send_latency_ns
        finish[i, p] = r["end_ns"] + layers[i].update
        total[i, p] = finish[i, p] - issue[i, p]
    end_ns = max(finish.values(), default=0.0)
    out = [HEADER]
    sums = [0.0] * 9
    dp = dp_ep = tp_exp = ep_exp = bubble = 0.0
    for i, layer in enumerate(layers):
        tot = {p: total.get((i, p), 0.0) for p in PHASES}
        exposed = {"fwd": tot["fwd"], "ig": tot["ig"], "wg": 0.0}
        if i == 0 and (0, "wg") in total:
            # The run's end waits for layer 0's weight gradient from the tick after its issue
            # (`check_for_sim_end` -> `is_weight_grad_comm_finished_blocking`).
            exposed["wg"] = finish[0, "wg"] - (issue[0, "wg"] + 1)
        comp = {p: float(layer.compute[p]) for p in PHASES}
        if layer.name != "embedding_layer":
            bubble += (exposed["fwd"] + comp["fwd"] + comp["wg"] + comp["ig"] + exposed["ig"]) / 1000
        if layer.comm["wg"].group == "DP_EP":
            dp_ep += exposed["wg"] / 1000
        else:
            dp += exposed["wg"] / 1000
        if layer.comm["fwd"].group == "EP":
            ep_exp += (exposed["fwd"] + exposed["ig"]) / 1000
        else:
            tp_exp += (exposed["fwd"] + exposed["ig"]) / 1000
        vals = [comp["fwd"], comp["wg"], comp["ig"], exposed["fwd"], exposed["wg"], exposed["ig"]]
        cells = [_f(v / 1000) for v in vals]
        for p in ("fwd", "wg", "ig"):
            c = layer.comm[p]
            algbw, busbw = _bw(c.kind, _group_size(numbers, c.group), c.size, tot[p])
            cells += [_f(tot[p] / 1000), _f(algbw), _f(busbw)]
        cells.append(_f(end_ns / 1000))
        out.append(",".join([layer.name, RUN_NAME] + cells))
        for k, v in enumerate(vals + [tot["fwd"], tot["wg"], tot["ig"]]):
            sums[k] += v / 1000
    total_compute = sums[0] + sums[1] + sums[2]
    total_exposed = end_ns / 1000 - total_compute
    out.append(",".join(["SUM", RUN_NAME] + [_f(v) for v in sums[:7]] + ["NONE", "NONE", _f(sums[7]), "NONE", "NONE",
                                                                         _f(sums[8]), "NONE", "NONE"]))
    total_time = total_compute + total_exposed
    out.append(f"total exposed comm,{_f(total_exposed)},total comp,{_f(total_compute)},total time,{_f(total_time)}")
    pp = numbers.get("pp", 1)
    bubble *= (pp - 1) / (numbers.get("ga", 1) * numbers.get("vpp", 1))
    # Expose_PP_comm is 0: SimAI multiplies it by 1 - pp_overlap_ratio, 1 by default and not
    # set by the ns-3 frontend's options (system/AstraParamParse.hh line 60).

    def cell(v: float) -> str:
        pct = f"{v / total_time * 100:.2f}%" if total_time else "-nan%"
        return f"{v:.0f} ({pct})"

    summary = ", ".join([RUN_NAME] + [cell(v) for v in (dp, dp_ep, tp_exp, ep_exp, 0.0, bubble, total_compute,
                                                         total_exposed)] + [f"{total_time:.0f}"])
    return SUMMARY_KEYS + "\n" + summary + "\n" + "\n".join(out) + "\n"


def write_end_to_end(results, workload: str | Path, send_latency_ns: int, folder: str | Path = ".") -> str:
    """Writes `end_to_end` to `folder/ncclFlowModel_EndToEnd.csv` (SimAI writes it to its
    working directory); returns the path."""
    path = str(Path(folder) / FILE_NAME)
    Path(path).write_text(end_to_end(results, workload, send_latency_ns))
    return path
