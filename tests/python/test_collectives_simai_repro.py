"""`rdmalab repro run collectives-simai --quick` (docs/collectives.md): one
iteration of AICB's Llama-7B TP2 SimAI workload, cut down, on 16 GPUs. The iteration's
communications, cut out of the flows, are held against ring closed forms worked out here by
hand, and the iteration against its chain of compute delays."""

from __future__ import annotations

import pytest

from rdmalab.cli import main
from rdmalab.experiments.repro.collectives_simai import runs_of
from rdmalab.experiments.store import Store

RATE, DELAY = 400e9, 1000.0      # the quick fabric's links: 400 Gb/s, 1 us
HDR, ACK = 48, 60


def tx_ns(nbytes: float) -> float:
    return nbytes * 8 / RATE * 1e9


def test_simai_quick_iteration_against_closed_forms(tmp_path, capsys):
    out = tmp_path / "simai"
    assert main(["repro", "run", "collectives-simai", "--quick", "--out", str(out), "--quiet", "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "| 16 | server | wg | DP | 1 |" in text and (out / "figures" / "simai_iteration.png").is_file()
    by = {a["placement"]: a for a, _ in runs_of(Store(out), Store(out).runs())}
    assert set(by) == {"server", "leaf"}
    a = by["server"]
    ops = {(o.name, o.phase): o for o in a["ops"]}
    # 17 communications: forward grad_norm's allgather, then 11 allreduces (embedding, attention,
    # mlp, embedding_norm, 3 cross-entropy, 4 optimizer); backward mlp, attention, embedding and
    # layernorm's input-gradient allreduces; last grad_norm's weight-gradient reduce-scatter.
    assert len(a["ops"]) == 17 and a["ops"][-1].kind == "reduce_scatter" and not a["ops"][-1].blocking
    # optimizer1: an allreduce of 4 bytes (SimAI sends it as 4096) over a TP pair, two GPUs of
    # one server on rails 2 apart, so 4 links through a spine. Two ring steps of 2048 bytes,
    # one packet each: serialised with the returned ACK on the uplink, 3 store-and-forwards, 4
    # delays; an ACK between the steps; the last step's ACK back over 4 links.
    hop = tx_ns(2048 + HDR + ACK) + 3 * tx_ns(2048 + HDR) + 4 * DELAY
    t = 2 * hop + tx_ns(ACK) + 4 * (tx_ns(ACK) + DELAY)
    for i in (1, 2, 3, 4):
        assert ops[(f"optimizer{i}", "fwd")].time_ns == pytest.approx(t, rel=1e-3)
    # The data-parallel reduce-scatter (8 ranks, 6,596,608 bytes: 2 loops of 412,288-byte
    # pieces of 101 packets) runs last, alone. From its last rank's join it needs at least its
    # bandwidth bound, 7 steps of size/8 on the uplink, 202 packets of up to 4096 bytes each
    # with its header and a returned ACK; and at most its two loops one after the other, each
    # a chain of 7 steps over 4 links (through a spine), then the last ACK's way back.
    rs = ops[("grad_norm", "wg")]
    bound = 7 * tx_ns(6596608 // 8 + 202 * (HDR + ACK))
    step = tx_ns(412288 + 101 * (HDR + ACK)) + 3 * tx_ns(4096 + HDR) + 4 * DELAY
    serial = 2 * (7 * step + 6 * tx_ns(ACK)) + 4 * (tx_ns(ACK) + DELAY)
    assert bound < rs.time_ns < serial
    # The iteration: never shorter than its chain of compute delays with each communication
    # at its idle closed form, and longer than the compute alone by at least the last one.
    assert a["iteration_ns"] >= a["idle_ns"] >= a["compute_ns"] + bound
    # SimAI's placement puts a TP pair in one server, on two rails: with no NVLink its bytes
    # cross the spines side by side, where ECMP puts some of them on one link, and the
    # multi-loop TP allreduces fall well below their bound. With each pair under one rail
    # leaf instead, nothing shares a link and the TP communications take less time.
    assert ops[("layernorm", "ig")].time_ns > 1.5 * a["closed"][a["ops"].index(ops[("layernorm", "ig")])]
    tp = {k: sum(o.time_ns for o in v["ops"] if o.group == "TP") for k, v in by.items()}
    assert tp["leaf"] < 0.8 * tp["server"]
