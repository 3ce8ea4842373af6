"""Python builders for everything a scenario file can say: the test asks the
engine's own parser which keys each section takes (the `expected one of ...` of an unknown
key), so a key added to the TOML later is checked here without editing this file, and finds
for each a `Scenario` builder with the same name that takes it."""

import inspect
import json
import re

import pytest

from rdmalab import Scenario, _core

STAR = {"topology": {"kind": "star", "hosts": 2}}


def fields(spec: dict) -> list[str]:
    """The keys the parser expects where `spec` puts the unknown key `zzz`."""
    with pytest.raises(ValueError) as e:
        _core.Simulation.from_json(json.dumps(spec), ".")
    text = str(e.value)
    m = re.search(r"expected (?:one of )?(.*)$", text)
    assert m and "zzz" in text, text
    return re.findall(r"`([^`]+)`", m.group(1))


def builder(name: str):
    """The builder of a section or key: `name`, `with_name`, or `name` less a plural s."""
    for cand in (name, f"with_{name}", name[:-1] if name.endswith("s") else None):
        if cand and hasattr(Scenario, cand):
            return getattr(Scenario, cand)
    return None


def takes(fn, key: str) -> bool:
    """`fn` has a parameter `key`, or takes **kwargs and its docstring names `key`."""
    params = inspect.signature(fn).parameters
    if key in params:
        return True
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return var_kw and re.search(rf"\b{re.escape(key)}\b", inspect.getdoc(fn) or "") is not None


TOP = fields({**STAR, "zzz": 1})


def test_the_schema_probe_sees_the_sections():
    assert {"seed", "topology", "traffic", "fabric", "trace", "links", "events", "threads"} <= set(TOP)


@pytest.mark.parametrize("key", [k for k in TOP if k not in ("topology", "traffic")])
def test_every_top_level_key_has_a_builder_of_its_name(key):
    assert builder(key) is not None, f"no Scenario builder for `{key}` (want `{key}` or `with_{key}`)"


SECTIONS = {  # section -> a spec with `zzz` in it
    "fabric": {**STAR, "fabric": {"zzz": 1}},
    "trace": {**STAR, "trace": {"zzz": 1}},
    "links": {**STAR, "links": [{"a": 0, "b": 2, "zzz": 1}]},
    "events": {**STAR, "events": [{"kind": "link_down", "at": "1us", "a": 0, "b": 2, "zzz": 1}]},
    "app": {**STAR, "app": [{"zzz": 1}]},
    "host": {**STAR, "host": {"zzz": 1}},
    "drum": {**STAR, "drum": {"zzz": 1}},
    "rnic": {**STAR, "rnic": {"zzz": 1}},
    "tenants": {**STAR, "tenants": [{"zzz": 1}]},
}


@pytest.mark.parametrize("section", list(SECTIONS))
def test_every_key_of_a_section_is_a_parameter_of_its_builder(section):
    fn = builder(section)
    missing = [k for k in fields(SECTIONS[section]) if not takes(fn, k)]
    assert not missing, f"Scenario.{fn.__name__} does not take {missing} of [{section}]"


def test_every_traffic_class_key_is_a_parameter_of_with_class():
    keys = fields({**STAR, "fabric": {"classes": [{"zzz": 1}]}})
    assert [k for k in keys if not takes(Scenario.with_class, k)] == []


TOPOLOGIES = fields({"topology": {"kind": "zzz"}})


@pytest.mark.parametrize("kind", TOPOLOGIES)
def test_every_topology_kind_has_a_constructor_of_its_name_taking_its_fields(kind):
    fn = getattr(Scenario, kind, None)
    assert fn is not None, f"no Scenario.{kind}(...) for topology kind `{kind}`"
    keys = fields({"topology": {"kind": kind, "zzz": 1}})
    # `ips_per_host` is every topology's, set with `with_ips_per_host`.
    missing = [k for k in keys if not takes(fn, k) and builder(k) is None]
    assert not missing, f"Scenario.{kind} does not take {missing}"


TRAFFIC = fields({**STAR, "traffic": [{"kind": "zzz"}]})


@pytest.mark.parametrize("kind", TRAFFIC)
def test_every_traffic_kind_has_a_builder_of_its_name_taking_its_fields(kind):
    fn = getattr(Scenario, kind, None)
    assert fn is not None, f"no Scenario.{kind}(...) for traffic kind `{kind}`"
    keys = fields({**STAR, "traffic": [{"kind": kind, "zzz": 1}]})
    missing = [k for k in keys if not takes(fn, k)]
    assert not missing, f"Scenario.{kind} does not take {missing}"


def test_the_flows_builder_names_every_key_of_a_flow():
    # Each flow of a `flows` entry is a dict: its docstring must name every key it may hold.
    keys = fields({**STAR, "traffic": [{"kind": "flows", "flows": [{"zzz": 1}]}]})
    doc = inspect.getdoc(Scenario.flows)
    assert [k for k in keys if not re.search(rf"\b{k}\b", doc)] == []


def test_the_flows_builder_writes_the_tomls_flows_entry(tmp_path):
    toml = ('[topology]\nkind = "star"\nhosts = 3\n[[traffic]]\nkind = "flows"\npg = 2\n'
            'flows = [{ src = 1, dst = 0, size = 5000 }, { src = 2, dst = 0, size = 7000, start = "1us", pg = 4 }]\n')
    (tmp_path / "f.toml").write_text(toml)
    built = Scenario.star(3).flows([{"src": 1, "dst": 0, "size": 5000},
                                    {"src": 2, "dst": 0, "size": 7000, "start": "1us", "pg": 4}], pg=2)
    assert built.spec["traffic"] == Scenario.from_toml(tmp_path / "f.toml").spec["traffic"]
    assert Scenario.__dict__["hpcc_topology"] is Scenario.__dict__["hpcc_file"] and Scenario.hpcc_flows is Scenario.hpcc_flow_file
