"""Real PyTorch worker processes that cannot hang a test.

Two things hung before (a loaded CI machine exposed them):
  * a worker's exit: the interpreter's teardown runs ~Reducer -> ~ProcessGroupGloo, which joins a
    gloo worker thread that waits for the GIL the main thread holds, while the TCPStore thread
    spins on a closed socket. `leave(code)` writes nothing more and ends the process with
    os._exit after the result is on disk, so no destructor runs;
  * the parent: torch.multiprocessing.spawn(join=True) waits forever. `spawn(...)` joins with a
    deadline, kills what is still alive and raises SpawnTimeout naming the ranks.
Every subprocess the tests start has a timeout too (subprocess.run(..., timeout=...)).
"""
import datetime
import os
import sys
import time

# Seconds a whole spawn may take unless the caller says: generous for a loaded 2-core machine.
DEFAULT_TIMEOUT_S = float(os.environ.get("DDPSIM_SPAWN_TIMEOUT_S", "900"))


class SpawnTimeout(RuntimeError):
    pass


def pg_timeout(seconds=None):
    """The timeout for dist.init_process_group: a collective that waits longer raises instead."""
    return datetime.timedelta(seconds=seconds or min(DEFAULT_TIMEOUT_S, 600))


# A run that reports its progress (spawn's `progress`) may go on past the deadline while the
# work it says is left fits: until twice that estimate plus this margin from the latest report.
PROGRESS_MARGIN_S = 300.0


def extended_deadline(deadline, now, remaining_s):
    """The deadline after a progress report saying `remaining_s` seconds of work are left (None: no
    report): never earlier than before, at least now + 2 x remaining_s + PROGRESS_MARGIN_S. A run
    that stops reporting (a hang) keeps the last deadline."""
    if remaining_s is None or not remaining_s >= 0:
        return deadline
    return max(deadline, now + 2.0 * remaining_s + PROGRESS_MARGIN_S)


def spawn(fn, args, nprocs, timeout_s=None, what="worker", progress=None):
    """torch.multiprocessing.spawn with a deadline: returns when every rank exited 0, re-raises a
    rank's failure as spawn does, and after `timeout_s` kills the survivors and raises SpawnTimeout.
    `progress` (optional): a callable returning the seconds of work the ranks last said were left,
    or None; each report can move the deadline later (extended_deadline), so a long run that keeps
    reporting is not killed at `timeout_s`."""
    import torch.multiprocessing as mp
    timeout_s = timeout_s or DEFAULT_TIMEOUT_S
    ctx = mp.spawn(fn, args=args, nprocs=nprocs, join=False)
    start = time.monotonic()
    deadline = start + timeout_s
    try:
        while not ctx.join(timeout=max(0.1, min(2.0, deadline - time.monotonic()))):
            if progress is not None:
                deadline = extended_deadline(deadline, time.monotonic(), progress())
            if time.monotonic() >= deadline:
                alive = [i for i, p in enumerate(ctx.processes) if p.is_alive()]
                raise SpawnTimeout("%s: rank(s) %s still running after %.0f s (a deadlock in a collective or in "
                                   "process-group teardown, or an overloaded machine); killed them"
                                   % (what, alive, time.monotonic() - start))
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
        for p in ctx.processes:
            p.join(10)


def leave(code=0):
    """Ends a worker at once, its results written: no interpreter teardown, no destructors."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
