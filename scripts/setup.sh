#!/usr/bin/env bash
# Set up lldb_trace on a Debian machine: system packages (when missing, with
# apt-get as root), then a virtualenv in .venv with the package installed.
#   scripts/setup.sh         runtime + LLDB's Python bindings (for the demo)
#   scripts/setup.sh test    everything the test suite needs as well
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}

packages=()
ldconfig -p 2>/dev/null | grep -q 'libipt\.so\.2 ' || packages+=(libipt2)
command -v python3 >/dev/null || packages+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || packages+=(python3-venv)
if ! command -v gcc >/dev/null; then  # gcc builds the compiled decode loops (setup.py); the tests compile programs
  if [ "$mode" = test ] || [ "$(id -u)" -eq 0 ]; then
    packages+=(gcc libc6-dev)
  else
    echo "note: no gcc: the decode loops will run in Python, about 12 times slower; install gcc and run this again" >&2
  fi
fi
# Python's headers compile the value engine (setup.py); without them it runs as Python, about a fifth slower
if ! python3 -c 'import os, sysconfig; os.stat(sysconfig.get_paths()["include"] + "/Python.h")' 2>/dev/null; then
  if [ "$mode" = test ] || [ "$(id -u)" -eq 0 ]; then
    packages+=(python3-dev)
  else
    echo "note: no Python headers: the value engine will run as Python; install python3-dev and run this again" >&2
  fi
fi
if [ "$mode" = test ]; then
  [ -f /usr/include/intel-pt.h ] || packages+=(libipt-dev)  # struct layout cross-check
  command -v strip >/dev/null || packages+=(binutils)
  command -v gdb >/dev/null || packages+=(gdb)  # GDB's record full and gcore: references the tests compare with
  # Native LLDB with its intel-pt plugin: the independent decoder the tests compare with.
  if ! command -v lldb-22 >/dev/null || ! dpkg -s python3-lldb-22 >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
      apt-get update -qq
      if apt-cache show lldb-22 python3-lldb-22 >/dev/null 2>&1; then packages+=(lldb-22 python3-lldb-22); fi
    fi
  fi
fi
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: missing system packages: ${packages[*]}; run: sudo apt-get install ${packages[*]}" >&2
    exit 1
  fi
  echo "installing system packages: ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${packages[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
extra=lldb
[ "$mode" = test ] && extra=test
# Installing compiles the value engine (a minute): done again only when what it builds from changed
stamp=$({ echo "$extra"; cat pyproject.toml setup.py lldb_trace/decode/*.c lldb_trace/values/*.py; } | sha256sum)
if [ "$(cat .venv/.lldb_trace_installed 2>/dev/null)" != "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extra]"
  echo "$stamp" >.venv/.lldb_trace_installed
fi
