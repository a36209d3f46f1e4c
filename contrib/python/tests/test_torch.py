"""hcg.torch, with and without PyTorch.

Without torch: the package imports and fails clearly when used. With real
torch (Debian's python3-torch, gloo on CPU): local jobs of several
processes (tests/torch_worker.py, one process per rank on a TCPStore at
127.0.0.1) check every group hcg.torch makes against libhcg, the
HyperCommGrid drop-in, bad input and a member that never arrives. When the
interpreter has no torch the real-torch tests are skipped, unless
HCGTEST_REQUIRE_TORCH=1 (run-tests.sh sets it for /usr/bin/python3, which
scripts/deps.sh gives torch), where they fail instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import socket
import unittest
from typing import Dict, List
from unittest import mock

import hcg
import hcg.torch as ht
from hcg import HcgError, Status

import ranks
import support


NO_TORCH = """
import sys
sys.modules["torch"] = None          # any 'import torch' now fails
import hcg
import hcg.torch as ht               # must not need torch
assert ht.ATTRIBUTES[:4] == ("tp", "cp", "pp", "dp")
try:
    ht.new_collection("tp=2,dp=2")
except ImportError as exc:
    assert isinstance(exc, ht.TorchUnavailableError), type(exc)
    assert isinstance(exc, hcg.HcgError), type(exc)
    assert exc.code == hcg.Status.ENOTSUP, exc.code
    print(exc)
else:
    raise SystemExit("no error without torch")
