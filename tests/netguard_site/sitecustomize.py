"""Install the test network guard in every Python process that has this directory on
``PYTHONPATH`` (see ``netguard.subprocess_env``).

Loads ``tests/netguard.py`` by path and registers it as the ``netguard`` module, so code in the
subprocess that imports ``netguard`` sees the same ``BLOCKED`` list. Then, so that shadowing
does not change anything else, runs whichever ``sitecustomize`` module would have been
imported without this directory (e.g. Debian's apport hook), if any.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_NETGUARD = _HERE.parent / "netguard.py"


def _load_netguard() -> None:
    module = sys.modules.get("netguard")
    if module is None:
        spec = importlib.util.spec_from_file_location("netguard", _NETGUARD)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the test network guard from {_NETGUARD}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["netguard"] = module
        spec.loader.exec_module(module)
    module.install()


def _chain_shadowed_sitecustomize() -> None:
    for entry in sys.path:
        try:
            if not entry or Path(entry).resolve() == _HERE:
                continue
        except OSError:
            continue
        candidate = Path(entry) / "sitecustomize.py"
        if candidate.is_file():
            code = compile(candidate.read_bytes(), str(candidate), "exec")
            namespace = {"__name__": "_shadowed_sitecustomize", "__file__": str(candidate)}
            exec(code, namespace)  # noqa: S102 - running the shadowed sitecustomize is the point
            return


_load_netguard()
# A broken foreign sitecustomize must not undo the guard (already installed above).
with contextlib.suppress(Exception):
    _chain_shadowed_sitecustomize()
# Test subprocesses run rheo in-process, as the suite does, unless a test asks for the
# resident (tests/resident sets RHEO_RESIDENT=1): no test leaves a resident running.
os.environ.setdefault("RHEO_RESIDENT", "0")
