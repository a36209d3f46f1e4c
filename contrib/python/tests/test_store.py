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
import errno
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import shutil
import tempfile
import unittest
from typing import Any, Dict, List, Set, Tuple, cast

import hcg
from hcg import HcgError, Status

from test_torch import HAVE_TORCH, REQUIRE, check_peer_fails, run_job

SECRET = os.urandom(16)


def _timeout(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=seconds)


def _stops_listening(port: int, seconds: float) -> bool:
    """Whether 127.0.0.1:port refuses connections within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


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
        # A meeting's check-in: its adds in one request, each its own value.
        self.assertEqual(c.add_many([("n", 1), ("m", 4), ("n", 1)]), [4, 4, 5])
        with self.assertRaisesRegex(hcg.HcgRuntimeError, "key 't' is not a number"):
            c.add_many([("n", 1), ("t", 1)])
        self.assertEqual(c.add("n", 0), 6)  # the other add was made
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
        if not _stops_listening(port, 10):
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
        # An HcgError (EIO) and still the OSError it was, with the system's
        # error number.
        self.assertIsInstance(cm.exception, HcgError)
        self.assertIsInstance(cm.exception, OSError)
        self.assertEqual(cm.exception.code, Status.EIO)
        self.assertEqual(cm.exception.errno, errno.ENOENT)

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

    def test_a_request_over_the_limit_is_refused_by_the_client(self) -> None:
        from hcg.torch import _store_proto as proto

        c = self.client()
        with self.assertRaises(hcg.HcgValueError) as cm:
            c.set("big", b"x" * (2 << 20))
        self.assertIn("at most %d" % proto.MAX_REQUEST, str(cm.exception))
        c.set("k", b"v")  # the connection stays
        self.assertEqual(c.get("k"), b"v")

    def test_waits_of_25_days_and_more(self) -> None:
        # A deadline past epoll's 2**31 ms used to kill the server once the
        # key was set; timedelta.max is clamped on both sides.
        c, other = self.client(), self.client()
        threading.Timer(0.2, lambda: other.set("k", b"v")).start()
        c.wait(["k"], datetime.timedelta(days=25))
        time.sleep(1.2)
        self.assertEqual(other.get("k"), b"v")
        threading.Timer(0.2, lambda: other.set("k2", b"v")).start()
        c.wait(["k2"], datetime.timedelta.max)
        self.assertEqual(c.num_keys(), 2)


def _exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def _reply(sock: socket.socket) -> Tuple[int, List[bytes]]:
    from hcg.torch import _store_proto as proto

    (n,) = struct.unpack(">I", _exact(sock, 4))
    return proto.fields(_exact(sock, n))


def select_readable(socks: List[socket.socket], seconds: float) -> List[socket.socket]:
    """Those of ``socks`` with something to read within ``seconds``."""
    import select

    return list(select.select(socks, [], [], seconds)[0])


def _request(sock: socket.socket, op: int, fields: List[bytes]) -> Tuple[int, List[bytes]]:
    from hcg.torch import _store_proto as proto

    sock.sendall(proto.frame(op, fields))
    return _reply(sock)


def _files(n: int) -> None:
    """Raises this process's soft limit on open files to at least n (its
    own, for the connections a test opens), or skips the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        if hard != resource.RLIM_INFINITY and hard < n:
            raise unittest.SkipTest("needs %d open files, the hard limit is %d" % (n, hard))
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))


