"""``python -m rheo_cli.app.worker_process --worker``: the detached background worker
process (`background.worker.spawn` starts it)."""

from __future__ import annotations

import sys

from ..errors import RheoError
from ..memory.store.errors import EngineError
from . import app as app_mod


def main() -> int:
    """Run the detached worker for RHEO_HOME; exit quietly when there is nothing to do."""
    if sys.argv[1:] != ["--worker"]:
        sys.stderr.write("usage: python -m rheo_cli.app.worker_process --worker\n")
        return 2
    return run_worker()


def run_worker() -> int:
    """The detached worker's work in this process (the environment names RHEO_HOME,
    RHEO_PROFILE, the provider): queue the sessions closed by time, run every runnable job,
    wait for those due within a minute. Returns an exit status; never raises for a store or
    configuration problem (it is written on stderr)."""
    from ..background.worker import detached_main

    try:
        with app_mod.build() as rt:
            return detached_main(rt)
    except (RheoError, EngineError, OSError) as exc:
        # e.g. a full disk: the job keeps its lease and is taken over by the next run
        sys.stderr.write(f"rheo worker: {' '.join(str(exc).split())}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
