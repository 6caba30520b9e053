"""Stands in for the plugin when Python takes this checkout's root folder for the package ``lldb_trace``.

That happens when LLDB (or Python) runs in the folder that holds a checkout
named ``lldb_trace``: the working folder is on ``sys.path``, and without this
file the checkout would import as an empty namespace package, with no
``__lldb_init_module``, no commands and no error.  This file hands the
import on: to an installed copy of the plugin when one is importable, else to
the package inside this checkout; if neither can load, it says why.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _installed_spec(name):
    """The spec of an installed ``name`` (on ``sys.path`` or from an editable install's finder), not this file."""
    here = os.path.realpath(__file__)

    def elsewhere(spec):
        return spec is not None and spec.loader is not None and os.path.realpath(spec.origin or "") != here

    spec = importlib.machinery.PathFinder.find_spec(name, [entry for entry in sys.path if entry not in ("", ".")])
    if elsewhere(spec):
        return spec
    for finder in sys.meta_path:
        if finder is not importlib.machinery.PathFinder and hasattr(finder, "find_spec"):
            spec = finder.find_spec(name, None)
            if elsewhere(spec):
                return spec
    return None


def _load(name):
    spec = _installed_spec(name)
    if spec is None:
        inner = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(inner, "__init__.py"), submodule_search_locations=[inner]
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as error:
        del sys.modules[name]
        raise ImportError(
            f"lldb_trace: the folder LLDB runs in holds the source checkout {os.path.dirname(__file__)}, and this "
            f"Python cannot load the plugin from it ({error}): install it with 'bash scripts/setup.sh' in the "
            "checkout and load it as 'lldb-trace lldbinit' says"
        ) from None


if __name__ == "lldb_trace":
    _load(__name__)
