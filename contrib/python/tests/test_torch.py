"""hcg.torch without PyTorch.

PyTorch is not needed to run these tests. They check that the module
imports without torch and fails clearly when used without it; then they
drive it against a small stand-in for torch.distributed that follows the
documented contract of new_subgroups_by_enumeration (every rank passes the
whole enumeration; it returns the subgroup holding the caller, or None,
and the list of all subgroups; overlapping or empty lists are refused) to
check what hcg.torch asks torch to do.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import types
import unittest
from typing import Any, List, Optional

import hcg

NO_TORCH = """
import sys
sys.modules["torch"] = None          # any 'import torch' now fails
import hcg.torch as ht               # must not need torch
assert ht.ATTRIBUTES[:4] == ("tp", "cp", "pp", "dp")
try:
    ht.new_collection("tp=2,dp=2")
except ImportError as exc:
    assert isinstance(exc, ht.TorchUnavailableError), type(exc)
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


# --------------------------------------------------------------------------
# A stand-in for torch.distributed: one process playing each rank in turn.

class FakeGroup:
    def __init__(self, ranks: List[int], desc: Optional[str]) -> None:
        self.ranks = list(ranks)
        self.desc = desc
        self.destroyed = False


class FakeDist(types.ModuleType):
    def __init__(self, world: int) -> None:
        super().__init__("torch.distributed")
        self.world = world
        self.rank = 0
        self.initialized = True
        self.calls: List[Any] = []

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return self.initialized

    def get_world_size(self) -> int:
        return self.world

    def get_rank(self) -> int:
        return self.rank

    def new_subgroups_by_enumeration(self, ranks_per_subgroup_list,
                                     timeout=None, backend=None,
                                     pg_options=None, group_desc=None):
        if not ranks_per_subgroup_list:
            raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
        seen = set()
        mine, every = None, []
        for ranks in ranks_per_subgroup_list:
            if seen & set(ranks):
                raise ValueError("overlapping subgroups")
            seen |= set(ranks)
            group = FakeGroup(ranks, group_desc)
            every.append(group)
            if self.rank in ranks:
                mine = group
        self.calls.append((group_desc, [list(r) for r in ranks_per_subgroup_list],
                           backend, timeout))
        return mine, every

    def destroy_process_group(self, group=None) -> None:
        group.destroyed = True


class FakeTorch:
    """Installs the stand-in as torch / torch.distributed for a test."""

    def __init__(self, world: int) -> None:
        self.dist = FakeDist(world)
        self.torch = types.ModuleType("torch")
        self.torch.distributed = self.dist

    def __enter__(self) -> FakeDist:
        self.saved = {k: sys.modules.get(k) for k in ("torch", "torch.distributed")}
        sys.modules["torch"] = self.torch
        sys.modules["torch.distributed"] = self.dist
        return self.dist

    def __exit__(self, *exc) -> None:
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


EXPERT = "llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp"


