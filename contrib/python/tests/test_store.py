"""hcg.torch.store: the job's store, which only the job's tasks can use.

In one process: every operation torch's stores have, waits and their
deadlines, and what an outsider gets (torch's own TCPStore client, a raw
connection, hcg's client with another secret, a connection that says
nothing, a server that is not the job's). Then local jobs of gloo ranks
(tests/torch_worker.py) make hcg.torch's groups over it, and one whose
member fails tells the others at once. tests/cluster/mesh.bats runs it
under srun, where the secret comes through PMIx.
"""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
from typing import Any

import hcg

from test_torch import HAVE_TORCH, REQUIRE, check_peer_fails, run_job

SECRET = os.urandom(16)


def _timeout(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=seconds)


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class JobStore(unittest.TestCase):
    """One server, its clients and outsiders, in this process."""

    def setUp(self) -> None:
        from hcg.torch import store

        self.store = store
        self.server = store.Server("127.0.0.1", SECRET, handshake_s=1.0)
        self.port = self.server.port

    def tearDown(self) -> None:
        self.server.close()

    def client(self, seconds: float = 5, secret: bytes = SECRET) -> Any:
        return self.store.client("127.0.0.1", self.port, secret, _timeout(seconds))

    def test_operations(self) -> None:
        c = self.client()
        c.set("a", b"1")
        self.assertEqual(c.get("a"), b"1")
        self.assertEqual(c.add("n", 5), 5)
        self.assertEqual(c.add("n", -2), 3)
        self.assertTrue(c.check(["a", "n"]))
        self.assertFalse(c.check(["a", "missing"]))
        self.assertEqual(c.num_keys(), 2)
        # compare_set as torch's stores do it.
        self.assertEqual(c.compare_set("c", "", "x"), b"x")  # new key
        self.assertEqual(c.compare_set("c", "y", "z"), b"x")  # not expected
        self.assertEqual(c.compare_set("c", "x", "w"), b"w")  # swapped
        self.assertEqual(c.compare_set("q", "e", "d"), b"e")  # no such key
        self.assertFalse(c.check(["q"]))
        c.append("a", b"23")
        self.assertEqual(c.multi_get(["a", "c"]), [b"123", b"w"])
        c.multi_set(["m1", "m2"], [b"1", "2"])
        self.assertEqual(c.get("m2"), b"2")
        self.assertTrue(c.delete_key("m2"))
        self.assertFalse(c.delete_key("m2"))
        c.wait(["a", "m1"])
        self.assertEqual(c.add("a", 1), 124)  # a number written as text
        c.set("t", "text")
        with self.assertRaises(hcg.HcgRuntimeError):
            c.add("t", 1)
        self.assertTrue(c.has_extended_api())
        # torch's PrefixStore over it, as every group's rendezvous uses it.
        import torch.distributed as dist

        p = dist.PrefixStore("pre", c)
        p.set("k", "v")
        self.assertEqual(p.get("k"), b"v")
        self.assertEqual(p.add("n", 2), 2)
        self.assertNotIn("secret", repr(c).lower())

    def test_get_waits_for_another_client(self) -> None:
        c, other = self.client(), self.client()
        threading.Timer(0.3, lambda: other.set("late", b"here")).start()
        start = time.monotonic()
        self.assertEqual(c.get("late"), b"here")
        self.assertGreater(time.monotonic() - start, 0.2)
        threading.Timer(0.2, lambda: other.compare_set("cas", "", "v")).start()
        c.wait(["cas"], _timeout(5))  # compare_set wakes a waiter too

    def test_wait_times_out_and_the_connection_stays(self) -> None:
        c = self.client(0.3)
        start = time.monotonic()
        with self.assertRaises(hcg.HcgTimeoutError) as cm:
            c.get("never")
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertGreaterEqual(time.monotonic() - start, 0.25)
        self.assertIn("timed out after 0.3 s waiting for key 'never'", str(cm.exception))
        with self.assertRaises(hcg.HcgTimeoutError):
            c.wait(["a", "b"], _timeout(0.1))
        c.set("k", b"v")  # still usable
        self.assertEqual(c.get("k"), b"v")

    def test_another_secret_is_refused(self) -> None:
        self.client().set("k", b"v")
        with self.assertRaises(hcg.HcgRuntimeError) as cm:
            self.client(secret=os.urandom(16))
        self.assertIn("refused this task: its secret is not this task's", str(cm.exception))
        self.assertEqual(self.client().num_keys(), 1)

    def test_raw_bytes_get_nothing(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            greeting = s.recv(64)
            self.assertTrue(greeting.startswith(b"HCGS"))
            s.sendall(os.urandom(68))
            self.assertEqual(s.recv(64), b"")  # closed, nothing said

    def test_torch_tcpstore_client_gets_nothing(self) -> None:
        # In a process of its own: torch 1.13's client takes the greeting
        # for a length and dies of std::bad_alloc.
        self.client().set("k", b"v")
        code = ("import datetime, sys\n"
                "import torch.distributed as d\n"
                "for kw in ({}, {'use_libuv': False}):\n"
                "    try:\n"
                "        s = d.TCPStore('127.0.0.1', int(sys.argv[1]), None, False,\n"
                "                       datetime.timedelta(seconds=3), **kw)\n"
                "        print('read', s.get('k'), flush=True)\n"
                "    except Exception as exc:\n"
                "        print('refused', type(exc).__name__, flush=True)\n")
        out = subprocess.run([sys.executable, "-c", code, str(self.port)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=120, check=False).stdout.decode()
        self.assertNotIn("read", out)

    def test_silent_connection_is_closed(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.recv(len(b"HCGS") + 32)
            start = time.monotonic()
            self.assertEqual(s.recv(64), b"")  # after handshake_s (1 s)
            self.assertLess(time.monotonic() - start, 5)

    def test_server_ends_with_its_process(self) -> None:
        # A rank 0 that dies takes its store with it: no orphan serving.
        code = ("import os, sys\n"
                "from hcg.torch import store\n"
                "s = store.Server('127.0.0.1', os.urandom(16))\n"
                "print(s.port, flush=True)\n"
                "os._exit(0)\n")
        out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             timeout=60, check=True).stdout.decode()
        port = int(out.split()[0])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                break
            time.sleep(0.05)
        else:
            self.fail("the store still listens after its process died")

    def test_a_process_that_does_not_start(self) -> None:
        real = sys.executable
        try:
            sys.executable = "/nonexistent/python3"
            with self.assertRaises(self.store.StoreStartError) as cm:
                self.store.Server("127.0.0.1", SECRET)
        finally:
            sys.executable = real
        self.assertIn("cannot run /nonexistent/python3", str(cm.exception))

    def test_a_bad_address(self) -> None:
        with self.assertRaises(OSError) as cm:
            self.store.Server("192.0.2.1", SECRET)  # TEST-NET-1: not this host's
        self.assertIn("assign", str(cm.exception))
        self.assertNotIsInstance(cm.exception, self.store.StoreStartError)

    def test_a_server_that_is_not_the_jobs(self) -> None:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            port = listener.getsockname()[1]

            def impostor() -> None:
                conn, _ = listener.accept()
                with conn:
                    conn.sendall(b"HCGS" + os.urandom(32))
                    conn.recv(68)
                    conn.sendall(os.urandom(32))
                    time.sleep(0.5)

            t = threading.Thread(target=impostor)
            t.start()
            with self.assertRaises(hcg.HcgRuntimeError) as cm:
                self.store.client("127.0.0.1", port, SECRET, _timeout(5))
            t.join()
        self.assertIn("did not prove it is this job's", str(cm.exception))

    def test_a_lost_server_is_known_at_once(self) -> None:
        c = self.client(60)
        got: list = []

        def wait() -> None:
            try:
                c.get("never")
            except hcg.HcgError as exc:
                got.append(exc)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.3)
        start = time.monotonic()
        self.server.close()
        t.join(20)
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(len(got), 1)
        self.assertIsInstance(got[0], hcg.HcgRuntimeError)
        self.assertIn("lost the connection to hcg.torch's store", str(got[0]))
        with self.assertRaises(hcg.HcgRuntimeError):
            c.set("k", b"v")

    def test_no_server(self) -> None:
        # A port this test holds, bound and never listening, so that every
        # connection to it is refused: a port freed by closing a server
        # could be taken by any other process meanwhile (another test, a
        # tier beside this one), and the test would see a stranger.
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            port = held.getsockname()[1]
            with self.assertRaises(hcg.HcgRuntimeError) as cm:
                self.store.client("127.0.0.1", port, SECRET, _timeout(0.5))
            self.assertIn("cannot reach hcg.torch's store at 127.0.0.1:%d" % port,
                          str(cm.exception))
            # Refused for 10 s: gone, said long before a 300 s timeout.
            start = time.monotonic()
            with self.assertRaises(hcg.HcgRuntimeError) as cm:
                self.store.client("127.0.0.1", port, SECRET, _timeout(300))
            self.assertLess(time.monotonic() - start, 30)
            self.assertIn("connection refused for 10", str(cm.exception))


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class GroupsOnTheJobStore(unittest.TestCase):
    """hcg.torch's groups, made over the job store by local gloo ranks."""

    def test_collection(self) -> None:
        layout = "llm:tp=2,cp=2,dp=*,pp=1; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp"
        results = run_job("collections", 8, layout, job_store=True)
        for rank, res in enumerate(results):
            self.assertEqual(res.get("bad"), [], "rank %d: %s" % (rank, res))
            self.assertGreater(res["checked"], 0)

    def test_member_that_fails_tells_the_others(self) -> None:
        check_peer_fails(self, run_job("peer_fails", 4, job_store=True))

    def test_torch_own_groups(self) -> None:
        # torch's new_group (and init_device_mesh where torch has it) over
        # the job store, which only torch's C++ side still holds.
        for rank, res in enumerate(run_job("torch_groups", 4, job_store=True)):
            self.assertNotIn("exception", res, "rank %d: %s" % (rank, res))
            self.assertEqual(res["world_sum"], 4.0)
            self.assertEqual(res["pair_sum"], 1.0 if rank < 2 else 5.0)
            if "mesh_dp_sum" in res:
                self.assertEqual(res["mesh_dp_sum"], 2.0)


if __name__ == "__main__":
    unittest.main()
