"""Megatron-LM's own contract, kept by hcg (issue 21).

* ``hcg.torch.HyperCommGrid`` is built and enumerates with no process group
  (world size from WORLD_SIZE), raises Megatron's exception types with the
  texts Megatron's tests match, takes torch's keyword arguments in
  create_pg, and frees only this rank's groups;
* ``hcg layout --megatron ARGS -n N`` and ``hcg.torch.megatron_args`` round
  trip (arguments -> layout -> sizes) for one model, experts and MIMO, and
  ``check_megatron_args`` names each argument that disagrees;
* ``to_megatron()`` and the MIMO topology fill every field of Megatron
  main's ProcessGroupCollection, as listed in megatron_process_groups.txt
  (kept here, from Megatron-LM d98e8a6).

The tests that need no process group run in this process, on every torch
and without one. Those that make groups run local jobs (tests/megatron_worker.py,
gloo on a FileStore).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
from typing import Any, Dict, Iterator, List, Optional, Tuple

import hcg
import hcg.megatron as hmeg
import hcg.torch as ht
from hcg.torch import megatron as hm

import ranks
import support
from test_torch import HAVE_TORCH, REQUIRE

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS_FILE = os.path.join(HERE, "megatron_process_groups.txt")


def description() -> List[Tuple[str, Optional[str], Optional[List[str]]]]:
    """Megatron's ProcessGroupCollection fields as the project keeps them:
    (field, view or 'embedding' or None for the base, dims or None)."""
    out = []
    with open(FIELDS_FILE) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            name, *rest = line.split()
            if rest == ["none"]:
                out.append((name, None, None))
            elif rest[0] == "embedding":
                out.append((name, "embedding", rest[1:]))
            elif rest[0] == "E:":
                out.append((name, "expert", rest[1:]))
            else:
                out.append((name, "base", rest))
    return out


@contextlib.contextmanager
def world_size(value: Optional[str]) -> Iterator[None]:
    old = os.environ.get("WORLD_SIZE")
    if value is None:
        os.environ.pop("WORLD_SIZE", None)
    else:
        os.environ["WORLD_SIZE"] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("WORLD_SIZE", None)
        else:
            os.environ["WORLD_SIZE"] = old


def run_job(scenario: str, world: int, arg: str = "", limit: int = 240) -> List[Dict]:
    """Runs a megatron_worker scenario on `world` local ranks
    (tests/ranks.py)."""
    parent = os.path.dirname(HERE)
    env = dict(os.environ)
    for k in ("HCG_LAYOUT", "HCG_VERSION", "WORLD_SIZE", "RANK"):
        env.pop(k, None)
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        done = ranks.run("tests.megatron_worker",
                         [[scenario, str(r), str(world), store, arg] for r in range(world)],
                         env, parent, limit)
    return ranks.results(done, 3000)


def expected(layout: hcg.Layout, grid: str, view: str, dims: List[str],
             rank: int) -> Optional[Dict[str, int]]:
    """What megatron_worker.members() reports for a group of the layout."""
    if not layout.grid(grid).contains(rank):
        return None
    g = layout.group_of_rank(layout.request_dims(dims, grid, view), rank)
    return {"size": len(g.members), "rank": g.index, "sum": sum(g.members)}


def expected_embedding(layout: hcg.Layout, kind: str, rank: int) -> Optional[Dict[str, int]]:
    m = layout.embedding_group(rank, kind)
    if m is None:
        return None
    return {"size": len(m), "rank": m.index(rank), "sum": sum(m)}


def assert_error(test: unittest.TestCase, err: Dict[str, Any], builtin: str,
                 text: str) -> None:
    test.assertIn(builtin, err["types"], err)
    test.assertIn("HcgError", err["types"], err)
    test.assertIn(text, err["message"])


# ---------------------------------------------------------------------------

class GridWithoutProcessGroup(unittest.TestCase):
    """HyperCommGrid before torch.distributed starts (this process never
    starts it)."""

    def grid(self, shape, names, offset=0, world="8"):
        with world_size(world):
            return ht.HyperCommGrid(shape, names, offset)

    def raises(self, builtin: type, text: str, call) -> BaseException:
        with self.assertRaises(builtin) as cm:
            call()
        self.assertIsInstance(cm.exception, hcg.HcgError)
        self.assertIn(text, str(cm.exception))
        return cm.exception

    def test_world_size_from_environment(self):
        g = self.grid([2, 2, 2], ["tp", "cp", "dp"])
        self.assertEqual((g.shape, g.dim_names, g.rank_offset, g.backend, g.size),
                         ([2, 2, 2], ["tp", "cp", "dp"], 0, None, 8))
        self.assertEqual(g._pgs, {})
        self.assertEqual(g.world, 8)
        with world_size("120"):
            self.assertEqual(ht.HyperCommGrid([2, 3, 4, 5], ["tp", "cp", "pp", "dp"]).size, 120)

    def test_no_world_size(self):
        # WORLD_SIZE unset and torch.distributed not started: Megatron's
        # RuntimeError.
        with world_size(None):
            err = self.raises(RuntimeError, "Cannot determine world size",
                              lambda: ht.HyperCommGrid([2], ["tp"]))
        self.assertIn("WORLD_SIZE", str(err))
        for bad in ("", "eight", "0", "-8"):
            with world_size(bad):
                self.raises(ValueError, "WORLD_SIZE=", lambda: ht.HyperCommGrid([2], ["tp"]))

    def test_constructor_errors(self):
        # In Megatron's order and words: lengths first, then the offset,
        # then the size against the world.
        self.raises(ValueError, "len(shape) [2, 2] != len(dim_names) ['tp']",
                    lambda: self.grid([2, 2], ["tp"]))
        self.raises(ValueError, "rank_offset must be non-negative, got -1",
                    lambda: self.grid([2], ["tp"], -1))
        err = self.raises(RuntimeError, "Grid shape [4, 4] is over sized with "
                          "world size 8 and rank offset 0",
                          lambda: self.grid([4, 4], ["tp", "dp"]))
        self.assertEqual(err.name, "ELAYOUT")
        self.raises(RuntimeError, "is over sized with world size 8 and rank offset 4",
                    lambda: self.grid([2, 4], ["tp", "dp"], 4))
        self.raises(ValueError, "shape must be positive ints, got [2, 0]",
                    lambda: self.grid([2, 0], ["tp", "dp"]))
        self.raises(ValueError, "duplicate dim_names",
                    lambda: self.grid([2, 2], ["tp", "tp"]))

    def test_numpy_integers(self):
        try:
            import numpy as np
        except ImportError:
            if REQUIRE:  # torch brings numpy
                raise
            self.skipTest("no numpy in this interpreter")
        g = self.grid([np.int64(2), np.int32(4)], ["tp", "dp"], np.int64(0))
        self.assertEqual(g.shape, [2, 4])
        self.assertEqual(g.get_rank_enum("tp"), [[0, 1], [2, 3], [4, 5], [6, 7]])
        self.assertIs(type(g.get_rank_enum("tp")[0][0]), int)
        g = self.grid([2, 2], ["tp", "dp"], np.int64(4))
        self.assertEqual(g.get_rank_enum("tp"), [[4, 5], [6, 7]])
        g.register_view("expert", [np.int64(4)], ["ep"])
        self.assertEqual(g.get_rank_enum("ep", view="expert"), [[4, 5, 6, 7]])

    def test_enumerations(self):
        # doc/semantics.md section 2, and the dims' order never matters.
        g = self.grid([2, 2, 2], ["tp", "cp", "dp"])
        self.assertEqual(g.get_rank_enum(["tp", "cp"]), [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(g.get_rank_enum(["cp", "tp"]), [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(g.get_rank_enum("dp"), [[0, 4], [1, 5], [2, 6], [3, 7]])
        g = self.grid([2, 3, 4], ["tp", "cp", "dp"], world="24")
        self.assertEqual(g.get_rank_enum(["dp", "tp"]),
                         [[0, 1, 6, 7, 12, 13, 18, 19], [2, 3, 8, 9, 14, 15, 20, 21],
                          [4, 5, 10, 11, 16, 17, 22, 23]])
        g = self.grid([2, 2, 2], ["tp", "cp", "dp"], 3, world="11")
        self.assertEqual(g.get_rank_enum("dp"), [[3, 7], [4, 8], [5, 9], [6, 10]])
        g = self.grid([1, 2, 4], ["tp", "cp", "dp"])
        self.assertEqual(g.get_rank_enum("tp"), [[r] for r in range(8)])

    def test_megatron_private_helpers(self):
        # What Megatron's own tests read: the unsorted enumeration of dims
        # as named, the dims' order and key.
        g = self.grid([2, 2, 2], ["a", "b", "c"])
        self.assertEqual(g._gen_rank_enum(["a", "b"]), [[0, 2, 1, 3], [4, 6, 5, 7]])
        self.assertEqual(g._gen_rank_enum(["c"]), [[0, 4], [1, 5], [2, 6], [3, 7]])
        self.assertEqual(g._order_dims_for(g.dim_names, ["a", "c"]), (["c", "a"], "c-a"))
        self.assertEqual(g._order_dims_for(g.dim_names, "b"), (["b"], "b"))

    def test_views(self):
        g = self.grid([2, 2, 2], ["tp", "dp", "pp"])
        shape, names = [2, 2, 2], ["expt_tp", "ep", "pp"]
        self.assertIsNone(g.register_view("expert", shape, names, shared_dims=["pp"]))
        v = g._views["expert"]
        self.assertEqual((v.name, v.shape, v.dim_names, v.shared_dims),
                         ("expert", shape, names, ["pp"]))
        self.assertIsNot(v.shape, shape)
        self.assertEqual(g.get_rank_enum("pp", view="expert"), g.get_rank_enum("pp"))
        self.assertEqual(g.get_rank_enum(["expt_tp", "ep"], view="expert"),
                         [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(g.get_rank_enum("ep", view="expert"),
                         [[0, 2], [1, 3], [4, 6], [5, 7]])
        # View dims are the view's alone.
        self.raises(ValueError, "'ep' is not in view 'base' with dim_names",
                    lambda: g.get_rank_enum("ep"))
        self.raises(KeyError, "View 'nope' is not registered. Registered views: "
                    "['base', 'expert']", lambda: g.get_rank_enum("tp", view="nope"))

    def test_view_errors(self):
        # Megatron's checks, in its order, with its words.
        g = self.grid([2, 2, 2], ["tp", "dp", "pp"])
        g.register_view("expert", [2, 2, 2], ["expt_tp", "ep", "pp"], shared_dims=["pp"])
        cases = [
            ("View 'expert' is already registered", ("expert", [8], ["x"])),
            ("View 'base' is already registered", ("base", [8], ["x"])),
            ("len(shape) [2, 4] != len(dim_names) ['ep']", ("v", [2, 4], ["ep"])),
            ("View 'v' has duplicate dim_names", ("v", [2, 4], ["ep", "ep"])),
            ("View 'v' shape must be positive ints, got [8, 0]", ("v", [8, 0], ["a", "b"])),
            ("View 'v' shape must be positive ints", ("v", [-1, 8], ["a", "b"])),
            ("View 'v' shape [2, 2] has size 4, but the grid size is 8",
             ("v", [2, 2], ["a", "b"])),
            ("View 'v' has duplicate shared_dims", ("v", [4, 2], ["ep", "pp"], ["pp", "pp"])),
            ("Shared dim 'cp' of view 'v' is not in the base view",
             ("v", [4, 2], ["ep", "cp"], ["cp"])),
            ("Shared dim 'pp' of view 'v' is not in the view's dim_names",
             ("v", [4, 2], ["ep", "x"], ["pp"])),
            ("Shared dim 'pp' has different membership across views: base "
             "enumeration [[0, 4], [1, 5], [2, 6], [3, 7]] != view 'v' enumeration "
             "[[0, 1], [2, 3], [4, 5], [6, 7]]", ("v", [2, 4], ["pp", "ep"], ["pp"])),
            ("Shared dim 'pp' has different membership", ("v", [2, 4], ["ep", "pp"], ["pp"])),
        ]
        for text, args in cases:
            with self.subTest(text):
                self.raises(ValueError, text, lambda: g.register_view(*args))
        self.assertEqual(sorted(g._views), ["base", "expert"])

    def test_groups_need_a_process_group(self):
        g = self.grid([2, 4], ["tp", "dp"])
        self.raises(KeyError, "Process group for tp hasn't been created",
                    lambda: g.get_pg("tp"))
        g.register_view("expert", [8], ["ep"])
        self.raises(KeyError, "Process group 'ep' for view 'expert' hasn't been created",
                    lambda: g.get_pg("ep", view="expert"))
        if not (HAVE_TORCH or REQUIRE):
            self.skipTest("no torch in this interpreter")
        err = self.raises(RuntimeError, "default process group has not been initialized",
                          lambda: g.create_pg("tp"))
        self.assertIsInstance(err, ValueError)  # what torch 2.x raises there
        self.assertEqual(g._pgs, {})
        g.destroy()  # nothing made: nothing to free


NO_TORCH = """
import os, sys
sys.modules["torch"] = None
os.environ["WORLD_SIZE"] = "8"
import hcg, hcg.torch as ht
g = ht.HyperCommGrid([2, 4], ["tp", "dp"])
g.register_view("expert", [8], ["ep"])
assert g.get_rank_enum("ep", view="expert") == [list(range(8))]
try:
    g.create_pg("tp")
