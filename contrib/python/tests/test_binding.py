"""How hcg.torch makes groups for the torch it runs on (hcg.torch._binding):
one split of the job's communicator per group where torch's default group
is bound to a device, the refusals before any group is made, and gloo
groups that cannot fit in a process's files.

A gloo world on the CPU (tests/binding_worker.py): the default group is
bound as ``device_id=`` binds it and torch's split_group is recorded; the
groups themselves are real gloo groups, checked with an all_reduce. No NCCL
runs here (tests/gpu/ runs it where there is a GPU).
"""

from __future__ import annotations

import unittest

from test_torch import HAVE_TORCH, REQUIRE, run_job


def _binds() -> bool:
    """Whether this torch's process groups have a bound device
    (``init_process_group(device_id=)``, torch 2.x)."""
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return hasattr(dist.ProcessGroup, "bound_device_id")


EXPERT = "llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp"


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class BoundDefaultGroup(unittest.TestCase):
    """A default group bound to a device: torch splits every NCCL group
    from the job's communicator, so every rank must call for every key."""

    def setUp(self) -> None:
        if not _binds():
            self.skipTest("this torch has no bound_device_id (no device_id= in "
                          "init_process_group): its NCCL groups are never split")

    def test_one_split_per_group_in_one_order(self) -> None:
        results = run_job("bound_split", 8, EXPERT)
        for rank, res in enumerate(results):
            self.assertEqual(res["bad"], [], "rank %d" % rank)
            self.assertTrue(res["splits"])
            self.assertEqual(res["gloo_calls"], 0, "gloo groups are never split")
            # Every rank splits for the same keys in the same order, each
            # naming only its own group.
            self.assertEqual(res["order"], results[0]["order"], "rank %d" % rank)
            self.assertTrue(all(rank in g for g in res["groups"]))
        self.assertGreater(len(results[0]["order"]), 4)
        # Groups of one key partition the job: each rank's n-th split
        # names a group that every member of it names too.
        for n in range(len(results[0]["groups"])):
            for rank, res in enumerate(results):
                group = res["groups"][n]
                for member in group:
                    self.assertEqual(results[member]["groups"][n], group)

    def test_refused_before_any_group(self) -> None:
        results = run_job("bound_refusals", 8, "vision:tp=2,dp=2; llm:tp=2,dp=1,pp=2")
        for rank, res in enumerate(results):
            for name in ("partial", "no_split"):
                err = res[name]
                self.assertIsNotNone(err, "rank %d: %s not refused" % (rank, name))
                self.assertEqual(err["code"], "ENOTSUP")
                self.assertTrue(err["runtime"])
                self.assertIn("bound to cuda:0 (device_id=)", err["message"])
                self.assertIn("start without device_id", err["message"])
                self.assertEqual(res[name + "_calls"], 0, "a split before the refusal")
            self.assertIn("do not hold every rank of the job", res["partial"]["message"])
            self.assertIn("no torch.distributed.split_group", res["no_split"]["message"])


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class GlooFiles(unittest.TestCase):
    """gloo's full mesh against a process's file limit."""

    def test_group_past_the_limit(self) -> None:
        res = run_job("gloo_limit", 1)[0]
        err = res["big"]
        self.assertIsNotNone(err)
        self.assertEqual(err["code"], "ELIMIT")
        self.assertTrue(err["value_error"])
        for words in ("99 connections", "limit of 300", "room for (44",
                      "--disable-gloo-process-groups", "ulimit -n"):
            self.assertIn(words, err["message"])

    def test_init_refusals(self) -> None:
        res = run_job("init_refusals", 1)[0]
        gloo = res["gloo_world"]
        self.assertEqual(gloo["code"], "ELIMIT")
        self.assertIn("the default process group (2000 ranks)", gloo["message"])
        self.assertIn("1999 connections", gloo["message"])
        self.assertEqual(gloo["kinds"], ["ValueError"])
        self.assertEqual(res["device_cpu"]["code"], "EINVAL")
        self.assertIn("one CUDA device with its index", res["device_cpu"]["message"])
        self.assertEqual(res["device_float"]["code"], "EINVAL")
        self.assertEqual(res["device_float"]["kinds"], ["TypeError"])
        self.assertEqual(res["device_negative"]["code"], "ERANGE")
        self.assertEqual(res["device_negative"]["kinds"], ["ValueError"])
        for name in ("gloo_world", "device_cpu", "device_float", "device_negative"):
            self.assertFalse(res[name + "_initialized"], name)


if __name__ == "__main__":
    unittest.main()
