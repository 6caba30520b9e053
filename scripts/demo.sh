#!/usr/bin/env bash
# Set everything up, then hunt a real bug in a recorded crash by going back in time (the walkthrough in README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bundle=test_traces/history/gradebook
echo "== lldb_trace and what it uses"
.venv/bin/lldb-trace versions
echo "== the program: test_traces/src/gradebook.c, recorded up to its crash in $bundle"
# Each step of the hunt, with why it is taken, is in README.md's "Find a bug by going back in time".
.venv/bin/lldb --no-lldbinit --batch \
    -o "command script import lldb_trace" \
    -o "trace load $bundle/trace.json" \
    -o "p *student" \
    -o "pt find --write &student->course --size 8" \
    -o "watchpoint set expression -s 8 -- &student->course" \
    -o "pt reverse-continue" \
    -o "p student->count" \
    -o "pt reverse-step" \
    -o "pt reverse-step" \
    -o "p student->count" \
    -o "bt" \
    -o "trace dump"