def _status(pid: int, field: str) -> int:
    """A number of /proc/PID/status (VmRSS: kB)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _cpu_s(pid: int) -> float:
    """User and system CPU time of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _silent(port: int, n: int) -> List[socket.socket]:
    """n connections that never say a word (connected or still in the
    server's backlog)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    return socks


#: What the server process may hold in memory while the tests below try
#: to make it grow: its own start is about 10 MB, and every bound of
#: _store_server.py together (8 MiB stored here, a request and an answer
#: per connection) stays well under this.
RSS_BOUND_KB = 64 * 1024


@unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc")
class StoreUnderLoad(unittest.TestCase):
    """The findings of issue 29 (item 2): whatever peers do, the server
    lives, admits the job's ranks and stays within its bounds. Standard
    library only on both sides (hcg's client's handshake, raw frames):
    these run without torch too."""

    MAX_STORED = 8 << 20

    def setUp(self) -> None:
        from hcg.torch import _store_dial, _store_proto as proto, _store_server, store

        self.proto = proto
        self.limits = _store_server  # the server's own bounds
        self.store = store
        self.dial = _store_dial.dial
        self.server = store.Server("127.0.0.1", SECRET, max_stored=self.MAX_STORED)
        self.port = self.server.port
        self.socks: List[socket.socket] = []

    def tearDown(self) -> None:
        for s in self.socks:
            s.close()
        self.server.close()

    def proven(self, timeout_s: float = 20) -> socket.socket:
        sock = self.dial("127.0.0.1", self.port, SECRET, timeout_s)
        self.socks.append(sock)
        return sock

    def stats(self) -> Dict[str, int]:
        status, out = _request(self.proven(), self.proto.STATS, [])
        self.assertEqual(status, self.proto.OK)
        return {k.decode(): int(v) for k, v in (f.split(b"=") for f in out)}

    def assert_serving(self) -> None:
        self.assertIsNone(self.server._proc.poll(), "the store's process died")
        sock = self.proven()
        self.assertEqual(_request(sock, self.proto.SET, [b"alive", b"1"])[0], self.proto.OK)
        self.assertEqual(_request(sock, self.proto.GET, [b"1000", b"alive"]),
                         (self.proto.OK, [b"1"]))

    # -- finding 1: descriptors --------------------------------------------

    def test_soft_limit_on_files_raised_to_hard(self) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 1024:
            self.skipTest("a hard limit of %d open files" % hard)
        # A server started under a soft limit of 256 (as 1024 is in most
        # jobs) serves more connections than that.
        low = max(256, len(os.listdir("/proc/self/fd")) + 64)
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
        try:
            server = self.store.Server("127.0.0.1", SECRET)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        try:
            _files(800)
            with open("/proc/%d/limits" % server.pid) as f:
                row = [line.split() for line in f if line.startswith("Max open files")][0]
            if row[4] == "unlimited":
                self.assertGreater(int(row[3]), low, row)
            else:
                self.assertEqual(row[3], row[4], "soft limit of the server: %s" % row)
            socks = [self.dial("127.0.0.1", server.port, SECRET, 20)
                     for _ in range(300)]
            try:
                self.assertEqual(len(socks), 300)
                self.assertEqual(_request(socks[-1], self.proto.NUM, []),
                                 (self.proto.OK, [b"0"]))
            finally:
                for s in socks:
                    s.close()
        finally:
            server.close()

    def test_no_descriptor_left_neither_spins_nor_keeps_a_rank_out(self) -> None:
        # A server whose hard limit is 40 open files cannot raise it: past
        # about 30 connections accept() fails (EMFILE) while the listener
        # stays readable.
        code = ("import os, resource, sys\n"
                "resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))\n"
                "from hcg.torch import store\n"
                "s = store.Server('127.0.0.1', bytes.fromhex(sys.argv[1]))\n"
                "print(s.port, s.pid, flush=True)\n"
                "sys.stdin.read()\n"
                "s.close()\n")
        rank0 = subprocess.Popen([sys.executable, "-c", code, SECRET.hex()],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert rank0.stdout is not None
            port, pid = map(int, rank0.stdout.readline().split())
            self.socks += _silent(port, 80)
            time.sleep(1.5)
            cpu = _cpu_s(pid)
            time.sleep(1.0)
            self.assertLess(_cpu_s(pid) - cpu, 0.3, "the store spins on its listener")
            start = time.monotonic()
            sock = self.dial("127.0.0.1", port, SECRET, 20)
            self.socks.append(sock)
            self.assertEqual(_request(sock, self.proto.NUM, []), (self.proto.OK, [b"0"]))
            self.assertLess(time.monotonic() - start, 15)
        finally:
            for pipe in (rank0.stdin, rank0.stdout):
                if pipe is not None:
                    pipe.close()
            rank0.wait(20)

    # -- finding 2: a burst of ranks ---------------------------------------

    def test_a_burst_past_the_unproven_limit_is_admitted_in_turn(self) -> None:
        _files(2600)
        n = 1100  # more than MAX_UNPROVEN, all pending at once
        proto = self.proto
        hello_len = len(proto.HELLO) + proto.NONCE
        os.kill(self.server.pid, signal.SIGSTOP)  # rank 0's node is busy
        try:
            socks = [socket.create_connection(("127.0.0.1", self.port), timeout=10)
                     for _ in range(n)]
            self.socks += socks
            time.sleep(0.3)
        finally:
            os.kill(self.server.pid, signal.SIGCONT)
        # Every connection answers as hcg's client does, all at once.
        sel = selectors.DefaultSelector()
        state: Dict[socket.socket, bytes] = {}
        nonces: Dict[socket.socket, bytes] = {}
        for s in socks:
            s.setblocking(False)
            state[s] = b""
            sel.register(s, selectors.EVENT_READ)
        proven = retried = closed_unread = 0
        deadline = time.monotonic() + 25
        while state and time.monotonic() < deadline:
            for key, _ in sel.select(1.0):
                s = cast(socket.socket, key.fileobj)
                got = state[s]
                try:
                    chunk = s.recv(hello_len + proto.MAC - len(got))
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    chunk = b""
                got += chunk
                state[s] = got
                if len(got) == hello_len and chunk:
                    nonce = nonces[s] = os.urandom(proto.NONCE)
                    s.sendall(proto.ANSWER + nonce +
                              proto.mac(SECRET, b"client", got[len(proto.HELLO):], nonce))
                elif len(got) == hello_len + proto.MAC:
                    self.assertEqual(got[hello_len:], proto.mac(
                        SECRET, b"server", got[len(proto.HELLO):hello_len], nonces[s]))
                    proven += 1
                    sel.unregister(s)
                    del state[s]
                elif not chunk:
                    # Closed: with a notice (shed, as a client retries
                    # then) or before its greeting (unread: the finding).
                    if len(got) < hello_len:
                        closed_unread += 1
                    else:
                        retried += 1
                    sel.unregister(s)
                    del state[s]
        sel.close()
        self.assertEqual(closed_unread, 0)
        self.assertEqual(proven + retried, n, "%d still waiting" % len(state))
        self.assertGreater(proven, n - 50)  # a few shed at most, on a busy machine
        self.assert_serving()

    # -- finding 3: silent connections -------------------------------------

    def test_silent_connections_do_not_keep_a_rank_out(self) -> None:
        _files(2600)
        self.socks += _silent(self.port, 1100)  # no secret, never a word
        time.sleep(1.5)  # older than SHED_AGE_S: their places are taken
        start = time.monotonic()
        sock = self.proven(30)  # the late rank
        self.assertLess(time.monotonic() - start, 15)
        self.assertEqual(_request(sock, self.proto.NUM, []), (self.proto.OK, [b"0"]))
        self.assertLessEqual(self.stats()["unproven"], self.limits.MAX_UNPROVEN)

    def test_a_client_closed_before_the_proof_tries_again(self) -> None:
        proto = self.proto
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
            port = listener.getsockname()[1]
            seen: List[int] = []

            def crowded() -> None:
                for i in range(3):
                    conn, _ = listener.accept()
                    seen.append(i)
                    with conn:
                        if i == 0:
                            continue  # closed before the greeting
                        nonce = os.urandom(proto.NONCE)
                        conn.sendall(proto.HELLO + nonce)
                        answer = _exact(conn, proto.PROOF)
                        if i == 1:
                            conn.sendall(proto.BUSY)  # shed
                            continue
                        theirs = answer[len(proto.ANSWER):len(proto.ANSWER) + proto.NONCE]
                        conn.sendall(proto.mac(SECRET, b"server", nonce, theirs))
                        conn.recv(1)

            t = threading.Thread(target=crowded)
            t.start()
            sock = self.dial("127.0.0.1", port, SECRET, 10)
            sock.close()
            t.join(10)
            self.assertEqual(seen, [0, 1, 2])

            def closing() -> None:
                listener.settimeout(0.2)
                end = time.monotonic() + 3
                while time.monotonic() < end:
                    try:
                        listener.accept()[0].close()
                    except socket.timeout:
                        pass

            t = threading.Thread(target=closing)
            t.start()
            start = time.monotonic()
            with self.assertRaises(hcg.HcgRuntimeError) as cm:
                self.dial("127.0.0.1", port, SECRET, 1.0)
            self.assertGreater(time.monotonic() - start, 0.9)  # until its timeout
            self.assertIn("kept closing the connection", str(cm.exception))
            t.join(10)

    # -- finding 4: what killed the loop -----------------------------------

    def test_long_and_huge_deadlines(self) -> None:
        proto = self.proto
        waiter, setter, parked = self.proven(), self.proven(), self.proven()
        days_25 = b"%d" % (25 * 86400 * 1000)  # over 2**31 ms
        parked.sendall(proto.frame(proto.WAIT, [days_25, b"never"]))
        waiter.sendall(proto.frame(proto.WAIT, [days_25, b"k"]))
        time.sleep(0.2)
        self.assertEqual(_request(setter, proto.SET, [b"k", b"v"])[0], proto.OK)
        self.assertEqual(_reply(waiter), (proto.OK, []))
        waiter.sendall(proto.frame(proto.GET, [b"9" * 401, b"k2"]))
        time.sleep(0.2)
        self.assertEqual(_request(setter, proto.SET, [b"k2", b"v2"])[0], proto.OK)
        self.assertEqual(_reply(waiter), (proto.OK, [b"v2"]))
        self.assertEqual(_request(waiter, proto.WAIT, [b"-5", b"k3"]), (proto.TIMEOUT, []))
        time.sleep(1.5)  # a few turns of the loop with a 25-day deadline first
        self.assert_serving()
        self.assertEqual(self.stats()["parked"], 1)

    def test_a_chain_of_pipelined_waits(self) -> None:
        # Each connection waits for its key, then (pipelined) sets the
        # next one's: one set wakes 400 connections in turn.
        _files(1200)
        proto = self.proto
        n = 400
        chain = [self.proven() for _ in range(n)]
        for i, s in enumerate(chain):
            s.sendall(proto.frame(proto.WAIT, [b"60000", b"chain%d" % i]) +
                      proto.frame(proto.SET, [b"chain%d" % (i + 1), b"x"]))
        time.sleep(0.3)
        self.assertEqual(_request(self.proven(), proto.SET, [b"chain0", b"x"])[0], proto.OK)
        for s in chain:
            s.settimeout(20)
            self.assertEqual(_reply(s), (proto.OK, []))
            self.assertEqual(_reply(s), (proto.OK, []))
        self.assert_serving()
        self.assertEqual(self.stats()["keys"], n + 2)

    def test_finished_waits_leave_the_deadline_heap(self) -> None:
        proto = self.proto
        waiter, setter = self.proven(), self.proven()

        def parked() -> int:
            out = _request(setter, proto.STATS, [])[1]
            return int([f for f in out if f.startswith(b"parked=")][0][7:])

        for i in range(300):
            waiter.sendall(proto.frame(proto.WAIT, [b"3600000", b"w%d" % i]))
            while parked() == 0:  # the wait is held, not answered at once
                time.sleep(0.001)
            _request(setter, proto.SET, [b"w%d" % i, b"1"])
            self.assertEqual(_reply(waiter), (proto.OK, []))
        stats = self.stats()
        self.assertEqual(stats["parked"], 0)
        self.assertLessEqual(stats["deadlines"], 64)

    # -- finding 5: memory -------------------------------------------------

    def test_oversized_frames_close_only_their_connection(self) -> None:
        for _ in range(4):
            s = self.proven()
            s.settimeout(10)
            try:
                s.sendall(struct.pack(">I", 64 << 20) + b"\x01" * (1 << 20))
            except (BrokenPipeError, ConnectionResetError):
                continue  # closed while it sent: as it should be
            try:
                while s.recv(1 << 16):
                    pass  # the error naming the limit, then the end
            except ConnectionResetError:
                pass
        self.assert_serving()
        self.assertLess(_status(self.server.pid, "VmRSS"), RSS_BOUND_KB)

    def test_what_the_store_holds_is_bounded(self) -> None:
        proto = self.proto
        sock = self.proven()
        value = b"v" * (proto.MAX_VALUE - 64)
        refused = None
        for i in range(300):
            status, out = _request(sock, proto.SET, [b"big%d" % i, value])
            if status != proto.OK:
                refused = (i, status, out)
                break
        assert refused is not None, "300 values of 1 MiB were all taken"
        i, status, out = refused
        self.assertEqual(status, proto.ERROR)
        self.assertIn(b"limit is %d bytes (MAX_STORED)" % self.MAX_STORED, out[0])
        self.assertLessEqual(i, self.MAX_STORED // len(value))
        self.assertLessEqual(self.stats()["stored"], self.MAX_STORED)
        self.assertLess(_status(self.server.pid, "VmRSS"), RSS_BOUND_KB)
        # Deleting makes room again; append past the largest value is refused.
        self.assertEqual(_request(sock, proto.DELETE, [b"big0"]), (proto.OK, [b"1"]))
        self.assertEqual(_request(sock, proto.SET, [b"again", b"1"])[0], proto.OK)
        status, out = _request(sock, proto.APPEND, [b"big1", b"m" * 100])
        self.assertEqual(status, proto.ERROR)
        self.assertIn(b"(MAX_VALUE)", out[0])
        self.assert_serving()

    def test_a_peer_that_never_reads_is_not_buffered(self) -> None:
        proto = self.proto
        value = b"r" * (512 << 10)
        self.assertEqual(_request(self.proven(), proto.SET, [b"r", value])[0], proto.OK)
        greedy = self.proven()
        greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        greedy.sendall(proto.frame(proto.GET, [b"1000", b"r"]) * 300)  # never read
        time.sleep(1.0)
        stats = self.stats()
        self.assertLessEqual(stats["buffered_out"], self.limits.MAX_BUFFERED_OUT + 2 * len(value))
        self.assertLess(_status(self.server.pid, "VmRSS"), RSS_BOUND_KB)
        self.assert_serving()

    # -- finding 6: rank 0's death -----------------------------------------

    def test_server_ends_with_rank0_despite_a_forked_child(self) -> None:
        # A DataLoader worker: rank 0 forks, the child holds the pipe to
        # the store's process, and rank 0 dies.
        code = ("import os, sys, time\n"
                "from hcg.torch import store\n"
                "s = store.Server('127.0.0.1', os.urandom(16))\n"
                "child = os.fork()\n"
                "if child == 0:\n"
                "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
                "    time.sleep(60)\n"
                "    os._exit(0)\n"
                "print(s.port, child, flush=True)\n"
                "os._exit(0)\n")
        out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             timeout=60, check=True).stdout.decode()
        port, child = map(int, out.split()[:2])
        try:
            if not _stops_listening(port, 5):
                self.fail("the store still listens after rank 0 died")
        finally:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # -- finding 7: the start line -----------------------------------------

    def test_a_host_that_is_not_one_is_refused(self) -> None:
        for host in ("127.0.0.1 0 10.0 00", "", "a\nb", "node\t1", "x" * 254,
                     "h\x00st", "-bad", "a..b"):
            with self.assertRaises(hcg.HcgValueError) as cm:
                self.store.Server(host, SECRET)
            self.assertIsInstance(cm.exception, ValueError)
            self.assertIn(repr(host), str(cm.exception))
        for host in ("127.0.0.1", "::1", "localhost", "node-1.cluster.", "n_1"):
            self.store.check_host(host)
        with self.assertRaises(hcg.HcgValueError):
            self.store.Server("127.0.0.1", b"00")  # a one-byte secret

    def test_the_server_checks_its_start_line(self) -> None:
        script = os.path.join(os.path.dirname(self.proto.__file__), "_store_main.py")
        good = self.proto.start_line("127.0.0.1", 0, 1.0, 1 << 20, os.getpid(), SECRET)
        for line in (b"127.0.0.1 0 10.0 00\n",  # the old format
                     good.replace(b" 127.0.0.1 ", b" 127.0.0.1 0 "),  # a field more
                     good.replace(SECRET.hex().encode(), b"00"),  # a short secret
                     good.replace(b"127.0.0.1", b"127.0.0.1\x0b"),
                     good.rstrip(b"\n")):  # no end of line
            out = subprocess.run([sys.executable, "-I", "-S", "-B", script], input=line,
                                 stdout=subprocess.PIPE, timeout=30).stdout
            self.assertTrue(out.startswith(b"ERROR "), (line, out))


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


def _stats_of(sock: socket.socket, proto: Any) -> Dict[str, int]:
    """A store's STATS over a connection already proven to it."""
    _, out = _request(sock, proto.STATS, [])
    return {k: int(v) for k, v in (f.decode().split("=") for f in out)}


