#!/usr/bin/env bash
# Set everything up, then run the main job on the bundled sample trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
sample=test_traces/sample
echo "== lldb_trace and what it uses"
.venv/bin/lldb-trace versions
echo "== the sample bundle ($sample/trace.json) and its packets"
cat "$sample/trace.json"
.venv/bin/lldb-trace packets "$sample/4242.ipt"
echo "== the trace in LLDB: load it like a core file, then look around"
.venv/bin/lldb --no-lldbinit --batch \
    -o "command script import lldb_trace" \
    -o "trace load $sample/trace.json" \
    -o "thread list" \
    -o "image list" \
    -o "disassemble -p -c 3" \
    -o "trace dump --instructions -c 20" \
    -o "trace dump --function-calls" \
    -o "trace dump"
