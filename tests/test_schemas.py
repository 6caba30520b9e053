"""The bundle schema ships inside the package and accepts the committed sample."""

import json
from importlib import resources

import jsonschema
import pytest
from conftest import SAMPLE


@pytest.fixture(scope="module")
def intel_pt_schema():
    return json.loads((resources.files("lldb_trace") / "schemas" / "intel-pt.json").read_text())


def test_schema_is_valid_draft_2020_12(intel_pt_schema):
    jsonschema.Draft202012Validator.check_schema(intel_pt_schema)


def test_sample_bundle_validates(intel_pt_schema):
    jsonschema.validate(json.loads((SAMPLE / "trace.json").read_text()), intel_pt_schema)


@pytest.mark.parametrize(
    "mutate, path",
    [
        (lambda b: b.update(type="perf"), "type"),
        (lambda b: b["cpuInfo"].update(family="6"), "cpuInfo.family"),
        (lambda b: b["processes"][0]["threads"][0].update(tid="x"), "processes.0.threads.0.tid"),
        (lambda b: b["processes"][0]["modules"][0].update(loadAddress="0xZZ"), "processes.0.modules.0.loadAddress"),
        (lambda b: b.update(cpus=[{"id": 0, "iptTrace": "a", "contextSwitchTrace": "b"}]), ""),
    ],
)
def test_schema_rejects(intel_pt_schema, mutate, path):
    bundle = json.loads((SAMPLE / "trace.json").read_text())
    mutate(bundle)
    with pytest.raises(jsonschema.ValidationError) as caught:
        jsonschema.validate(bundle, intel_pt_schema)
    assert ".".join(str(p) for p in caught.value.absolute_path) == path