"""


class WithoutTorch(unittest.TestCase):

    def test_imports_and_fails_clearly(self):
        proc = subprocess.run([sys.executable, "-c", NO_TORCH],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=dict(os.environ))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("hcg.torch needs PyTorch", proc.stdout)
        self.assertIn("works without torch", proc.stdout)


    def test_bridges_are_named_lazily(self):
        # The bridges are torch modules: naming one imports torch, which
        # importing hcg.torch must not.
        code = ("import sys\n"
                "sys.modules['torch'] = None\n"
                "import hcg.torch as ht\n"
                "assert 'hcg.torch.bridge' not in sys.modules\n"
                "try:\n"
                "    ht.ColocatedBridge\n"
                "except ht.TorchUnavailableError as exc:\n"
                "    print(exc)\n")
        proc = subprocess.run([sys.executable, "-c", code],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=dict(os.environ))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("hcg.torch needs PyTorch", proc.stdout)


class LayoutSources(unittest.TestCase):
    """The one resolution of a ``source`` argument (hcg._source), which
    GroupFactory, the bridges and megatron_args share, and the task
    hcg.torch.init() records there (``STATE.task``). Needs no torch."""

    def setUp(self) -> None:
        from hcg import _source
        from hcg.torch import _base

        self.base = _base
        self.source = _source
        self.L = hcg.Layout("tp=2,dp=2", 4)
        self.addCleanup(self.L.close)
        saved = _base.STATE.task
        self.addCleanup(setattr, _base.STATE, "task", saved)
        _base.STATE.task = None

    def test_a_layout_or_a_task(self) -> None:
        found = self.source.resolve_source(self.L)
        self.assertEqual((found.layout, found.task, found.owned), (self.L, None, False))
        task = hcg.env.TaskEnv(self.L, 3)
        found = self.source.resolve_source(task, text=False, environ=False)
        self.assertEqual((found.layout, found.task, found.owned), (self.L, task, False))

    def test_layout_text(self) -> None:
        found = self.source.resolve_source("tp=2,dp=*", world=8)
        self.addCleanup(found.layout.close)
        self.assertEqual((found.layout.world_size, found.task, found.owned),
                         (8, None, True))
        found = self.source.resolve_source("tp=2,dp=3")
        self.addCleanup(found.layout.close)
        self.assertEqual(found.layout.world_size, 6)
        with self.assertRaises(hcg.HcgValueError):
            self.source.resolve_source("tp=2,dp=3", world=8)

    def test_none_is_init_s_task_else_the_environment(self) -> None:
        task = hcg.env.TaskEnv(self.L, 1)
        self.base.STATE.task = task
        for environ in (True, False):
            found = self.source.resolve_source(None, environ=environ)
            self.assertEqual((found.layout, found.task, found.owned),
                             (self.L, task, False))
        self.base.STATE.task = None
        fake = {"SLURM_PROCID": "2"}
        fake.update(dict(support.cli_env(8, "tp=2,dp=*", 2)))
        with mock.patch.dict(os.environ, fake, clear=True):
            found = self.source.resolve_source(None)
        self.addCleanup(found.layout.close)
        self.assertTrue(found.owned)
        self.assertEqual((found.layout.text, found.task.rank), ("world@0:tp=2,dp=4", 2))
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaises(hcg.HcgRuntimeError) as cm:
                self.source.resolve_source(None)
        self.assertEqual(cm.exception.code, Status.EENV)

    def test_refusals(self) -> None:
        # A bridge takes no text and does not read the environment.
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaises(hcg.HcgRuntimeError) as cm:
                self.source.resolve_source(None, text=False, environ=False)
        self.assertEqual(cm.exception.code, Status.EINVAL)
        self.assertEqual(str(cm.exception), "no layout: call hcg.torch.init() "
                         "first or pass source=Layout/TaskEnv")
        for source, text, kinds in (
                (3, True, "an hcg.Layout, a TaskEnv, layout text or None"),
                ("tp=2", False, "an hcg.Layout, a TaskEnv or None")):
            with self.subTest(source=source):
                with self.assertRaises(TypeError) as cm:
                    self.source.resolve_source(source, text=text)  # type: ignore[arg-type]
                self.assertIsInstance(cm.exception, hcg.HcgTypeError)
                self.assertEqual(str(cm.exception), "a layout source is %s, not %s"
                                 % (kinds, type(source).__name__))


def _have_torch() -> bool:
    try:
        import torch.distributed as dist  # noqa: F401
        return dist.is_available()
    except ImportError:
        return False


HAVE_TORCH = _have_torch()
REQUIRE = os.environ.get("HCGTEST_REQUIRE_TORCH") == "1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(scenario: str, world: int, arg: str = "",
            limit: int = 180, job_store: bool = False,
            places: bool = False, fanin: int = 0, wire: str = "") -> List[Dict]:
    """Runs a scenario on `world` local ranks (tests/ranks.py); their
    results, by rank. ``job_store``: on hcg's job store (a random secret)
    instead of a TCPStore; ``places``: also every rank a store of its own,
    where the groups it leads meet (as under PMIx); ``fanin``: HCG_FANIN
    (groups of more than fanin / 4 members meet through relays); ``wire``:
    a directory where each rank records every byte to and from its store
    (HCG_TEST_WIRE: a proxy whose address it publishes)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    port = _free_port()
    env = dict(os.environ)
    env.pop("HCG_LAYOUT", None)
    env.pop("HCG_VERSION", None)
    env.pop("HCG_TEST_JOB_STORE", None)
    env.pop("HCG_TEST_PLACES", None)
    env.pop("HCG_FANIN", None)
    env.pop("HCG_TEST_WIRE", None)
    if wire:
        env["HCG_TEST_WIRE"] = wire
    if fanin:
        env["HCG_FANIN"] = str(fanin)
    # A group that never forms fails with hcg's error, naming it and the
    # ranks, within the job's limit (hcg's default, 300 s, is longer).
    env["HCG_TIMEOUT"] = "60"
    if job_store or places:
        env["HCG_TEST_JOB_STORE"] = os.urandom(16).hex()
    if places:
        env["HCG_TEST_PLACES"] = "1"
    done = ranks.run("tests.torch_worker",
                     [[scenario, str(r), str(world), str(port), arg] for r in range(world)],
                     env, here, limit)
    return ranks.results(done, 2000)


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class BeforeInit(unittest.TestCase):
    """Every call that makes groups, before torch.distributed has a default
    group: one error (hcg.torch._base.require_initialized), naming the
    call, of the kinds torch 1.x and 2.x raise there."""

    def setUp(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            self.skipTest("this test process has a default group")
        self.L = hcg.Layout("vision@0:tp=2,dp=2; llm@0:tp=2,dp=*", 4)
        self.addCleanup(self.L.close)

    def test_one_error_naming_the_call(self) -> None:
        import hcg.torch.groups as groups
        import hcg.torch.megatron as hm

        def grid_pg() -> None:
            with mock.patch.dict(os.environ, {"WORLD_SIZE": "4"}):
                ht.HyperCommGrid([2, 2], ["tp", "dp"]).create_pg("tp")

        calls = [
            ("hcg.torch.GroupFactory", lambda: ht.GroupFactory(self.L)),
            ("hcg.torch.GroupFactory", lambda: ht.new_collection("tp=2,dp=2")),
            ("hcg.torch.GroupFactory", lambda: ht.new_collections(self.L)),
            ("hcg.torch.HyperCommGrid.create_pg", grid_pg),
            ("hcg.torch.megatron.create_topology",
             lambda: hm.create_topology([hm.ModuleGridSpec("language", 4)])),
            ("hcg.torch.ColocatedBridge", lambda: ht.ColocatedBridge(source=self.L)),
            ("hcg.torch.NonColocatedBridge",
             lambda: ht.NonColocatedBridge(source=self.L)),
            ("hcg.torch.groups.build", lambda: groups.build([], 0)),
        ]
        for api, call in calls:
            with self.subTest(api=api):
                with self.assertRaises(ht.NotInitializedError) as cm:
                    call()
                exc = cm.exception
                for kind in (HcgError, hcg.HcgRuntimeError, RuntimeError, ValueError):
                    self.assertIsInstance(exc, kind)
                self.assertEqual(exc.code, Status.EINVAL)
                self.assertEqual(str(exc), "%s: torch.distributed's default process "
                                 "group has not been initialized: call hcg.torch."
                                 "init() first (or torch.distributed."
                                 "init_process_group)" % api)


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class RealTorch(unittest.TestCase):
    """hcg.torch on real torch.distributed (gloo, CPU)."""

    def check_layout(self, layout: str, world: int, groups: int,
                     scenario: str = "collections") -> List[Dict]:
        results = run_job(scenario, world, layout)
        for rank, res in enumerate(results):
            self.assertEqual(res["bad"], [], "rank %d" % rank)
            self.assertGreater(res["checked"], 0)
        self.assertEqual(max(r["groups"] for r in results), groups)
        for res in results:
            # One process group per set of ranks (share_equal), else per key.
            self.assertEqual(res["objects"], res["rank_sets"]
                             if scenario == "collections" else res["groups"])
        return results

    def test_grid_with_expert_view(self):
        self.check_layout("llm:tp=2,cp=2,dp=*,pp=2; "
                          "llm/expert:expt_tp=1,ep=4,expt_dp=*,pp", 8, 17)

    def test_size_one_dims_share_groups(self):
        # cp=1 and gtp_remat=1: dp, dp-cp and dp-cp-gtp_remat hold the
        # same ranks, and expt_dp equals dp. Shared by default, one per key
        # with share_equal=False; both pass every check.
        layout = ("llm:tp=2,gtp_remat=1,cp=1,dp=*,pp=2; "
                  "llm/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=*,pp")
        # 22 keys: the 20 fields of libhcg with gtp_remat and expt_gtp_remat.
        shared = self.check_layout(layout, 8, 22)
        self.assertLess(max(r["objects"] for r in shared), 22)
        self.check_layout(layout, 8, 22, "collections_per_key")

    def test_mimo_non_colocated(self):
        self.check_layout("vision:tp=2,dp=2; llm:tp=2,dp=1,pp=2", 8, 8)

    def test_mimo_colocated(self):
        self.check_layout("vision@0:tp=2,dp=2; llm@0:tp=4,dp=1", 4, 8)

    def test_hyper_comm_grid(self):
        results = run_job("grid", 8)
        r0 = results[0]
        # Megatron's own documented example: get_rank_enum orders the dims
        # (canonical groups), _gen_rank_enum takes them as named.
        self.assertEqual(r0["enum_ab"], [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(r0["raw_ab"], [[0, 2, 1, 3], [4, 6, 5, 7]])
        self.assertEqual(r0["key_ab"], ["b-a"])
        self.assertTrue(r0["same_get"])
        self.assertEqual(r0["ab_sum"], 4.0)
        self.assertIn("already been created", r0["again"])
        self.assertIn("hasn't been created", r0["get_missing"])
        self.assertIn("View 'nope' is not registered", r0["bad_view"])
        self.assertTrue(r0["shared_reused"])
        self.assertEqual(r0["alt_e"], [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertIn("ValueError", r0["shape"])
        self.assertIn("Shared dim 'c' has different membership", r0["shared_size"])
        self.assertIn("is over sized with world size 8", r0["oversized"])
        self.assertEqual([r["part_member"] for r in results], [False] * 4 + [True] * 4)

    def test_node_local(self):
        for rank, res in enumerate(run_job("node_local", 2)):
            self.assertEqual(res["task"], {"tp": rank == 0})
            self.assertEqual(res["layout"], {})
            self.assertEqual(res["task_domain"], {"tp": True})
            self.assertEqual(res["layout_domain"], {})

    def test_bad_input(self):
        for rank, res in enumerate(run_job("errors", 2)):
            self.assertIn("EMISMATCH: the layout is for 4 ranks but the torch "
                          "world has 2", res["world"])
            self.assertIn("EMISMATCH: HCG_RANK=%d but torch.distributed."
                          "get_rank()=%d" % ((rank + 1) % 2, rank), res["rank"])
            self.assertIn("EINVAL: a layout source is", res["type"])
            self.assertIn("options_fn('world:tp') returned colour", res["options"])
            self.assertIn("timeout must be more than 0", res["timeout"])
            self.assertIn("EENV: hcg.torch.init: this process has no hcg layout",
                          res["init"])

    def test_errors_are_builtins_too(self):
        # The same bad input as test_bad_input: each error is also the
        # built-in exception torch code expects.
        for res in run_job("errors", 2):
            self.assertEqual(res["world_is"], ["ValueError"])
            self.assertEqual(res["rank_is"], ["ValueError"])
            self.assertEqual(res["type_is"], ["TypeError"])
            self.assertEqual(res["options_is"], ["ValueError"])
            self.assertEqual(res["timeout_is"], ["ValueError"])
            self.assertEqual(res["init_is"], ["RuntimeError"])

    def test_colocated_bridge_is_a_module(self):
        for rank, res in enumerate(run_job("bridge", 4, "vision@0:tp=1,dp=4; "
                                           "llm@0:tp=2,dp=2")):
            self.assertTrue(res["module"], rank)
            self.assertIn("kind='fan-in', scale=2", res["repr"])
            self.assertTrue(res["forward"], rank)
            self.assertTrue(res["backward"], rank)
            self.assertTrue(res["one_function"], rank)

    def test_member_that_never_arrives(self):
        results = run_job("missing", 4, "3")
        self.assertEqual(results[3], {"skipped": True})
        # Every other rank shares the whole-world group (made first, as the
        # largest) with rank 3, and names it.
        for rank in range(3):
            err = results[rank]["error"]
            self.assertIsNotNone(err, "rank %d" % rank)
            self.assertIn("ETIMEOUT: process group 'world:", err)
            self.assertIn("did not form within 3 s: ranks 3 never arrived", err)

    def test_member_that_never_arrives_host_leaves_at_once(self):
        # Rank 0 hosts the store of the groups it leads, and its process
        # ends as soon as its call fails; the others read the outcome 1 s
        # after they are woken.
        results = run_job("missing_host_leaves", 4, "3", job_store=True)
        self.assertEqual(results[3], {"skipped": True})
        for rank in range(3):
            err = results[rank]["error"]
            self.assertIsNotNone(err, "rank %d" % rank)
            self.assertIn("process group 'world:", err, "rank %d" % rank)
            self.assertIn("ranks 3 never arrived", err, "rank %d" % rank)
            self.assertLess(results[rank]["seconds"], 20, "rank %d" % rank)

    def test_ranks_with_different_numbers_of_groups(self):
        results = run_job("uneven", 4)
        self.assertEqual(results[0]["alone"], 1)
        for rank, res in enumerate(results):
            # Never torch's public members-only call, which names groups
            # after what the process made before.
            self.assertIn(res["way"], ("constructor", "helper"))
            self.assertEqual(res["pair_sum"], 1.0 if rank < 2 else 5.0)
            self.assertEqual(res["pair_rank"], rank % 2)

    def test_member_that_fails_tells_the_others(self):
        check_peer_fails(self, run_job("peer_fails", 4))


def check_peer_fails(tc: unittest.TestCase, results: List[Dict]) -> None:
    """What the peer_fails scenario must give (test_store.py runs it on
    the job store)."""
    tc.assertIn("ETIMEOUT: process group 'world:", results[1]["error"])
    tc.assertIn("did not form within 1 s: ranks 0 never arrived",
                results[1]["error"])
    for rank in (0, 2, 3):
        res = results[rank]
        tc.assertEqual(res["peer"], 1, "rank %d: %s" % (rank, res))
        tc.assertIn("cannot form: rank 1 failed: ETIMEOUT: process "
                    "group 'world:", res["error"])
        tc.assertIn("ranks 0 never arrived", res["error"])
        # At once, not at their own 120 s timeout. On an idle machine a
        # few seconds; a fresh run's three tiers at once (some 3 times more
        # work than CPUs) once took rank 3 41 s, so the bound is the
        # timeout's half, not a measure of the load.
        tc.assertLess(res["seconds"], 60, "rank %d" % rank)


if __name__ == "__main__":
    unittest.main()
