"""The bundle schemas: valid JSON Schema, shipped in the package, readable, and matching the bundles."""

import json

import jsonschema
import pytest
from bundle_cases import to_rfc
from conftest import ROOT

from lldb_trace.bundle import SchemaError, render_schema, schema, schema_names

COMMITTED = sorted(ROOT.glob("test_traces/*/trace.json"))


def test_both_formats_ship_in_the_package():
    assert schema_names() == ["intel-pt", "intel-pt-lldb"]


@pytest.mark.parametrize("name", ["intel-pt", "intel-pt-lldb"])
def test_schema_is_valid_draft_2020_12(name):
    jsonschema.Draft202012Validator.check_schema(schema(name))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name)
def test_committed_bundles_validate_in_both_formats(path):
    native = json.loads(path.read_text())
    jsonschema.validate(native, schema("intel-pt-lldb"))
    if "cpus" not in native:  # the RFC's format has per-thread traces only
        jsonschema.validate(to_rfc(native), schema("intel-pt"))


def test_rendering_reads_like_the_rfc():
    text = render_schema("intel-pt")
    for line in [
        '  "trace": {',
        '    "type": "intel-pt",',
        '      "vendor": "intel" | "unknown",',
        '      "family": integer,',
        '      "triple"?: string,  // LLVM target triple, e.g. x86_64-unknown-linux-gnu.',
        '          "traceFile": string  // The raw Intel PT trace of this thread.',
        '          "file"?: string,  // A copy of the module, used instead of systemPath.',
        "// - All paths are either absolute or relative to the bundle file.",
    ]:
        assert line in text.splitlines(), line


def test_native_rendering_has_per_cpu_and_kernel_parts():
    lines = render_schema("intel-pt-lldb").splitlines()
    assert (
        '  "cpus"?: [' in lines and '  "kernel"?: {' in lines and '    "vendor": "GenuineIntel" | "unknown",' in lines
    )


def test_unknown_schema_names_the_known_ones():
    with pytest.raises(SchemaError, match=r"^no trace schema named 'perf': the schemas are intel-pt, intel-pt-lldb$"):
        schema("perf")
