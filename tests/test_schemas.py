"""The bundle schemas: valid JSON Schema, shipped in the package, readable, and matching the bundles."""

import json

import jsonschema
import pytest
from support.bundle_cases import to_rfc
from support.paths import ROOT

from lldb_trace.bundle import SchemaError, render_schema, schema, schema_names
from lldb_trace.bundle.schemas import validate

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


def test_native_rendering_says_when_processes_are_required():
    assert (
        '// - "processes" is required (with at least one process) when "kernel" is not provided: '
        "a bundle with neither traces nothing." in render_schema("intel-pt-lldb").splitlines()
    )


@pytest.mark.parametrize(
    "address, fits",
    [
        (2**64 - 1, True),
        ("0xFFFFFFFFFFFFFFFF", True),
        ("18446744073709551615", True),
        ("0x" + "0" * 60 + "1", True),  # leading zeros are no part of the value
        (2**64, False),
        ("18446744073709551616", False),
        ("9" * 5000, False),  # past what Python parses as a decimal string, yet a one-line error
    ],
)
def test_addresses_must_fit_in_64_bits(address, fits):
    document = json.loads(COMMITTED[0].read_text())
    document["processes"][0]["modules"][0]["loadAddress"] = address
    if fits:
        validate(document, "intel-pt-lldb")
    else:
        with pytest.raises(SchemaError, match=r"^processes\[0\]\.modules\[0\]\.loadAddress: .* does not fit in 64"):
            validate(document, "intel-pt-lldb")


@pytest.mark.parametrize("where", ["cpuInfo.family", "processes.0.pid", "processes.0.threads.0.tid"])
def test_an_integer_written_as_a_float_is_refused(where):
    """JSON Schema itself counts 6.0 as an integer; the loader would then hand LLDB a float."""
    document = json.loads(COMMITTED[0].read_text())
    *parents, key = [int(part) if part.isdigit() else part for part in where.split(".")]
    node = document
    for part in parents:
        node = node[part]
    node[key] = float(node[key])
    with pytest.raises(SchemaError, match=r": expected an integer, got \d+\.0$"):
        validate(document, "intel-pt-lldb")
