"""``python -m rheo_cli.background --worker``: the detached worker process."""

from __future__ import annotations

import sqlite3
import sys

from .. import runtime
from ..errors import RheoError
from ..memory.store.errors import EngineError


def main() -> int:
    """Run the detached worker for RHEO_HOME; exit quietly when there is nothing to do."""
    if sys.argv[1:] != ["--worker"]:
        sys.stderr.write("usage: python -m rheo_cli.background --worker\n")
        return 2
    from .worker import detached_main

    try:
        rt = runtime.build()
        return detached_main(rt)
    except (RheoError, EngineError, sqlite3.Error, OSError) as exc:
        # e.g. a full disk: the job keeps its lease and is taken over by the next run
        sys.stderr.write(f"rheo worker: {' '.join(str(exc).split())}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
