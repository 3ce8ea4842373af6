"""The reference pages generated from the code (`make reference`): the scenario reference
covers every key the parser accepts, with a type, a default (or "required") and a meaning;
the JSON Schema shipped in the package accepts every example scenario and refuses a misspelt
key, as the parser does; each committed page is what the code generates now."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

import rdmalab
from rdmalab.docgen import PAGES, ROOT, api_ref, columns, hpcc_ref, outputs_ref, scenario_ref, stale

#: Every scenario file of the repository: the examples, the benchmarks' and the experiments'.
EXAMPLES = sorted(p for pattern in ("examples/*.toml", "bench/**/*.toml", "python/rdmalab/experiments/**/*.toml")
                  for p in ROOT.glob(pattern) if "topology" in tomllib.loads(p.read_text()))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(scenario_ref.SCHEMA_PATH.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_every_key_has_a_type_a_default_and_a_meaning():
    keys = scenario_ref.keys()
    assert len(keys) > 250
    missing = [f"{k.section} {k.name}: " + ", ".join(w for w, v in (("type", k.type), ("default", k.default),
                                                                    ("meaning", k.meaning)) if not v)
               for k in keys if not (k.type and k.default and k.meaning)]
    assert not missing, "keys without a type, default or meaning (write them in the field's doc comment):\n" + \
        "\n".join(missing)


def parser_keys(spec: dict) -> list[str]:
    """The keys the engine's parser takes where `spec` puts the unknown key `zzz` (or the kinds
    it knows where `spec` names the kind `zzz`): the `expected one of ...` of its error."""
    with pytest.raises(ValueError) as e:
        rdmalab._core.check_scenario_fields(json.dumps(spec))
    m = re.search(r"expected (?:one of )?(.*)$", str(e.value))
    assert m and "zzz" in str(e.value), str(e.value)
    return re.findall(r"`([^`]+)`", m.group(1))


@pytest.mark.parametrize("section", [s for s in scenario_ref.sections()], ids=lambda s: s.title)
def test_each_table_of_the_reference_has_the_keys_the_parser_takes(section):
    # The parser is asked, not the schema: a key it accepts that the reference lacks (or the
    # other way round) fails here.
    if section.kinds:
        assert set(parser_keys(section.probe({"kind": "zzz"}))) == {k.split('"')[1] for k in section.kinds}
    else:
        listed = {k.name for k in section.keys} - ({"kind"} if " kind = " in section.title else set())
        assert set(parser_keys(section.probe({"zzz": 1}))) == listed


def test_the_reference_lists_every_section_and_allowed_value():
    page = scenario_ref.render()
    for title in ("## [topology] kind = \"fat_tree\"", "## [[traffic]] kind = \"poisson\"", "## [fabric]",
                  "## [fabric.irn]", "## [[fabric.classes]]", "## [rnic]", "## [[collective]]"):
        assert title in page
    fabric = {k.name: k for k in scenario_ref.keys() if k.section == "[fabric]"}
    assert {v for v, _ in fabric["cc"].values} == {
        "none", "dcqcn", "hpcc", "timely", "dctcp", "blitz", "ib", "swift", "nscc", "rccc", "nscc+rccc"
    }
    assert {"ecmp", "conweave", "spray"} <= {v for v, _ in fabric["path_selection"].values}
    assert fabric["pfc_pause"].type.startswith("table")


def test_the_scenario_files_are_found():
    assert sum(p.parent.name == "examples" for p in EXAMPLES) >= 5 and len(EXAMPLES) >= 25


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_schema_accepts_every_scenario_file(validator, path):
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in
              validator.iter_errors(tomllib.loads(path.read_text()))]
    assert not errors, errors


@pytest.mark.parametrize("section, key", [(None, "sed"), ("fabric", "mtuu"), ("rnic", "recv_queue_dept")])
def test_the_schema_and_the_parser_refuse_a_misspelt_key(validator, section, key):
    doc = tomllib.loads((ROOT / "examples" / "incast.toml").read_text())
    (doc.setdefault(section, {}) if section else doc)[key] = 1
    assert not validator.is_valid(doc)
    with pytest.raises(ValueError, match=re.escape(key)):
        rdmalab._core.check_scenario_fields(json.dumps(doc))


def test_a_misspelt_traffic_kind_key_is_refused(validator):
    doc = tomllib.loads((ROOT / "examples" / "incast.toml").read_text())
    assert validator.is_valid(doc)
    doc["traffic"][0]["sizee"] = 1
    assert not validator.is_valid(doc)
    with pytest.raises(ValueError, match="sizee"):
        rdmalab._core.check_scenario_fields(json.dumps(doc))


def test_every_hpcc_key_and_api_member_is_documented():
    keys = hpcc_ref.keys(ROOT)
    assert len(keys) >= 50 and all(doc for _, doc in keys), [k for k, doc in keys if not doc]
    assert api_ref.undocumented() == []


def test_every_output_table_and_column_has_a_meaning():
    schemas = outputs_ref.run_tables()
    tables = {name: list(schema) for name, schema in schemas.items()}
    assert {"rnr", "pfc_watchdog", "wqes", "apps", "chunks", "paths", "chakra"} <= set(tables)
    # `res.chakra` as Python returns it: the engine's `start_ps` and `end_ps` arrive in ns.
    chakra = {c: str(t) for c, t in schemas["chakra"].items()}
    assert chakra["start_ns"] == chakra["end_ns"] == "Float64" and "start_ps" not in chakra, chakra
    assert columns.missing(tables) == []
    assert sorted(columns.RUNS) == sorted(outputs_ref.store.RUN_COLUMNS)


def test_the_generated_pages_are_up_to_date():
    assert stale() == [], "generated reference out of date: run `make reference`"
    assert set(PAGES) >= {"docs/reference/scenario.md", "python/rdmalab/schema/scenario.schema.json"}