class WithAStandIn(unittest.TestCase):

    def setUp(self):
        import hcg.torch

        self.ht = hcg.torch

    def test_collection_matches_libhcg(self):
        with FakeTorch(16) as dist, hcg.Layout(EXPERT, 16) as L:
            per_rank_calls = []
            for rank in range(16):
                dist.rank, dist.calls = rank, []
                pgs = self.ht.new_collection(L, backend="nccl")
                per_rank_calls.append(dist.calls)
                want = L.collection("llm", rank)
                for field in hcg.FIELDS:
                    group = getattr(pgs, field)
                    if want[field] is None:
                        self.assertIsNone(group, field)
                        self.assertIsNone(pgs.keys[field])
                        continue
                    self.assertEqual(group.ranks, want[field].members, field)
                    self.assertEqual(group.desc, want[field].key)
                    self.assertEqual(pgs.keys[field], want[field].key)
                    self.assertEqual(pgs.ranks[field], want[field].members)
                for kind in hcg.EMBEDDINGS:
                    want_embd = L.embedding_group(rank, kind)
                    self.assertEqual(pgs.ranks[kind], want_embd)
                    got = getattr(pgs, kind)
                    self.assertEqual(got and got.ranks, want_embd)
                # Aliases and equal keys are one object.
                self.assertIs(pgs.intra_dp_cp, pgs.dp_cp)
                self.assertIs(pgs.intra_expt_dp, pgs.expt_dp)
                self.assertIs(pgs.dp_cp_gtp_remat, pgs.dp_cp)
                self.assertIs(pgs["tp_ep_pp_with_egtp_remat"], pgs.tp_ep_pp)
            # Every rank made the same calls, in the same order, one per key,
            # each with the whole enumeration.
            first = per_rank_calls[0]
            self.assertTrue(all(calls == first for calls in per_rank_calls))
            keys = [c[0] for c in first]
            self.assertEqual(len(keys), len(set(keys)))
            for key, enumeration, backend, _ in first:
                self.assertEqual(backend, "nccl")
                if "#" in key:
                    kind = key.split("#")[1]
                    self.assertEqual(enumeration, L.embedding_groups(kind))
                else:
                    spec = self.spec(key)
                    self.assertEqual(L.request(spec).key, key)
                    self.assertEqual(enumeration, L.enumerate(spec))

    @staticmethod
    def spec(key: str) -> str:
        """The spec of a group key ('llm/expert:ep-expt_tp' ->
        'llm/expert:ep,expt_tp')."""
        head, dims = key.split(":")
        return head + ":" + dims.replace("-", ",")

    def test_mimo_non_members_get_none(self):
        layout = "vision:tp=2,pp=2,dp=2; llm:tp=2,dp=*"
        with FakeTorch(16) as dist, hcg.Layout(layout, 16) as L:
            dist.rank = 3
            all_pgs = self.ht.new_collections(L)
            self.assertEqual(list(all_pgs), ["vision", "llm"])
            self.assertEqual(all_pgs["vision"].tp.ranks, [2, 3])
            self.assertIsNone(all_pgs["vision"].embd)
            self.assertTrue(all(v is None
                                for v in all_pgs["llm"].as_dict().values()))
            self.assertEqual(all_pgs["llm"].keys["embd"], "llm#embd")
            dist.rank = 9
            pgs = self.ht.new_collections(L)["llm"]
            self.assertEqual(pgs.dp.ranks, [9, 11, 13, 15])
            self.assertEqual(pgs.pos_embd.ranks, [9])

    def test_factory_dedup_options_and_destroy(self):
        with FakeTorch(8) as dist, hcg.Layout("tp=2,dp=4", 8) as L:
            dist.rank = 5
            seen = []

            def options(key):
                seen.append(key)
                return {"timeout": 7} if key == "world:tp" else {}

            f = self.ht.GroupFactory(L, options_fn=options)
            tp = f.group("world:tp")
            self.assertIs(f.group("tp"), tp)
            self.assertIs(f.collection().tp, tp)
            self.assertEqual(seen.count("world:tp"), 1)
            self.assertEqual(dist.calls[0][3], 7)
            f.destroy()
            self.assertTrue(tp.destroyed)
            self.assertEqual(f.keys(), [])

    def test_refusals(self):
        with FakeTorch(8) as dist, hcg.Layout("tp=2,dp=4", 8) as L:
            dist.initialized = False
            with self.assertRaises(hcg.HcgError) as cm:
                self.ht.new_collection(L)
            self.assertIn("init_process_group", str(cm.exception))
            dist.initialized = True
            dist.world = 16
            with self.assertRaises(hcg.HcgError) as cm:
                self.ht.new_collection(L)
            self.assertEqual(cm.exception.code, hcg.Status.EMISMATCH)

    def test_from_the_environment_checks_the_rank(self):
        with hcg.Layout("tp=2,dp=4", 8) as L:
            fake = L.env(5)
        with FakeTorch(8) as dist:
            dist.rank = 4
            task = hcg.env.from_environ(fake)
            with self.assertRaises(hcg.HcgError) as cm:
                self.ht.new_collection(task)
            self.assertIn("HCG_RANK=5", str(cm.exception))
            dist.rank = 5
            self.assertEqual(self.ht.new_collection(task).tp.ranks, [4, 5])
            task.close()

    def test_to_megatron(self):
        @dataclasses.dataclass
        class PGC:  # the shape of Megatron's ProcessGroupCollection
            tp: Any = dataclasses.field(init=False)
            dp: Any = dataclasses.field(init=False)
            cp: Any = dataclasses.field(init=False)
            embd: Any = dataclasses.field(init=False)
            hcp: Any = dataclasses.field(init=False)

            def __init__(self, **kwargs):
                names = {f.name for f in dataclasses.fields(self)}
                for k, v in kwargs.items():
                    if k not in names:
                        raise ValueError(k)
                    setattr(self, k, v)

        with FakeTorch(8) as dist, hcg.Layout("tp=2,dp=2,pp=2", 8) as L:
            dist.rank = 1
            pgc = self.ht.new_collection(L).to_megatron(PGC)
            self.assertEqual(pgc.tp.ranks, [0, 1])
            self.assertIsNone(pgc.cp)  # not provided: explicitly None
            self.assertEqual(pgc.embd.ranks, [1, 5])
            self.assertFalse(hasattr(pgc, "hcp"))  # unknown to hcg: unset


if __name__ == "__main__":
    unittest.main()
