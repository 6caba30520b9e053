"""The bundled sample trace (test_traces/sample): its folder and the CPU it was recorded on."""

from lldb_trace import libipt

from .paths import TRACES

SAMPLE = TRACES / "sample"
SAMPLE_CPU = libipt.Cpu(family=6, model=85, stepping=4)
