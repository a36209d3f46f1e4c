"""Local jobs of several ranks, for the tests on real torch.distributed.

A job's ranks are processes forked from one server process that imported
torch and hcg.torch once (multiprocessing's forkserver), not fresh
interpreters: a fresh one imports torch again, 2 to 3 s of CPU with torch
2.x, and a job of 8 ranks on CI's 2 CPUs spent most of its time doing
that. The server is started by the first job of the test process and forks
nothing but these ranks; it never touches torch.distributed itself.

Each rank runs a worker module's ``main()`` with its own argv, environment
and working directory, its stdout and stderr in files, and leaves through
the interpreter's exit handlers (atexit), as a process of its own does.
"""

from __future__ import annotations

import atexit
import faulthandler
import importlib
import json
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

#: What the server imports before it forks (a module that is missing, as
#: torch without torch, is left out by multiprocessing).
PRELOAD = ["torch", "torch.distributed", "hcg", "hcg.torch"]

_context: Optional[multiprocessing.context.BaseContext] = None


def _forkserver() -> multiprocessing.context.BaseContext:
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        _context = ctx
    return _context


def _rank_main(module: str, argv: Sequence[str], env: Dict[str, str],
               cwd: str, out: str, err: str) -> None:
    """One rank, in the forked process: as ``python -m MODULE ARGV...``."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    sys.argv = [module] + list(argv)
    # A rank still running at the limit is asked for every thread's Python
    # stack (into its stderr) before it is killed: a hang says where.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    code: object = 1
    try:
        code = importlib.import_module(module).main()
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()  # pylint: disable=protected-access
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


class Rank(NamedTuple):
    """What one rank left: its exit status (negative: the signal that
    ended it), its stdout and its stderr."""

    returncode: int
    out: str
    err: str


def run(module: str, argvs: List[Sequence[str]], env: Dict[str, str],
        cwd: str, limit: float) -> List[Rank]:
    """Runs ``python -m MODULE ARGV`` once per ARGV in ``argvs``, all at
    once, and waits ``limit`` seconds at most for all of them.

    Raises:
        AssertionError: a rank was still running after ``limit`` seconds
            (every rank is killed first).
    """
    ctx = _forkserver()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for r, argv in enumerate(argvs):
            out, err = os.path.join(tmp, "out.%d" % r), os.path.join(tmp, "err.%d" % r)
            p = ctx.Process(target=_rank_main, args=(module, list(argv), env, cwd, out, err))
            p.start()
            procs.append((p, out, err))
        deadline = time.monotonic() + limit
        try:
            for r, (p, _, _) in enumerate(procs):
                p.join(max(0.0, deadline - time.monotonic()))
                if p.exitcode is None:
                    raise AssertionError("rank %d of %s still running after %g s; "
                                         "what the ranks still running were doing:\n%s"
                                         % (r, module, limit, _stacks(procs)))
        finally:
            for p, _, _ in procs:
                if p.exitcode is None:
                    p.kill()
                    p.join()
        ranks = []
        for p, out, err in procs:
            texts = []
            for path in (out, err):
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        texts.append(f.read())
                except OSError:
                    texts.append("")
            ranks.append(Rank(p.exitcode, texts[0], texts[1]))
        return ranks


def _stacks(procs: List[Any], tail: int = 6000) -> str:
    """Every rank still running dumps its threads' stacks (SIGUSR1, see
    _rank_main); the end of each one's stdout and stderr, for a message,
    after a line on each rank that has ended: its status and the end of its
    stderr (a peer that ended early, or failed, explains a hang)."""
    running = [(r, p, out, err) for r, (p, out, err) in enumerate(procs)
               if p.exitcode is None]
    ended = []
    for r, (p, _, err) in enumerate(procs):
        if p.exitcode is None:
            continue
        try:
            with open(err, encoding="utf-8", errors="replace") as f:
                text = f.read()[-tail // 4:]
        except OSError:
            text = ""
        ended.append("--- rank %d ended with status %s%s" % (
            r, p.exitcode, ", stderr:\n" + text if text.strip() else ""))
    for _, p, _, _ in running:
        try:
            os.kill(p.pid, signal.SIGUSR1)
        except OSError:
            pass
    time.sleep(2)
    parts = []
    for r, _, out, err in running:
        for name, path in (("stdout", out), ("stderr", err)):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()[-tail:]
            except OSError:
                text = ""
            parts.append("--- rank %d, %s:\n%s" % (r, name, text))
    return "\n".join(ended + parts)


def results(done: List[Rank], err_tail: int) -> List[Dict[str, Any]]:
    """The result each rank of a test worker printed last, as a line
    ``RESULT {json}``, by rank.

    Raises:
        AssertionError: a rank printed no result (the end of its stderr,
            ``err_tail`` characters, in the message), or its result holds
            the exception that stopped it. Every such rank is in the
            message: the first one is often only the echo of another's
            failure (a peer that closed its connections).
    """
    out = []
    bad = []
    for r, rank in enumerate(done):
        lines = [l for l in rank.out.splitlines() if l.startswith("RESULT ")]
        if not lines:
            bad.append("rank %d printed no result (exit %d): %s"
                       % (r, rank.returncode, rank.err[-err_tail:]))
            continue
        res = json.loads(lines[-1][7:])
        if "exception" in res:
            bad.append("rank %d: %s" % (r, res["exception"]))
            continue
        out.append(res)
    if bad:
        raise AssertionError("\n".join(bad))
    return out
