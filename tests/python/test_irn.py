"""IRN's loss recovery from Python: `with_fabric(loss_recovery="irn", irn={...}, cnp_on_ooo=...)`
writes the same scenario as the TOML keys, runs, reports the per-flow recovery columns and
the summary's fabric drops apart from receiver discards; bad values name their field. The
physics is checked in crates/rdmalab/tests/it/irn.rs."""

import pytest

from rdmalab import Scenario, run

TOML = """
seed = 3

[topology]
kind = "star"
hosts = 2

[[traffic]]
kind = "flows"
flows = [{ src = 0, dst = 1, size = 1000000 }]

[fabric]
cc = "dcqcn"
lossless = false
error_rate = 0.001
loss_recovery = "irn"
cnp_on_ooo = true

[fabric.irn]
rto_low = "100us"
rto_high = "320us"
low_packets = 3
bdp = 100000
"""

COLUMNS = ("retx_packets", "nacks", "timeouts", "ooo_packets", "cnps_ecn", "cnps_ooo")


def built() -> Scenario:
    irn = {"rto_low": "100us", "rto_high": "320us", "low_packets": 3, "bdp": 100000}
    return (Scenario.star(2).flow(0, 1, 1_000_000).with_seed(3)
            .with_fabric(cc="dcqcn", lossless=False, error_rate=0.001, loss_recovery="irn", cnp_on_ooo=True,
                         irn=irn))


def test_python_api_mirrors_the_toml(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TOML)
    from_toml, from_api = Scenario.from_toml(path), built()
    assert from_api.spec["fabric"] == from_toml.spec["fabric"]
    a, b = run(from_toml, progress=False), run(from_api, progress=False)
    assert a.flows.equals(b.flows)
    f, c = a.flows.row(0, named=True), a.counters
    # A lossy link: IRN resends only the holes, the receiver holds what follows them.
    assert c["link_error_losses"] > 0 and f["retx_packets"] >= 1 and f["ooo_packets"] >= 1
    # The run counts NACKs sent, the flow those its sender heard: a lossy link may lose some.
    exact = [k for k in COLUMNS if k != "nacks"]
    assert [sum(a.flows[k]) for k in exact] == [c[k] for k in exact]
    assert 0 < sum(a.flows["nacks"]) <= c["nacks"]
    assert c["cnps_ooo"] > 0, "cnp_on_ooo flags the NACK of every held packet"
    text = a.summary()
    assert "dropped in the fabric" in text and "discarded by receivers" in text
    assert f"{c['retx_packets']:,} packets resent" in text


def test_go_back_n_discards_are_not_fabric_drops():
    # A lossy link under go-back-N: the receiver discards what follows each hole, counted
    # apart from what the fabric dropped (at most one packet's payload per loss).
    res = run(Scenario.star(2).flow(0, 1, 1_000_000).with_seed(3)
              .with_fabric(cc="none", lossless=False, error_rate=0.001), progress=False)
    c = res.counters
    assert c["payload_bytes_discarded"] > 0 and c["ooo_packets"] > 0
    assert c["payload_bytes_dropped"] <= c["link_error_losses"] * 1000
    assert c["payload_bytes_sent"] == (c["payload_bytes_delivered"] + c["payload_bytes_dropped"]
                                       + c["payload_bytes_discarded"] + c["payload_bytes_in_flight"])


@pytest.mark.parametrize("settings, field", [
    ({"loss_recovery": "sack"}, "fabric.loss_recovery"),
    ({"irn": {"bdp": 100000}}, "fabric.irn"),
    ({"loss_recovery": "irn", "irn": {"low_packets": 0}}, "fabric.irn.low_packets"),
    ({"loss_recovery": "irn", "irn": {"rto_low": "1ms", "rto_high": "1us"}}, "fabric.irn.rto_high"),
    ({"loss_recovery": "irn", "irn": {"colour": 1}}, "colour"),
])
def test_bad_settings_name_their_field(settings, field):
    sc = Scenario.star(3).flow(1, 0, 1000).with_fabric(**settings)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        run(sc, progress=False)
