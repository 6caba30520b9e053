"""Rebuild the bundled sample: the binary, its Intel PT stream and trace.json.

The stream follows sample.S's control flow, worked out by hand from
``objdump -d sample`` and listed in expected_addresses.txt: enable at
_start, the three-iteration loop in sum_down as one TNT packet (taken, taken,
not taken), the return as a TIP, and the exit syscall disabling tracing (as
user-only tracing does).  Run: python test_traces/sample/make_sample.py
"""

import json
import subprocess
from pathlib import Path

from elftools.elf.elffile import ELFFile

from lldb_trace import libipt
from lldb_trace.libipt import packets as p

HERE = Path(__file__).resolve().parent
TID = 4242
PID = 4242


def build():
    subprocess.run(
        ["gcc", "-g", "-nostdlib", "-static", "-no-pie", "-Wl,--build-id=sha1", "-o", "sample", "sample.S"],
        cwd=HERE,
        check=True,
    )


def symbol(elf, name):
    return elf.get_section_by_name(".symtab").get_symbol_by_name(name)[0]["st_value"]


def build_id(elf):
    for note in elf.get_section_by_name(".note.gnu.build-id").iter_notes():
        return note["n_desc"]
    raise SystemExit("sample has no build-id")


def packets(start, return_site):
    return [
        p.Psb(),
        p.Tsc(1_000_000),
        p.Psbend(),
        p.ModeExec(libipt.ExecMode.BIT64),
        p.TipPge(libipt.IpCompression.SEXT_48, start),
        p.Tnt8.from_taken([True, True, False]),
        # Same upper 48 bits as the last IP (start): 16 bits are enough.
        p.Tip(libipt.IpCompression.UPDATE_16, return_site & 0xFFFF),
        p.TipPgd(libipt.IpCompression.SUPPRESSED, 0),
    ]


def main():
    build()
    with open(HERE / "sample", "rb") as f:
        elf = ELFFile(f)
        start = symbol(elf, "_start")
        uuid = build_id(elf)
    return_site = start + 0xA  # the instruction after `call sum_down`
    (HERE / f"{TID}.ipt").write_bytes(libipt.encode(packets(start, return_site)))
    bundle = {
        "type": "intel-pt",
        "cpuInfo": {"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 4},
        "processes": [
            {
                "pid": PID,
                "triple": "x86_64-unknown-linux-gnu",
                "threads": [{"tid": TID, "iptTrace": f"{TID}.ipt"}],
                "modules": [{"systemPath": "sample", "loadAddress": hex(0x400000), "uuid": uuid}],
            }
        ],
    }
    (HERE / "trace.json").write_text(json.dumps(bundle, indent=2) + "\n")


if __name__ == "__main__":
    main()
