"""One set of groups per process, and torchtitan's meshes key for key.

Local jobs (gloo, CPU, tests/torch_worker.py): the plain calls
(new_collection, new_collections, HyperCommGrid.create_pg, device_mesh)
one after another hand out the same group objects and make nothing twice
(counted); a factory of one's own is a fresh set; destroyed groups are made
anew. torchtitan_meshes/torchtitan_axes give every key torchtitan's
ParallelDims.build_mesh makes (parallel_dims.py of August 2026, d6555c4c),
with its dim names, sizes and mesh tensors, for the degrees below.
"""

from __future__ import annotations

import json
import unittest

from test_mesh import FROM_GROUP
from test_torch import HAVE_TORCH, REQUIRE, run_job


#: torchtitan's _global_meshes keys, as its build_mesh makes them whatever
#: the degrees (spmd_sparse_for_fwdbwd with ep > 1 besides), and "world"
#: (its _world_mesh, which hcg's dict holds too).
TITAN_MESHES = {
    "spmd_types": ["dataloading", "dense", "loss", "sparse",
                   "spmd_dense_for_fwdbwd", "world"],
    "partial_dtensor": ["dataloading", "dense", "loss", "sparse", "world"],
}
TITAN_AXES = {
    "spmd_types": ["batch", "cp", "dp", "dp_replicate", "dp_shard", "efsdp",
                   "ep", "loss", "pp", "tp"],
    "partial_dtensor": ["batch", "cp", "dp_replicate", "efsdp", "ep", "fsdp",
                        "loss", "pp", "tp"],
}


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class SharedGroups(unittest.TestCase):

    def test_plain_calls_share_one_set(self):
        results = run_job("shared", 8, "tp=2,cp=2,dp=*")
        for rank, res in enumerate(results):
            made, same = res["made"], res["same"]
            # The first call makes one group per set of ranks; no later
            # plain call makes any, and each hands out the same objects.
            self.assertEqual(made["new_collection"], res["distinct"], rank)
            for what in ("again", "create_pg", "device_mesh"):
                self.assertEqual(made.get(what, 0), 0, "rank %d: %s" % (rank, what))
            self.assertEqual(res["shared_groups"], res["distinct"], rank)
            for what, ok in same.items():
                self.assertTrue(ok, "rank %d: %s" % (rank, what))
            self.assertEqual("device_mesh" in same, FROM_GROUP)
            # A factory of one's own: a fresh set.
            self.assertEqual(made["own factory"], res["distinct"], rank)
            self.assertTrue(res["own_distinct"], rank)
            # Destroyed groups are not handed out again.
            self.assertEqual(made["after destroy"], res["distinct"], rank)
            self.assertTrue(res["renewed"], rank)
            self.assertEqual(res["tp_sum"], res["want_tp_sum"], rank)

    @unittest.skipUnless(FROM_GROUP, "this torch has no DeviceMesh.from_group "
                         "(PyTorch 2.4+): no torchtitan meshes")
    def test_torchtitan_keys_ep_2(self):
        self.check_titan({"dp_replicate": 2, "dp_shard": 2, "tp": 2, "ep": 2})

    @unittest.skipUnless(FROM_GROUP, "this torch has no DeviceMesh.from_group "
                         "(PyTorch 2.4+): no torchtitan meshes")
    def test_torchtitan_keys_cp_tp(self):
        self.check_titan({"cp": 2, "tp": 2})

    @unittest.skipUnless(FROM_GROUP, "this torch has no DeviceMesh.from_group "
                         "(PyTorch 2.4+): no torchtitan meshes")
    def test_torchtitan_keys_pp(self):
        self.check_titan({"pp": 2, "dp_shard": 2, "tp": 2})

    def check_titan(self, degrees):
        results = run_job("titan", 8, json.dumps(degrees))
        for rank, res in enumerate(results):
            self.assertEqual(res["bad"], [], "rank %d" % rank)
            for backend, keys in TITAN_MESHES.items():
                want = keys + (["spmd_sparse_for_fwdbwd"] if backend == "spmd_types"
                               and degrees.get("ep", 1) > 1 else [])
                self.assertEqual(res["keys"][backend], sorted(want), backend)
                self.assertEqual(sorted(res["axes"][backend]), TITAN_AXES[backend])
                self.assertEqual(res["axes"][backend]["ep"], degrees.get("ep", 1))
            # The second backend's meshes reuse the groups the first made,
            # except partial_dtensor's fsdp (dp_shard and cp), when it is
            # a group of its own.
            self.assertLessEqual(res["made"]["partial_dtensor"], 1, rank)


if __name__ == "__main__":
    unittest.main()