except ImportError as exc:
    assert isinstance(exc, ht.TorchUnavailableError)
else:
    raise SystemExit("create_pg without torch")
m = ht.megatron_args(hcg.Layout("world:tp=2,dp=2,pp=2; world/expert:ep=4,pp", 8))
assert (m.tensor_model_parallel_size, m.expert_model_parallel_size) == (2, 4), m
import hcg.megatron as hmeg
L = hmeg.megatron_layout("--tensor-model-parallel-size 2", 4)
assert hmeg.megatron_args(L).data_parallel_size == 2, L
assert "torch" not in [k for k, v in sys.modules.items() if v is not None]
print("ok")
"""


class WithoutTorch(unittest.TestCase):

    def test_grid_and_arguments_need_no_torch(self):
        proc = subprocess.run([sys.executable, "-c", NO_TORCH], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), "ok")


# ---------------------------------------------------------------------------

class MegatronArguments(unittest.TestCase):
    """hcg layout --megatron ARGS -n N and back (no torch needed)."""

    def layout(self, args: str, world: int, *extra: str) -> str:
        return support.cli("layout", "--megatron", args, "-n", str(world),
                           *extra).stdout.strip()

    def round_trip(self, args: str, world: int, layout: str,
                   values: Dict[str, Any], *extra: str) -> ht.MegatronArgs:
        got = self.layout(args, world, *extra)
        self.assertEqual(got, layout)
        # Python's is the command's: the library computes both.
        names = {"encoder_name": extra[1]} if extra else {}
        with hmeg.megatron_layout(args, world, **names) as L:
            self.assertEqual(L.text, layout)
        with hmeg.megatron_layout(args.split(), world, **names) as L:
            self.assertEqual(L.text, layout)
        m = ht.megatron_args(hcg.Layout(got, world))
        for k, v in values.items():
            self.assertEqual(m.values.get(k), v, k)
        # and back: the sizes as Megatron's options give the same layout
        self.assertEqual(self.layout(" ".join(m.argv()), world, *extra), layout)
        return m

    def test_one_model(self):
        m = self.round_trip(
            "--num-layers 24 --tensor-model-parallel-size 2 --bf16 "
            "--pipeline-model-parallel-size 2 --seq-length 4096", 16,
            "world@0:tp=2,gtp_remat=1,cp=1,dp=4,pp=2;"
            "world/expert:expt_tp=2,ep=1,expt_gtp_remat=1,expt_dp=4,pp",
            {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2,
             "context_parallel_size": 1, "data_parallel_size": 4,
             "expert_model_parallel_size": 1, "expert_tensor_parallel_size": 2,
             "use_tp_pp_dp_mapping": False, "world_size": 16})
        self.assertFalse(m.mimo)
        self.assertEqual(m.modules["world"].dp, 4)

    def test_experts_and_order(self):
        self.round_trip(
            "--tensor-model-parallel-size=2 --context-parallel-size 2 "
            "--expert-model-parallel-size 4 --expert-tensor-parallel-size 1", 32,
            "world@0:tp=2,gtp_remat=1,cp=2,dp=8,pp=1;"
            "world/expert:expt_tp=1,ep=4,expt_gtp_remat=1,expt_dp=8,pp",
            {"expert_model_parallel_size": 4, "expert_tensor_parallel_size": 1,
             "data_parallel_size": 8})
        # --use-tp-pp-dp-mapping: Megatron's order tp-cp-ep-pp-dp.
        self.round_trip(
            "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
            "--use-tp-pp-dp-mapping --expert-model-parallel-size 2 "
            "--expert-tensor-parallel-size 1", 16,
            "world@0:tp=2,gtp_remat=1,cp=1,pp=2,dp=4;"
            "world/expert:expt_tp=1,ep=2,expt_gtp_remat=1,pp,expt_dp=4",
            {"use_tp_pp_dp_mapping": True, "data_parallel_size": 4})
        # The order really is Megatron's: pp groups stride tp*cp, not the world.
        with hcg.Layout(self.layout("--tensor-model-parallel-size 2 "
                                    "--pipeline-model-parallel-size 2 "
                                    "--use-tp-pp-dp-mapping", 8), 8) as L:
            self.assertEqual(L.enumerate("world:pp"), [[0, 2], [1, 3], [4, 6], [5, 7]])
            self.assertEqual(L.enumerate("world:dp"), [[0, 4], [1, 5], [2, 6], [3, 7]])

    def test_gtp_remat(self):
        self.round_trip(
            "--tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 4 "
            "--expert-model-parallel-size 2 --expert-tensor-parallel-size 1 "
            "--expert-tensor-parallel-num-weight-shards 2", 16,
            "world@0:tp=2,gtp_remat=2,cp=1,dp=4,pp=1;"
            "world/expert:expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=4,pp",
            {"gtp_weight_remat_size": 2, "tensor_parallel_num_weight_shards": 4,
             "expert_gtp_weight_remat_size": 2,
             "expert_tensor_parallel_num_weight_shards": 2, "data_parallel_size": 4})

    def test_mimo(self):
        m = self.round_trip(
            "--encoder-tp 2 --encoder-dp 2 --llm-offset 4 --llm-tp 2 --llm-dp 2 "
            "--num-experts 8 --llm-ep 2", 8,
            "radio_encoder@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=1;"
            "radio_encoder/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=4,pp;"
            "language@4:tp=2,gtp_remat=1,cp=1,dp=2,pp=1;"
            "language/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=2,pp",
            {"encoder_tp": 2, "encoder_dp": 2, "llm_offset": 4, "llm_tp": 2,
             "llm_dp": 2, "llm_ep": 2, "llm_expt_tp": 1, "llm_only": False},
            "--encoder-name", "radio_encoder")
        self.assertTrue(m.mimo)
        # Megatron's example defaults: 2+2 encoder ranks, language at 4.
        self.assertEqual(self.layout("--encoder-tp 2", 8),
                         self.layout("--encoder-tp 2 --encoder-dp 2 --llm-offset 4 "
                                     "--llm-tp 2 --llm-cp 1 --llm-pp 1 --llm-dp 2", 8))
        # Colocated: equal spans.
        self.round_trip(
            "--encoder-tp 4 --encoder-dp 2 --llm-offset 0 --llm-tp 2 --llm-dp 4", 8,
            "encoder@0:tp=4,gtp_remat=1,cp=1,dp=2,pp=1;"
            "encoder/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=8,pp;"
            "language@0:tp=2,gtp_remat=1,cp=1,dp=4,pp=1;"
            "language/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=8,pp",
            {"encoder_tp": 4, "encoder_dp": 2, "llm_offset": 0, "llm_dp": 4})
        self.round_trip(
            "--llm-only --llm-offset 0 --llm-tp 2 --llm-pp 2 --llm-dp 2 --llm-ep 2", 8,
            "language@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=2;"
            "language/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=2,pp",
            {"llm_only": True, "llm_pp": 2})

    def test_bad_arguments(self):
        cases = [
            ("--tensor-model-parallel-size two", 8, "column 30: --tensor-model-parallel-size "
             "wants an integer, got 'two'"),
            ("--bf16 --tensor-model-parallel-size", 8, "column 8: "
             "--tensor-model-parallel-size needs a value"),
            ("--pipeline-model-parallel-size 0", 8, "wants a positive integer, got 0"),
            ("--tensor-model-parallel-size 3", 8, "the world of 8 ranks is not divisible "
             "by tp*gtp_remat*cp*pp = 3 (--tensor-model-parallel-size 3)"),
            ("--expert-model-parallel-size 3", 8, "not divisible by "
             "expt_tp*ep*expt_gtp_remat*pp = 3"),
            ("--tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 3", 8,
             "--tensor-parallel-num-weight-shards 3 must be a multiple of "
             "--tensor-model-parallel-size 2"),
            ("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--use-tp-pp-dp-mapping --expert-model-parallel-size 4", 16,
             "needs the experts' data-parallel size (1) to equal the data-parallel size (4)"),
            ("--use-tp-pp-dp-mapping=yes", 8, "is a flag and takes no value"),
            ("--model-parallel-size 2", 8, "Megatron's old argument"),
            ("--num-distributed-optimizer-instances 2", 8, "one distributed-optimizer instance"),
            ("--encoder-tp 2 --llm-offset 2", 8, "must either fully share ranks or be "
             "disjoint: encoder [0, 4), language [2, 6)"),
            ("--encoder-tp 2 --llm-offset 5", 9, "must cover the world [0, 9) with no gaps"),
            ("--llm-only --llm-offset 4", 8, "--llm-only needs --llm-offset 0"),
            ("--llm-tp 4 --llm-dp 4", 8, "does not fit the world of 8 ranks"),
            ("--llm-offset -1", 8, "wants an integer of at least 0, got -1"),
        ]
        for args, world, text in cases:
            with self.subTest(args):
                proc = support.cli("layout", "--megatron", args, "-n", str(world),
                                   check=False)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertIn("hcg: megatron arguments: ", proc.stderr)
                self.assertIn(text, proc.stderr)
                # The same error from Python, with its column.
                with self.assertRaises(hmeg.MegatronError) as caught:
                    hmeg.megatron_layout(args, world)
                self.assertIsInstance(caught.exception, ValueError)
                self.assertEqual(proc.stderr, "hcg: %s\n" % caught.exception)
                if "column" in text:
                    self.assertEqual(caught.exception.column,
                                     int(text.split()[1].rstrip(":")))
        proc = support.cli("layout", "--megatron", "--tensor-model-parallel-size 2",
                           check=False)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("-n N is needed", proc.stderr)

    def test_one_table_of_arguments(self):
        table = hmeg.arguments()
        dests = [a.dest for a in table]
        self.assertEqual(len(set(dests)), len(dests))
        for a in table:
            if a.kind == hmeg.DERIVED:
                self.assertIsNone(a.option, a)
            else:
                self.assertEqual(a.option, "--" + a.dest.replace("_", "-"))
        self.assertEqual([a.dest for a in table if a.scope == hmeg.MIMO],
                         ["encoder_tp", "encoder_dp", "llm_offset", "llm_tp", "llm_cp",
                          "llm_pp", "llm_dp", "llm_ep", "llm_expt_tp", "llm_only"])
        # Every value MegatronArgs holds is an argument of the table.
        for args, world in (("--tensor-model-parallel-size 2 --use-tp-pp-dp-mapping "
                             "--pipeline-model-parallel-size 2", 8),
                            ("--encoder-tp 2 --llm-offset 4", 8)):
            with hmeg.megatron_layout(args, world) as L:
                m = hmeg.megatron_args(L)
            self.assertLessEqual(set(m.values), set(dests))
        self.assertIs(ht.megatron_args, hmeg.megatron_args)
        self.assertIs(hm.MegatronError, hmeg.MegatronError)

    def test_warnings_and_bad_calls(self):
        with self.assertWarns(hmeg.MegatronWarning) as caught:
            hmeg.megatron_layout("--tensor-model-parallel-size 4 --encoder-tp 2", 8).close()
        self.assertIn("--tensor-model-parallel-size is not used with Megatron's MIMO "
                      "arguments", str(caught.warning))
        with self.assertRaises(hmeg.MegatronError) as bad:
            hmeg.megatron_layout("", 0)
        self.assertEqual(bad.exception.code, hcg.Status.EINVAL)
        with self.assertRaises(hcg.HcgTypeError):
            hmeg.megatron_layout("", "8")  # type: ignore[arg-type]
        with self.assertRaises(hmeg.MegatronError):
            hmeg.megatron_layout("--llm-tp 2\0", 8)
        with self.assertRaises(hmeg.MegatronError) as bad:
            hmeg.megatron_layout("--encoder-tp 2", 8, encoder_name="Radio")
        self.assertIn("the layout of these arguments is refused", str(bad.exception))

    def test_sizes_from_the_task_environment(self):
        layout = self.layout("--tensor-model-parallel-size 2 "
                             "--pipeline-model-parallel-size 2", 8)
        for rank in (0, 5):
            env = dict(support.cli_env(8, layout, rank))
            with hcg.env.from_environ(env) as task:
                m = ht.megatron_args(task)
            self.assertEqual((m.tensor_model_parallel_size, m.data_parallel_size), (2, 2))

    def test_check_arguments(self):
        layout = hcg.Layout(self.layout("--tensor-model-parallel-size 2 "
                                        "--pipeline-model-parallel-size 2 "
                                        "--expert-model-parallel-size 2", 16), 16)
        good = argparse.Namespace(
            tensor_model_parallel_size=2, pipeline_model_parallel_size=2,
            context_parallel_size=1, expert_model_parallel_size=2,
            expert_tensor_parallel_size=None, tensor_parallel_num_weight_shards=None,
            use_tp_pp_dp_mapping=False, num_layers=24, hidden_size=1024)
        self.assertIsInstance(ht.check_megatron_args(good, layout), ht.MegatronArgs)
        # After Megatron's validate_args the derived sizes are there too.
        ht.check_megatron_args(dict(vars(good), expert_tensor_parallel_size=2,
                                    data_parallel_size=4, world_size=16,
                                    tensor_parallel_num_weight_shards=2,
                                    gtp_weight_remat_size=1), layout)
        bad = argparse.Namespace(**dict(vars(good), tensor_model_parallel_size=4,
                                        use_tp_pp_dp_mapping=True))
        with self.assertRaises(ValueError) as cm:
            ht.check_megatron_args(bad, layout)
        err = cm.exception
        self.assertIsInstance(err, ht.MegatronError)
        self.assertEqual(err.name, "EMISMATCH")
        self.assertIn("--tensor-model-parallel-size is 4, but grid 'world' has tp=2",
                      err.message)
        self.assertIn("--use-tp-pp-dp-mapping is given, but grid 'world' orders pp "
                      "after dp", err.message)
        self.assertIn("--expert-tensor-parallel-size is 4, but grid 'world' has "
                      "expt_tp=2", err.message)  # None: Megatron's default, tp
        self.assertIn(layout.text, err.message)

    def test_check_mimo_arguments(self):
        layout = hcg.Layout(self.layout("--encoder-tp 2 --encoder-dp 2 --llm-offset 4 "
                                        "--llm-tp 2 --llm-dp 2", 8), 8)
        args = argparse.Namespace(
            encoder_tp=2, encoder_dp=2, llm_offset=4, llm_tp=2, llm_cp=1, llm_pp=1,
            llm_dp=2, llm_ep=1, llm_expt_tp=None, llm_only=False,
            tensor_model_parallel_size=1)  # Megatron's stock default, unused
        ht.check_megatron_args(args, layout)
        args.llm_dp, args.encoder_tp = 4, 1
        with self.assertRaises(ht.MegatronError) as cm:
            ht.check_megatron_args(args, layout)
        self.assertIn("--llm-dp is 4, but grid 'language' has dp=2", str(cm.exception))
        self.assertIn("--encoder-tp is 1, but grid 'encoder' has tp=2", str(cm.exception))

    def test_layouts_megatron_cannot_build(self):
        cases = [
            ("dp=4,tp=2", 8, None, "grid 'world' orders its dims dp,tp"),
            ("tp=2,ep=4", 8, None, "grid 'world' has dim 'ep'"),
            ("a:tp=2,dp=2; b:tp=4", 8, "a", "grid named 'language'"),
            ("llm:tp=2,pp=2,dp=2; llm/expert:ep=4,pp=2", 8, None, "does not share pp"),
        ]
        for text, world, language, message in cases:
            with self.subTest(text), hcg.Layout(text, world, language) as L:
                with self.assertRaises(ht.MegatronError) as cm:
                    ht.megatron_args(L)
                self.assertIn(message, str(cm.exception))
                self.assertIsInstance(cm.exception, ValueError)
        # A layout without an expert view: no expert sizes to compare.
        m = ht.megatron_args(hcg.Layout("tp=2,cp=2,dp=*", 8))
        self.assertEqual(m.expert_model_parallel_size, 1)
        self.assertNotIn("expert_tensor_parallel_size", m.values)
        self.assertNotIn("use_tp_pp_dp_mapping", m.values)


class DescriptionOfMegatron(unittest.TestCase):
    """The fields hcg knows are Megatron main's, as kept in the project."""

    def test_stand_in_has_megatron_fields(self):
        import dataclasses
        names = [n for n, _, _ in description()]
        self.assertEqual(len(names), 27)
        self.assertEqual(list(hm.PROCESS_GROUP_COLLECTION_FIELDS), names)
        self.assertEqual([f.name for f in dataclasses.fields(hm.ProcessGroupCollection)],
                         names)
        made = hm.ProcessGroupCollection(tp=None)
        self.assertIsNone(made.hcp)
        self.assertNotIn("hcp", vars(made))
        with self.assertRaises(ValueError):
            hm.ProcessGroupCollection(colour=1)
        # What hcg does not make is named, with its reason.
        self.assertEqual(sorted(ht.collection.NOT_MADE),
                         sorted(n for n, v, _ in description() if v is None))

    def test_megatron_itself(self):
        try:
            from megatron.core.process_groups_config import ProcessGroupCollection
        except ImportError:
            self.skipTest("Megatron-LM is not importable here")
        import dataclasses
        self.assertEqual([f.name for f in dataclasses.fields(ProcessGroupCollection)],
                         [n for n, _, _ in description()])


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class WithProcessGroups(unittest.TestCase):
    """HyperCommGrid, to_megatron() and the MIMO topology on real groups."""

    def test_grid_contract(self):
        results = run_job("grid_contract", 8)
        tp = [[0, 1], [2, 3], [4, 5], [6, 7]]
        for rank, r in enumerate(results):
            mine = [g for g in tp if rank in g][0]
            self.assertEqual(r["enum_before"], [[0, 1, 2, 3], [4, 5, 6, 7]])
            assert_error(self, r["before_init"], "RuntimeError",
                         "default process group has not been initialized")
            self.assertIn("ValueError", r["before_init"]["types"])
            self.assertEqual(r["tp"], {"size": 2, "rank": mine.index(rank), "sum": sum(mine)})
            self.assertTrue(r["tp_get_same"])
            assert_error(self, r["again"], "KeyError", "Process group 'tp' has already "
                         "been created")
            self.assertEqual(r["te"]["sum"], 6 if rank < 4 else 22)
            self.assertEqual(r["te_key"], [["expert", ["ep", "expt_tp"]]])
            assert_error(self, r["te_again"], "KeyError", "for view 'expert' has already "
                         "been created")
            self.assertEqual(r["pp"]["sum"], 2 * (rank % 4) + 4)
            self.assertTrue(r["pp_same"])
            assert_error(self, r["pp_base_again"], "KeyError", "has already been created")
            self.assertEqual(r["keys"], ["('expert', ('ep', 'expt_tp'))", "pp", "tp"])
            assert_error(self, r["unknown_kw"], "TypeError",
                         "unexpected keyword argument 'colour'")
            if r["takes_desc"]:
                self.assertEqual(r["dp_desc"], "HCG_TEST_DP")
            else:
                assert_error(self, r["desc_refused"], "TypeError", "'group_desc'")
            self.assertEqual(r["dp"]["sum"], [2, 4, 2, 4, 10, 12, 10, 12][rank])
            self.assertEqual(r["part_enum"], [[4, 6], [5, 7]])
            self.assertEqual(r["part"], None if rank < 4 else
                             {"size": 2, "rank": (rank - 4) // 2, "sum": 10 + 2 * (rank % 2)})
            self.assertEqual(r["in_part"], rank >= 4)
            assert_error(self, r["other_world"], "RuntimeError",
                         "built for a world of 16 ranks but torch.distributed has 8")
            self.assertEqual(r["pgs_after"], 0)
            self.assertTrue(r["destroyed"])
            self.assertEqual(r["views_kept"], ["base", "expert"])

    def test_create_again_after_destroy(self):
        for rank, r in enumerate(run_job("grid_again", 4)):
            want = {"size": 2, "rank": rank % 2, "sum": 1 + 4 * (rank // 2)}
            self.assertEqual(r, {"first": want, "again": want})

    def test_create_pg_timeout(self):
        results = run_job("member_missing", 2, "1")
        self.assertEqual(results[1], {"skipped": True})
        err = results[0]["error"]
        self.assertEqual(err["code"], "ETIMEOUT", err)
        self.assertIn("did not form within 2 s: ranks 1 never arrived", err["message"])

    def test_to_megatron_fills_every_field(self):
        world = 8
        results = run_job("to_megatron", world, FIELDS_FILE)
        layout = hcg.Layout("llm:tp=2,gtp_remat=2,cp=1,dp=*,pp=1; "
                            "llm/expert:expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=*,pp",
                            world)
        for rank, r in enumerate(results):
            for name, view, dims in description():
                with self.subTest(rank=rank, field=name):
                    self.assertNotEqual(r[name], "unset", "to_megatron() left it unset")
                    if view is None:
                        want = None
                    elif view == "embedding":
                        want = expected_embedding(layout, dims[0], rank)
                    else:
                        want = expected(layout, "llm", view, dims, rank)
                    self.assertEqual(r[name], want)
            self.assertEqual(r["tp_dp"], expected(layout, "llm", "base",
                                                  ["tp", "gtp_remat", "dp"], rank))
            self.assertTrue(r["alias"])

    def check_topology(self, world: int, specs: List[Dict[str, Any]],
                       marked: List[str] = ()) -> List[Dict]:
        results = run_job("topology", world, json.dumps({"specs": specs,
                                                         "marked": list(marked)}))
        mods = [hm.ModuleGridSpec(**s) for s in specs]
        text = "; ".join(
            "%s@%d:tp=%d,gtp_remat=%d,cp=%d,dp=%d,pp=%d; %s/expert:expt_tp=%d,ep=%d,"
            "expt_gtp_remat=%d,expt_dp=%d,pp" % (
                m.name, m.rank_offset, m.tp, m.gtp_remat, m.cp, m.dp, m.pp, m.name,
                m.expt_tp, m.ep, m.expt_gtp_remat, m.expt_dp) for m in mods)
        layout = hcg.Layout(text, world, language="language")
        asked = sorted({o for o, _, _ in hm.TOPOLOGY_GROUPS} | {"embd", "pos_embd"})
        for rank, r in enumerate(results):
            self.assertEqual(r["options_asked"], asked)
            mine = [m.name for m in mods
                    if m.rank_offset <= rank < m.rank_offset + m.num_ranks]
            self.assertEqual(r["schedule"], {"modules": sorted(mine),
                                             "language": "language" if "language" in mine
                                             else None, "same": True})
            for m in mods:
                got = r["modules"][m.name]
                for name, view, dims in description():
                    with self.subTest(rank=rank, module=m.name, field=name):
                        if view is None:  # Megatron's topology leaves them unset
                            self.assertEqual(got[name], "unset")
                        elif view == "embedding":
                            want = (expected_embedding(layout, dims[0], rank)
                                    if m.name == "language" else None)
                            self.assertEqual(got[name], want)
                        else:
                            self.assertEqual(got[name],
                                             expected(layout, m.name, view, dims, rank))
                self.assertEqual(got["tp_dp"], expected(
                    layout, m.name, "base", ["tp", "gtp_remat", "dp"], rank))
                self.assertTrue(got["intra_dp_cp is dp_cp"])
                self.assertTrue(got["intra_expt_dp is expt_dp"])
                self.assertEqual(r["grids"][m.name]["pp_enum"],
                                 layout.enumerate(layout.request_dims(["pp"], m.name)))
                self.assertEqual(r["grids"][m.name]["tp_made"], "True")
            self.assertEqual(r["after_destroy"], 0)
        return results

    def test_topology_non_colocated(self):
        results = self.check_topology(8, [
            {"name": "encoder", "num_ranks": 4, "tp": 2, "rank_offset": 0},
            {"name": "language", "num_ranks": 4, "tp": 2, "pp": 2, "rank_offset": 4}])
        # By hand, from Megatron's rules: the language's pp groups are
        # [4,6] and [5,7]; embd their first and last ranks, pos_embd the first.
        self.assertEqual(results[4]["modules"]["language"]["embd"],
                         {"size": 2, "rank": 0, "sum": 10})
        self.assertEqual(results[6]["modules"]["language"]["pos_embd"], None)
        self.assertEqual(results[5]["modules"]["language"]["pos_embd"],
                         {"size": 1, "rank": 0, "sum": 5})
        self.assertEqual(results[1]["modules"]["encoder"]["dp"],
                         {"size": 2, "rank": 0, "sum": 4})
        self.assertIsNone(results[1]["modules"]["language"]["tp"])

    def test_topology_colocated_with_experts(self):
        self.check_topology(8, [
            {"name": "vision", "num_ranks": 8, "tp": 2},
            {"name": "language", "num_ranks": 8, "tp": 2, "pp": 2, "ep": 2,
             "expt_tp": 1, "gtp_remat": 1}], marked=["tp", "ep", "embd"])

    def test_topology_refusals(self):
        for rank, r in enumerate(run_job("topology_errors", 4)):
            assert_error(self, r["not_divisible"], "ValueError",
                         "num_ranks (6) must be divisible by tp*gtp_remat*cp*pp (4)")
            assert_error(self, r["expert_not_divisible"], "ValueError",
                         "num_ranks (4) must be divisible by expt_tp*ep*expt_gtp_remat*pp (3)")
            assert_error(self, r["before_init"], "RuntimeError",
                         "has not been initialized")
            assert_error(self, r["empty"], "ValueError",
                         "create_topology requires at least one ModuleGridSpec")
            assert_error(self, r["no_language"], "ValueError",
                         "requires exactly one spec named 'language' (the language "
                         "module), got 0")
            assert_error(self, r["two_languages"], "ValueError", "got 2")
            assert_error(self, r["overlap"], "ValueError",
                         "Module grids must either fully share ranks or be pairwise "
                         "disjoint, got {'enc': (0, 2), 'language': (1, 3)}")
            assert_error(self, r["gap"], "ValueError",
                         "Module grids must partition the world [0, 4) with no gaps")
            assert_error(self, r["oversized"], "RuntimeError", "is over sized with world size 4")
            if not r["has_nccl"]:
                self.assertEqual(r["hps"]["code"], "ENOTSUP")
                self.assertIn("high_priority_stream_groups names 'tp'", r["hps"]["message"])


if __name__ == "__main__":
    unittest.main()
