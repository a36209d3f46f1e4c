"""Any failure before a collective step is told to the others at once.

A rank that fails, with any exception (one hcg does not expect included:
a RuntimeError, a ZeroDivisionError), inside a step before its collective
part still takes part in it to tell the others, who raise hcg.PeerError
naming it instead of waiting for their timeout:

* rank 0 starting its store: it publishes its failure instead of the
  address (checked here in one process: the publication is PMIx's,
  which only the cluster tests have; the step around it is hcg's own);
* any rank at the default group's meeting (init());
* any member of a group, before and at its meeting.
"""

from __future__ import annotations

import datetime
import time
import types
import unittest

import hcg
from hcg.env import TaskEnv
from hcg.torch import _places, rendezvous
from hcg.torch._base import STATE

from test_torch import HAVE_TORCH, REQUIRE, run_job


class RankZeroStoreFails(unittest.TestCase):
    """rendezvous._store, rank 0's side and another rank's, with the
    publication carried between them in this process."""

    def setUp(self):
        self.saved = (rendezvous._job_server, rendezvous._publish, STATE.places)
        self.published = {}

    def tearDown(self):
        rendezvous._job_server, rendezvous._publish, STATE.places = self.saved

    def publish_as(self, rank: int):
        """What every rank publishes, kept here; read back as PMIx's."""
        def publish(payload: bytes, timeout_s: int) -> _places.Places:
            self.published[rank] = payload
            return _places.Places(lambda r: self.published[r])
        return publish

    def test_unexpected_exception_is_published(self):
        def job_server(rank, host, secret):
            if rank == 0:
                raise ZeroDivisionError("division by zero")
            return types.SimpleNamespace(port=1)

        rendezvous._job_server = job_server
        rendezvous._publish = self.publish_as(0)
        layout = hcg.Layout("tp=4", 4)
        t = datetime.timedelta(seconds=60)
        start = time.monotonic()
        with self.assertRaises(hcg.HcgRuntimeError) as cm:
            rendezvous._store(TaskEnv(layout, 0), t, start + 60, None,
                              "127.0.0.1", None)
        own = cm.exception
        self.assertIn("rank 0 could not start hcg.torch's store: "
                      "ZeroDivisionError: division by zero", own.message)
        self.assertIsInstance(own.__cause__, ZeroDivisionError)
        # What rank 0 published instead of an address: its failure.
        self.assertTrue(self.published[0].startswith(_places.FAILED.encode()))
        # Another rank reads that where rank 0's store should be: a
        # PeerError naming rank 0 and its reason, at once.
        rendezvous._publish = self.publish_as(2)
        with self.assertRaises(hcg.PeerError) as cm:
            rendezvous._store(TaskEnv(layout, 2), t, start + 60, None,
                              "127.0.0.1", None)
        peer = cm.exception
        self.assertEqual(peer.rank, 0)
        self.assertIn("rank 0 failed before it published the address of its "
                      "store: EIO: rank 0 could not start hcg.torch's store: "
                      "ZeroDivisionError", peer.message)
        self.assertLess(time.monotonic() - start, 5)
        layout.close()


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class StepFails(unittest.TestCase):
    """Local jobs (gloo): rank 1 fails inside a step, the others wait 60 s
    at most and must learn it long before."""

    def check(self, results, own: str, seconds: float = 20) -> None:
        self.assertIsNone(results[1]["peer"], results[1])
        self.assertEqual(results[1]["kind"], "HcgRuntimeError", results[1])
        self.assertIn(own, results[1]["error"])
        for rank in (0, 2, 3):
            res = results[rank]
            self.assertEqual(res["peer"], 1, "rank %d: %s" % (rank, res))
            self.assertIn("rank 1 failed: EIO: ", res["error"])
            self.assertIn(own, res["error"])
            self.assertLess(res["seconds"], seconds, "rank %d: %s" % (rank, res))

    def test_group_client_fails(self):
        # Rank 1 cannot get its store client (a ZeroDivisionError): it
        # reaches the store another way to say so.
        self.check(run_job("step_fails", 4, "client"),
                   "ZeroDivisionError: division by zero")

    def test_group_meeting_fails(self):
        self.check(run_job("step_fails", 4, "meet"),
                   "RuntimeError: injected before the meeting")

    def test_default_group_meeting_fails(self):
        results = run_job("init_meet_fails", 4)
        self.check(results, "ZeroDivisionError: division by zero")
        self.assertIn("rank 1 failed before the ranks met", results[1]["error"])


if __name__ == "__main__":
    unittest.main()
