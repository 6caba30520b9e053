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
echo "== the plugin inside LLDB"
.venv/bin/lldb --batch -o "command script import lldb_trace" -o "help pt"
