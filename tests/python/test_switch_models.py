"""Egress arbitration and switch buffer models from Python: `with_fabric(egress_arbitration=..., buffer_model=...,
port_buffer_kb=...)` writes the same scenario as the TOML keys, runs, and bad values name
their field. The physics is checked in crates/rdmalab/tests/it/switch_models.rs."""

import pytest

from rdmalab import Scenario, run

TOML = """
stop_time = "500us"

[topology]
kind = "star"
hosts = 5

[[traffic]]
kind = "incast"
senders = [1, 2, 3, 4]
receiver = 0
size = 1000000

[fabric]
cc = "none"
egress_arbitration = "input_fair"
buffer_model = "per_port"
port_buffer_kb = 64
"""


def built() -> Scenario:
    return (Scenario.star(5).incast([1, 2, 3, 4], 0, 1_000_000)
            .with_fabric(cc="none", egress_arbitration="input_fair", buffer_model="per_port", port_buffer_kb=64)
            .with_stop_time("500us"))


def test_python_api_mirrors_the_toml(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TOML)
    from_toml, from_api = Scenario.from_toml(path), built()
    assert from_api.spec["fabric"] == from_toml.spec["fabric"]
    a, b = run(from_toml, progress=False), run(from_api, progress=False)
    assert a.flows.equals(b.flows) and a.counters["events"] == b.counters["events"]
    # Lossless per-port buffers pause the four inputs and lose nothing.
    assert a.counters["drops"] == 0 and a.counters["pauses"] >= 4


@pytest.mark.parametrize("settings, field", [
    ({"egress_arbitration": "round_robin"}, "fabric.egress_arbitration"),
    ({"buffer_model": "static"}, "fabric.buffer_model"),
    ({"port_buffer_kb": 64}, "fabric.port_buffer_kb"),
    ({"buffer_model": "per_port", "port_buffer_kb": -1}, "fabric.port_buffer_kb"),
    ({"dt_alpha": 0.5}, "fabric.dt_alpha"),
    ({"buffer_model": "egress_dynamic", "dt_alpha": 0}, "fabric.dt_alpha"),
])
def test_bad_settings_name_their_field(settings, field):
    sc = Scenario.star(3).flow(1, 0, 1000).with_fabric(**settings)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        run(sc, progress=False)
