"""hcg.torch.device_mesh and the torchtitan mapping.

Without a DeviceMesh.from_group (Debian 12's torch 1.13) device_mesh must
fail with DeviceMeshUnavailableError; with it, a local job of 4 processes
(gloo, CPU) checks the refusals and a mesh. tests/cluster/mesh.bats runs
the N-D meshes, DTensor and FSDP2 under srun.
"""

from __future__ import annotations

import unittest

import hcg
import hcg.torch as ht

from test_torch import HAVE_TORCH, REQUIRE, run_job


def _from_group() -> bool:
    if not HAVE_TORCH:
        return False
    try:
        from torch.distributed.device_mesh import DeviceMesh  # noqa: F401
    except ImportError:
        return False
    return callable(getattr(DeviceMesh, "from_group", None))


FROM_GROUP = _from_group()


class TorchtitanLayout(unittest.TestCase):
    """The degrees -> layout text mapping (no torch needed)."""

    def test_dense_and_expert(self):
        self.assertEqual(ht.torchtitan_layout(dp_shard=4, tp=2),
                         "llm:tp=2,cp=1,dp_shard=4,dp_replicate=1,pp=1")
        text = ht.torchtitan_layout(dp_replicate=2, dp_shard=-1, cp=2, tp=2,
                                    pp=2, ep=4, world_size=32)
        self.assertEqual(text, "llm:tp=2,cp=2,dp_shard=*,dp_replicate=2,pp=2; "
                         "llm/expert:etp=1,ep=4,efsdp=*,dp_replicate,pp")
        L = hcg.Layout(text, 32)
        base = {d.name: d.size for d in L.grid("llm").view("base").dims}
        expert = {d.name: d.size for d in L.grid("llm").view("expert").dims}
        self.assertEqual(base, {"tp": 2, "cp": 2, "dp_shard": 2,
                                "dp_replicate": 2, "pp": 2})
        # ep borrows from dp_shard, cp and tp (etp=1): 2*2*2 = 4 * efsdp 2.
        self.assertEqual(expert, {"etp": 1, "ep": 4, "efsdp": 2,
                                  "dp_replicate": 2, "pp": 2})
        # etp = tp: ep borrows from dp_shard and cp only.
        text = ht.torchtitan_layout(dp_shard=4, tp=2, ep=4, etp=2, world_size=8)
        expert = {d.name: d.size for d in
                  hcg.Layout(text, 8).grid("llm").view("expert").dims}
        self.assertEqual(expert["efsdp"], 1)

    def test_bad_degrees(self):
        for kw in ({"tp": 0}, {"dp_shard": -2}, {"cp": 1.5}, {"pp": True},
                   {"tp": 2, "etp": 4}, {"grid": "a b"}):
            with self.assertRaises(ValueError) as cm:
                ht.torchtitan_layout(**kw)
            self.assertIsInstance(cm.exception, ht.MeshError)
        with self.assertRaises(ht.MeshError) as cm:
            ht.torchtitan_layout(dp_shard=3, tp=2, world_size=8)
        self.assertIn("do not fit 8 ranks", str(cm.exception))

    def test_unknown_spmd_backend(self):
        # Refused before anything is looked up or made (no torch needed).
        with self.assertRaises(ValueError) as cm:
            ht.torchtitan_meshes(spmd_backend="dtensor")
        self.assertIsInstance(cm.exception, ht.MeshError)
        self.assertIn("spmd_backend must be one of spmd_types, partial_dtensor, "
                      "got 'dtensor'", str(cm.exception))


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class DeviceMesh(unittest.TestCase):

    @unittest.skipIf(FROM_GROUP, "this torch has DeviceMesh.from_group: "
                     "the error for a torch without it cannot happen here")
    def test_torch_without_from_group(self):
        with self.assertRaises(ImportError) as cm:
            ht.device_mesh(["tp"])
        exc = cm.exception
        self.assertIsInstance(exc, ht.DeviceMeshUnavailableError)
        self.assertIsInstance(exc, hcg.HcgError)
        self.assertIn("PyTorch 2.4 and later", str(exc))
        self.assertIn("hcg.torch.new_collection()", str(exc))

    @unittest.skipUnless(FROM_GROUP, "this torch has no DeviceMesh.from_group "
                         "(PyTorch 2.4+): device_mesh refuses it, as "
                         "test_torch_without_from_group checks")
    def test_outside_the_grid_and_bad_input(self):
        layout = "vision:tp=2,dp=1; llm:tp=2,dp=1"
        results = run_job("mesh_outside", 4, layout)
        for rank, res in enumerate(results):
            errors = res["errors"]
            for what, text in errors.items():
                self.assertTrue(text.startswith("MeshError"),
                                "rank %d, %s: %s" % (rank, what, text))
            self.assertIn("rank %d is not in grid" % rank, errors["outside"])
            self.assertIn("has no dim 'xx'", errors["no dim"])
            self.assertIn("in the mesh's order", errors["flatten"])
            self.assertEqual(res["made"], [], "refused calls made groups")
            self.assertEqual(res["tp"], res["want_tp"])
            self.assertEqual(res["mesh"], [res["want_tp"]])


if __name__ == "__main__":
    unittest.main()
