"""Native LLDB (lldb-22's intel-pt plugin) as an independent check of the sample's hand-checked ground truth."""

import pytest
from support import native_lldb
from support.sample_trace import SAMPLE

if not native_lldb.available():
    pytest.skip("native lldb-22 with Python bindings is not installed", allow_module_level=True)

SAMPLE_TID = 4242


def test_native_lldb_decodes_sample_ground_truth(sample_expected):
    items = native_lldb.decode_addresses(SAMPLE / "trace.json")
    # The stream ends with TIP.PGD (tracing disabled at the exit syscall), which native LLDB reports as an event,
    # not an error: the decode is exactly the expected instructions, with no error items at all.
    assert items == {SAMPLE_TID: sample_expected}
