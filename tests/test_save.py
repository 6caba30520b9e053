"""trace save: a loaded trace written back as a native bundle that loads again, elsewhere."""

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

lldb = pytest.importorskip("lldb", reason="LLDB's Python bindings: pip install 'lldb-trace[test]'")

from lldb_session import Session  # noqa: E402
from test_trace_commands import loadable  # noqa: E402

from lldb_trace.bundle.model import CpuInfo  # noqa: E402
from lldb_trace.bundle.saver import SaveError, SaveModule, SaveProcess, save_bundle  # noqa: E402


def dumps(bundle, tmp_path, name):
    session = Session(tmp_path / name)
    try:
        session.ok(f"pt load {bundle}")
        return session.ok("pt dump -i --all"), session.ok("pt dump -C --all")
    finally:
        session.close()


def test_saved_bundle_with_copied_images_loads_without_the_originals(tmp_path):
    source = tmp_path / "original"
    shutil.copytree(ROOT / "test_traces" / "crash", source)
    loadable(source)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    session = Session(tmp_path / "a")
    try:
        session.ok(f"pt load {source / 'trace.json'}")
        before = session.ok("pt dump -i --all"), session.ok("pt dump -C --all")
        session.ok(f"trace save {tmp_path / 'saved'} --copy-images")
        session.handle(f"trace save {tmp_path / 'saved'} --copy-images")
        _, err = session.streams()
        assert "already exists" in err and "add --force" in err
    finally:
        session.close()
    shutil.rmtree(source / "modules")  # the program's copy in the original bundle is gone
    document = json.loads((tmp_path / "saved" / "trace.json").read_text())
    assert all(m["file"].startswith("modules/") for m in document["processes"][0]["modules"])
    copied = json.loads((tmp_path / "saved" / "copied_images.json").read_text())
    assert set(copied) == {m["systemPath"] for m in document["processes"][0]["modules"]}
    assert dumps(tmp_path / "saved" / "trace.json", tmp_path, "b") == before


def test_save_refuses_to_write_outside_its_directory(tmp_path):
    evil = SaveModule("/../../escape", Path(__file__), 0x400000, None)
    process = SaveProcess(1, "x86_64-unknown-linux-gnu", ((1, b"\x02\x82" * 8),), (evil,))
    with pytest.raises(SaveError, match="outside"):
        save_bundle(tmp_path / "out" / "b.json", CpuInfo("intel", 6, 85, 4), [process], copy_images=True)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "out").exists()