class Relays(unittest.TestCase):
    """A store that forwards a prefix's keys up a chain of stores to a
    group leader's (hcg/torch/_store_relay.py), on the real servers with
    proven connections; no torch needed. Where a store forwards is said by
    its rank through its pipe (Server.relay, here the test); a member's
    RELAY only names the prefix."""

    def setUp(self) -> None:
        from hcg.torch import _store_dial, _store_proto as proto, store

        self.proto, self.store, self.dial = proto, store, _store_dial.dial
        self.servers: List[Any] = []

    def tearDown(self) -> None:
        for server in self.servers:
            server.close()

    def server(self) -> Tuple[int, bytes, int]:
        """A store: its port, its secret and its "rank" (its index)."""
        secret = os.urandom(16)
        server = self.store.Server("127.0.0.1", secret)
        self.servers.append(server)
        return server.port, secret, len(self.servers) - 1

    def tell(self, where: Tuple[int, bytes, int], prefix: bytes,
             up: Tuple[int, bytes, int], further: bool = False) -> None:
        """The store's rank says where the prefix's keys go: to ``up``."""
        self.servers[where[2]].relay(prefix.decode(), "127.0.0.1", up[0], up[1], up[2],
                                     further, _timeout(10))

    def named(self, m: socket.socket, prefix: bytes, rank: int = 0,
              ms: int = 10000) -> Tuple[int, List[bytes]]:
        """A member's RELAY: the prefix, its wait, its head's rank."""
        return _request(m, self.proto.RELAY, [prefix, b"%d" % ms, b"%d" % rank])

    def conn(self, where: Tuple[int, bytes, int]) -> socket.socket:
        sock = self.dial("127.0.0.1", where[0], where[1], 10)
        self.addCleanup(sock.close)
        return sock

    def stats(self, where: Tuple[int, bytes, int]) -> Dict[str, int]:
        return _stats_of(self.conn(where), self.proto)

    def test_a_slice_reads_and_writes_the_leaders_keys(self) -> None:
        p = self.proto
        lead, head = self.server(), self.server()
        pre = b"hcg/g/0/0//"
        a, b, c = self.conn(lead), self.conn(head), self.conn(head)
        self.tell(head, pre, lead)
        for m in (b, c):  # every member tells its head, the prefix alone
            self.assertEqual(self.named(m, pre, head[2]), (p.OK, []))
        self.assertEqual(_request(b, p.ADD, [pre + b"n", b"1"]), (p.OK, [b"1"]))
        self.assertEqual(_request(a, p.ADD, [pre + b"n", b"1"]), (p.OK, [b"2"]))
        self.assertEqual(_request(c, p.ADD, [pre + b"n", b"1"]), (p.OK, [b"3"]))
        self.assertEqual(_request(c, p.CAS, [pre + b"go", b"", b"ok"]), (p.OK, [b"ok"]))
        self.assertEqual(_request(a, p.GET, [b"1000", pre + b"go"]), (p.OK, [b"ok"]))
        # Keys under no relayed prefix stay the head's own.
        self.assertEqual(_request(b, p.SET, [b"mine", b"x"]), (p.OK, []))
        self.assertEqual(_request(a, p.CHECK, [b"mine"]), (p.OK, [b"0"]))
        self.assertEqual(_request(b, p.CHECK, [pre + b"n", b"mine"])[0], p.ERROR)
        # Waits for the same key at once go up once, and all are answered.
        got: Dict[str, Any] = {}
        waiters = [threading.Thread(target=lambda m=m, n=n: got.__setitem__(
            n, _request(m, p.GET, [b"5000", pre + b"id"]))) for n, m in (("b", b), ("c", c))]
        for t in waiters:
            t.start()
        time.sleep(0.3)
        _request(a, p.SET, [pre + b"id", b"ID"])
        for t in waiters:
            t.join()
        self.assertEqual(got, {"b": (p.OK, [b"ID"]), "c": (p.OK, [b"ID"])})
        st = self.stats(head)
        self.assertEqual((st["relayed"], st["links"]), (1, 1))
        self.assertEqual(st["forwarded"] - st["upstream"], 1, st)
        # A wait that times out up there times out here.
        self.assertEqual(_request(b, p.GET, [b"100", pre + b"never"]), (p.TIMEOUT, []))

    def test_a_slice_s_adds_go_up_together_and_stay_exact(self) -> None:
        p = self.proto
        lead, head = self.server(), self.server()
        pre = b"hcg/g/0/0//"
        members = [self.conn(head) for _ in range(40)]
        self.tell(head, pre, lead)
        self.named(members[0], pre)
        for m in members:  # all at once, as a slice checks in
            m.sendall(p.frame(p.ADD, [pre + b"hcg_arrived", b"1"]))
        got = sorted(int(_reply(m)[1][0]) for m in members)
        self.assertEqual(got, list(range(1, 41)))  # each its own value
        st = self.stats(head)
        self.assertEqual(st["forwarded"], 40)
        self.assertLess(st["upstream"], 40, st)  # in batches (MADD)
        self.assertEqual(_request(self.conn(lead), p.ADD, [pre + b"hcg_arrived", b"0"]),
                         (p.OK, [b"40"]))
        # An ADD on a value that is no number: an error, as at the leader's.
        _request(self.conn(lead), p.SET, [pre + b"text", b"x"])
        self.assertEqual(_request(members[1], p.ADD, [pre + b"text", b"1"])[0], p.ERROR)

    def test_a_chain_of_heads(self) -> None:
        p = self.proto
        lead, mid, low = self.server(), self.server(), self.server()
        pre = b"hcg/g/0/0//"
        m = self.conn(low)
        self.assertEqual(self.named(m, pre), (p.OK, []))
        # Each head says its own next store only: the middle one's rank
        # later than the requests that reach it (held there meanwhile).
        self.tell(low, pre, mid, further=True)
        self.tell(mid, pre, lead)
        self.assertEqual(_request(m, p.SET, [pre + b"k", b"v"]), (p.OK, []))
        self.assertEqual(_request(self.conn(lead), p.GET, [b"1000", pre + b"k"]),
                         (p.OK, [b"v"]))
        self.assertEqual(self.stats(mid)["relayed"], 1)
        self.assertEqual(self.stats(mid)["keys"], 0)  # held at the leader's only
        # A slice's adds at once, in batches through the middle store too.
        members = [self.conn(low) for _ in range(10)]
        for c in members:
            c.sendall(p.frame(p.ADD, [pre + b"n", b"1"]))
        self.assertEqual(sorted(int(_reply(c)[1][0]) for c in members), list(range(1, 11)))

    def test_a_middle_store_batches_the_batches_below(self) -> None:
        # Three heads under one middle store: their batches (MADD) join the
        # middle's own, so its link asks the leader's fewer times than the
        # heads asked it, and every member still gets its own value.
        p = self.proto
        lead, mid = self.server(), self.server()
        leader = self.servers[0]
        lows = [self.server() for _ in range(3)]
        pre = b"hcg/g/0/0//"
        members = []
        self.tell(mid, pre, lead)
        for low in lows:
            first = self.conn(low)
            self.tell(low, pre, mid, further=True)
            self.named(first, pre)
            members += [first] + [self.conn(low) for _ in range(19)]
        watch = self.conn(mid)
        for rnd in range(3):
            # The leader's store stopped while the adds go out: the middle
            # store's first batch waits there, and the heads' batches that
            # reach it meanwhile must join its next one. Without the stop,
            # whether two batches meet at the middle store is the
            # scheduler's choice (on a loaded machine each one went up
            # alone: upstream 19 of 19 forwarded).
            os.kill(leader.pid, signal.SIGSTOP)
            try:
                before = _stats_of(watch, p)["forwarded"]
                for c in members:
                    c.sendall(p.frame(p.ADD, [pre + b"n", b"1"]))
                deadline = time.monotonic() + 20
                while (_stats_of(watch, p)["forwarded"] < before + len(lows)
                       and time.monotonic() < deadline):
                    time.sleep(0.01)
            finally:
                os.kill(leader.pid, signal.SIGCONT)
            got = sorted(int(_reply(c)[1][0]) for c in members)
            self.assertEqual(got, list(range(60 * rnd + 1, 60 * rnd + 61)))
        st = self.stats(mid)
        below = sum(self.stats(low)["upstream"] for low in lows)
        self.assertEqual(st["forwarded"], below - len(lows))  # less each one's RELAY
        self.assertLess(st["upstream"], st["forwarded"], (st, below))

    def test_each_add_of_a_batch_is_its_own(self) -> None:
        p = self.proto
        lead, head = self.server(), self.server()
        pre = b"hcg/g/0/0//"
        up = self.conn(lead)
        # At the leader's: a key whose value is no number gets an empty
        # field, the others are made.
        _request(up, p.SET, [pre + b"text", b"x"])
        self.assertEqual(_request(up, p.MADD, [pre + b"a", b"2", pre + b"text", b"1",
                                               pre + b"a", b"3"]),
                         (p.OK, [b"2", b"", b"5"]))
        self.assertEqual(_request(up, p.MADD, [pre + b"a", b"one"])[0], p.ERROR)
        self.assertEqual(_request(up, p.ADD, [pre + b"a", b"0"]), (p.OK, [b"5"]))
        # Through a head: a member's add on such a key fails alone, and an
        # amount that is no number never goes up.
        members = [self.conn(head) for _ in range(20)]
        self.tell(head, pre, lead)
        self.named(members[0], pre)
        for i, m in enumerate(members):
            m.sendall(p.frame(p.ADD, [pre + (b"text" if i == 7 else b"a"),
                                      b"z" if i == 9 else b"1"]))
        got = [_reply(m) for m in members]
        self.assertEqual(got[7][0], p.ERROR)
        self.assertIn(b"is not a number", got[7][1][0])
        self.assertEqual(got[9], (p.ERROR, [b"an amount of these adds is not a number"]))
        ok = sorted(int(out[0]) for i, (status, out) in enumerate(got) if i not in (7, 9))
        self.assertEqual(ok, list(range(6, 24)))

    def test_what_goes_wrong_up_the_chain_is_said(self) -> None:
        p = self.proto
        lead, head = self.server(), self.server()
        pre = b"hcg/g/0/0//"
        m = self.conn(head)
        # A secret that is not the leader's store's: refused, and said.
        self.tell(head, pre, (lead[0], os.urandom(16), lead[2]))
        self.named(m, pre)
        status, out = _request(m, p.ADD, [pre + b"n", b"1"])
        self.assertEqual(status, p.ERROR)
        self.assertIn(b"could not relay to the store at 127.0.0.1:%d" % lead[0], out[0])
        self.assertIn(b"refused this store's proof", out[0])
        # The leader's store gone while a member waits: told at once.
        pre2 = b"hcg/h/0/0//"
        self.tell(head, pre2, lead)
        self.named(m, pre2)
        _request(m, p.ADD, [pre2 + b"n", b"1"])
        got: Dict[str, Any] = {}
        t = threading.Thread(target=lambda: got.__setitem__(
            "w", _request(m, p.GET, [b"30000", pre2 + b"never"])))
        start = time.monotonic()
        t.start()
        time.sleep(0.3)
        self.servers[0].close()
        t.join()
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(got["w"][0], p.ERROR)
        self.assertIn(b"it closed the link", got["w"][1][0])

    def test_bad_relays_are_refused(self) -> None:
        p = self.proto
        head = self.server()
        m = self.conn(head)
        for fields in ([b"no-slash", b"1000", b"0"], [b"a/", b"soon", b"0"],
                       [b"a/", b"1000"], [b"a/", b"1000", b"0", b"127.0.0.1"],
                       [b"a/", b"1000", b"-1"]):
            status, out = _request(m, p.RELAY, fields)
            self.assertEqual(status, p.ERROR, fields)
            self.assertIn(b"a relay is a prefix ending with '/'", out[0])
        self.assertEqual(self.named(m, b"a/b/"), (p.OK, []))
        self.assertEqual(self.named(m, b"a/b/"), (p.OK, []))  # idempotent
        status, out = self.named(m, b"a/")
        self.assertIn(b"overlaps", out[0])
        # What its rank writes on the pipe is checked too: a bad line is
        # said on standard error, and the store goes on.
        with self.assertRaises(HcgError):
            self.servers[head[2]].relay("no-slash", "127.0.0.1", 1, SECRET, 0, False,
                                        _timeout(1))
        self.servers[head[2]]._command("relay zz")
        self.assertEqual(_request(m, p.NUM, []), (p.OK, [b"0"]))

    def test_requests_wait_for_the_word_of_the_head_s_rank(self) -> None:
        # A member may reach its head's store before the head's rank said
        # where the group's keys go: its requests wait there, then go up.
        p = self.proto
        lead, head = self.server(), self.server()
        pre = b"hcg/g/0/0//"
        m, t = self.conn(head), self.conn(head)
        self.assertEqual(self.named(m, pre, 5), (p.OK, []))
        m.sendall(p.frame(p.SET, [pre + b"k", b"v"]))
        t.sendall(p.frame(p.TAGGED, [b"t1", bytes([p.ADD]), pre + b"n", b"2"]))
        time.sleep(0.3)
        self.assertEqual(select_readable([m, t], 0.2), [])
        self.assertEqual(self.stats(head)["held"], 1)
        self.tell(head, pre, lead)
        self.assertEqual(_reply(m), (p.OK, []))
        self.assertEqual(_reply(t), (p.OK, [b"t1", b"2"]))
        self.assertEqual(_request(self.conn(lead), p.GET, [b"1000", pre + b"k"]),
                         (p.OK, [b"v"]))
        # A rank that never says: the wait its members named ends with an
        # error that names it, and so does every later request.
        pre2 = b"hcg/h/0/0//"
        self.named(m, pre2, 7, ms=300)
        start = time.monotonic()
        status, out = _request(m, p.ADD, [pre2 + b"n", b"1"])
        self.assertEqual(status, p.ERROR)
        self.assertLess(time.monotonic() - start, 5)
        self.assertIn(b"rank 7, which hosts it and heads their slice, did not say "
                      b"where", out[0])
        self.assertEqual(_request(m, p.GET, [b"100", pre2 + b"n"]), (p.ERROR, out))
        self.assertEqual(self.named(m, pre2, 7), (p.ERROR, out))
        # A rank that cannot say (the next store up failed): its reason.
        pre3 = b"hcg/i/0/0//"
        self.named(m, pre3)
        m.sendall(p.frame(p.SET, [pre3 + b"k", b"v"]))
        self.servers[head[2]].fail(pre3.decode(), "rank 9 failed before it published")
        self.assertEqual(_reply(m), (p.ERROR, [b"rank 9 failed before it published"]))
        # Or whose meeting is its own store after all (local): served there.
        pre4 = b"hcg/j/0/0//"
        self.named(m, pre4)
        m.sendall(p.frame(p.ADD, [pre4 + b"n", b"1"]))
        self.servers[head[2]].local(pre4.decode())
        self.assertEqual(_reply(m), (p.OK, [b"1"]))
        self.assertEqual(_request(t, p.ADD, [pre4 + b"n", b"1"]), (p.OK, [b"2"]))
        st = self.stats(head)
        self.assertEqual((st["relayed"], st["held"], st["keys"]), (1, 0, 1), st)

    def test_what_waits_on_a_stalled_leader_is_bounded(self) -> None:
        # The leader's store stopped: requests pile up at the head for its
        # link, up to MAX_TAGGED a connection; past that, an error each.
        p = self.proto
        lead, head = self.server(), self.server()
        pre = b"hcg/g/0/0//"
        m = self.conn(head)
        self.tell(head, pre, lead)
        self.named(m, pre)
        os.kill(self.servers[0].pid, signal.SIGSTOP)
        try:
            n = p.MAX_TAGGED + 3
            m.sendall(b"".join(p.frame(p.TAGGED, [b"%d" % i, bytes([p.SET]), pre + b"k",
                                                  b"v"]) for i in range(n)))
            refused = [_reply(m) for _ in range(3)]
            self.assertEqual([r[1][0] for r in refused],
                             [b"%d" % i for i in range(p.MAX_TAGGED, n)])
            for status, out in refused:
                self.assertEqual(status, p.ERROR)
                self.assertIn(b"MAX_TAGGED", out[1])
        finally:
            os.kill(self.servers[0].pid, signal.SIGCONT)
        answers = [_reply(m) for _ in range(p.MAX_TAGGED)]  # then all go through
        self.assertTrue(all(status == p.OK for status, _ in answers))

    def test_tagged_requests_answer_out_of_order(self) -> None:
        p = self.proto
        m = self.conn(self.server())
        m.sendall(p.frame(p.TAGGED, [b"w", bytes([p.GET]), b"5000", b"k"]) +
                  p.frame(p.TAGGED, [b"s", bytes([p.SET]), b"k", b"v"]))
        # The set is answered first, then the wait it woke.
        self.assertEqual(_reply(m), (p.OK, [b"s"]))
        self.assertEqual(_reply(m), (p.OK, [b"w", b"v"]))
        # A tag inside a tag is no request of this protocol.
        m.sendall(p.frame(p.TAGGED, [b"x", bytes([p.TAGGED]), b"y", bytes([p.NUM])]))
        self.assertEqual(m.recv(10), b"")


class SlicePaths(unittest.TestCase):
    """hcg.torch._places.path: no store serves more than a slice of a
    group, nor more than a slice of links."""

    def test_no_store_serves_more_than_the_fanin(self) -> None:
        from hcg.torch import _places

        for k, fanin in ((1, 8), (2, 8), (3, 16), (100, 64), (1000, 64), (5000, 512),
                         (102400, 512), (102400, 256)):
            size = _places.slice_for(k, fanin)
            members = list(range(7, 7 + 2 * k, 2))
            conns: Dict[int, int] = {}
            for i, m in enumerate(members):
                route = _places.path(members, m, size, i)
                if i % 997 == 0:  # the look-up finds the same place
                    self.assertEqual(_places.path(members, m, size), route)
                self.assertEqual(route[-1], members[0])
                host = route[0]
                conns[host] = conns.get(host, 0) + _places.MEMBER_CLIENTS
                if host == m and len(route) > 1:  # a head: its link up
                    conns[route[1]] = conns.get(route[1], 0) + 1
            self.assertLessEqual(max(conns.values()), fanin, (k, fanin, size))
            if k * _places.MEMBER_CLIENTS <= fanin:
                self.assertEqual(list(conns), [members[0]])

    def test_reach_counts_the_paths_through_a_member(self) -> None:
        # subtree and path, both libhcg's (hcg_slice_reach and
        # hcg_slice_route), as the binding maps members to their indices.
        from hcg.torch import _places

        for k, size in ((1, 1), (1, 4), (7, 2), (40, 3), (1000, 16), (1000, 2)):
            members = list(range(5, 5 + 3 * k, 3))
            through = [0] * k
            for i, m in enumerate(members):
                route = _places.path(members, m, size, i)
                self.assertLessEqual(len(route), _places.depth(k, size) + 1)
                if route[0] != m:
                    through[i] += 1  # itself
                for r in route:
                    through[members.index(r)] += 1
            self.assertEqual([_places.subtree(k, i, size) for i in range(k)], through,
                             (k, size))
        # A route longer than the first read's room: read again.
        members = list(range(1 << 17))
        levels = _places.depth(1 << 17, 2)
        self.assertEqual(levels, 16)
        last = (1 << 17) - 1  # a stop of its own on every level
        want = [last - last % 2 ** k for k in range(1, levels + 1)] + [0]
        self.assertGreater(len(want), _places._ROUTE_MAX)
        self.assertEqual(_places.path(members, last, 2, last), want)


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "no torch in this interpreter")
class GroupsAtTheirLeaders(unittest.TestCase):
    """As under PMIx: every rank opens a store of its own, and each group
    meets at its first member's (hcg.torch._places)."""

    LAYOUT = "llm:tp=2,cp=2,dp=*,pp=1; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp"

    def test_each_store_serves_only_the_groups_its_rank_leads(self) -> None:
        results = run_job("places_load", 8, self.LAYOUT, places=True)
        total = 0
        for rank, res in enumerate(results):
            self.assertEqual(res.get("bad"), [], "rank %d: %s" % (rank, res))
            total += res["requests"]
            if rank == 0:
                continue  # the default group's store too
            if not res["led"]:
                # Leads no group: nobody connected to its store.
                self.assertEqual((res["proven"], res["requests"]), (0, 0), res)
            else:
                # At most one client per building thread (4) and member
                # of the groups it leads (itself too).
                self.assertLessEqual(res["proven"], 4 * len(res["led"]), res)
                self.assertGreater(res["requests"], 0, res)
        # Rank 0 no longer answers for every group of the job.
        self.assertLess(results[0]["requests"], total)
        self.assertGreater(sum(1 for r in results[1:] if r["requests"]), 0)

    def test_member_that_fails_tells_the_others(self) -> None:
        check_peer_fails(self, run_job("peer_fails", 4, places=True))

    def test_groups_of_more_than_a_slice_meet_through_its_heads(self) -> None:
        # HCG_FANIN=8: 2 members at a store (8 connections over 4 building
        # threads each), so every group of 3 or more meets through relays,
        # the world's 2 deep.
        # Every byte between the members and the stores and between the
        # stores is recorded (a proxy in front of each store): no secret
        # crosses it, raw or in hex; the secrets reached the stores' links
        # through their ranks' pipes (doc/security.md).
        from hcg.torch import _places

        wire = tempfile.mkdtemp(prefix="hcg-wire.")
        self.addCleanup(shutil.rmtree, wire, True)
        results = run_job("places_load", 8, self.LAYOUT, places=True, fanin=8,
                          wire=wire)
        layout = hcg.Layout(self.LAYOUT, 8)
        groups = {}
        for r in range(8):
            for grid in layout.grids_of_rank(r):
                for g in layout.collection(grid, r).values():
                    if g is not None:
                        groups[(g.key, tuple(g.members))] = g.members
        clients: Dict[int, int] = {}
        readers: Dict[int, Set[int]] = {}  # publication -> who may read it
        for members in groups.values():
            for m in members:
                size = _places.group_slice(len(members), 8)
                route = _places.path(members, m, size)
                clients[route[0]] = clients.get(route[0], 0) + 1
                if route[0] == m and len(route) > 1:
                    clients[route[1]] = clients.get(route[1], 0) + 1  # its link
                for r in _places.reads(members, m, size):
                    readers.setdefault(r, set()).add(m)
        for rank, res in enumerate(results):
            self.assertEqual(res.get("bad"), [], "rank %d: %s" % (rank, res))
            if rank:  # rank 0's store is also the test's job store
                # At most one connection per building thread and client.
                self.assertLessEqual(res["proven"], 4 * clients.get(rank, 0), res)
        self.assertGreater(sum(r["forwarded"] for r in results), 0)
        # Each rank read only the publications of the stores it connects to
        # and, heading a slice, of the next one up: rank 0's by its slices
        # and the heads below it, not by every rank.
        read_by: Dict[int, Set[int]] = {}
        for rank, res in enumerate(results):
            for r in res["read"]:
                read_by.setdefault(r, set()).add(rank)
        for r, who in read_by.items():
            self.assertLessEqual(who, readers.get(r, set()), "publication %d" % r)
        self.assertLess(len(read_by[0]), 7, read_by)
        recorded = b""
        for name in os.listdir(wire):
            with open(os.path.join(wire, name), "rb") as f:
                recorded += f.read()
        self.assertGreater(len(recorded), 10000)
        self.assertIn(b"hcg_arrived", recorded)  # the groups' requests
        secrets = [bytes.fromhex(r["secret"]) for r in results]
        self.assertEqual(len(set(secrets)), 8)
        for rank, secret in enumerate(secrets):
            for form in (secret, secret.hex().encode(), secret.hex().upper().encode()):
                self.assertNotIn(form, recorded, "rank %d's secret" % rank)

    def test_member_that_fails_tells_the_others_through_relays(self) -> None:
        check_peer_fails(self, run_job("peer_fails", 4, places=True, fanin=4))


if __name__ == "__main__":
    unittest.main()
