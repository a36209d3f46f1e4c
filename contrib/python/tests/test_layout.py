"""The Layout API: description, coordinates, stages, lifetime."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import unittest

import hcg
from hcg import HcgError, Status
from hcg import _lib

from support import cli


class Description(unittest.TestCase):

    def test_canonical_text_round_trips(self):
        for text, world in (("tp=2,cp=2,pp=4,dp=*", 32),
                            ("llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,"
                             "ep=4,expt_dp=*,pp", 16),
                            ("vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*", 24),
                            ("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8)):
            with self.subTest(layout=text):
                with hcg.Layout(text, world) as a:
                    with hcg.Layout(a.text, world) as b:
                        self.assertEqual(b.text, a.text)
                        self.assertEqual(b.grids, a.grids)
                    self.assertNotIn("*", a.text)

    def test_grids_views_dims(self):
        with hcg.Layout("llm:tp=2,cp=1,dp=*,pp=2; "
                        "llm/expert:expt_tp=1,ep=4,expt_dp=*,pp", 16) as L:
            self.assertEqual(L.world_size, 16)
            self.assertEqual(L.mode, "single")
            self.assertEqual(L.language, "llm")
            (g,) = L.grids
            self.assertEqual((g.index, g.name, g.offset, g.size, g.language),
                             (0, "llm", 0, 16, True))
            self.assertEqual(g.dim_names, ("tp", "cp", "dp", "pp"))
            self.assertEqual([d.size for d in g.dims], [2, 1, 4, 2])
            self.assertEqual([d.stride for d in g.dims], [1, 2, 2, 8])
            self.assertEqual([v.name for v in g.views], ["base", "expert"])
            ep = g.view("expert").dim("ep")
            self.assertEqual((ep.size, ep.stride, ep.shared), (4, 1, False))
            self.assertTrue(g.view("expert").dim("pp").shared)
            self.assertIs(L.grid(), g)
            self.assertIs(L.grid(0), g)
            self.assertIs(L.grid("llm"), g)
            self.assertEqual(g.ranks, range(0, 16))

    def test_modes(self):
        with hcg.Layout("vision:tp=4,dp=2; llm:tp=2,dp=*", 16) as L:
            self.assertEqual(L.mode, "non-colocated")
            self.assertEqual([(g.offset, g.size) for g in L.grids],
                             [(0, 8), (8, 8)])
            self.assertEqual(L.grids_of_rank(3), ["vision"])
            self.assertEqual(L.grids_of_rank(9), ["llm"])
        with hcg.Layout("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8) as L:
            self.assertEqual(L.mode, "colocated")
            self.assertEqual(L.grids_of_rank(3), ["vision", "llm"])

    def test_language_override(self):
        with hcg.Layout("enc:tp=2,dp=2; dec:tp=2,dp=2", 8, language="dec") as L:
            self.assertEqual(L.language, "dec")
            self.assertEqual([g.language for g in L.grids], [False, True])


class Coordinates(unittest.TestCase):

    def setUp(self):
        self.L = hcg.Layout("llm:tp=2,cp=2,dp=2,pp=2; "
                            "llm/expert:expt_tp=2,ep=2,expt_dp=2,pp", 16)
        self.addCleanup(self.L.close)

    def test_coords_rebuild_the_rank(self):
        g = self.L.grid("llm")
        for view in g.views:
            for rank in range(16):
                c = self.L.coords(rank, "llm", view.name)
                self.assertEqual(list(c), list(view.dim_names))
                self.assertEqual(sum(c[d.name] * d.stride for d in view.dims),
                                 rank - g.offset)

    def test_all_coords(self):
        self.assertEqual(self.L.all_coords(13),
                         {"llm": {"base": {"tp": 1, "cp": 0, "dp": 1, "pp": 1},
                                  "expert": {"expt_tp": 1, "ep": 0,
                                             "expt_dp": 1, "pp": 1}}})

    def test_group_of_rank_agrees_with_enumerate(self):
        for spec in ("llm:tp", "llm:dp,cp", "llm:pp", "llm/expert:ep",
                     "llm/expert:expt_dp,pp", "llm:"):
            groups = self.L.enumerate(spec)
            for rank in range(16):
                members, index, key = self.L.group_of_rank(spec, rank)
                self.assertIn(members, groups)
                self.assertEqual(members[index], rank)
                self.assertEqual(key, self.L.request(spec).key)

    def test_groups_iterator(self):
        it = self.L.groups("llm:tp")
        self.assertEqual(next(it), [0, 1])
        self.assertEqual(list(it), self.L.enumerate("llm:tp")[1:])

    def test_request_fields(self):
        req = self.L.request("llm/expert:pp,ep")
        self.assertEqual((req.grid, req.view, req.dims, req.key),
                         ("llm", "expert", ("ep", "pp"), "llm/expert:pp-ep"))
        self.assertEqual((req.group_size, req.num_groups), (4, 4))
        self.assertEqual(self.L.request_dims(["pp", "ep"], "llm", "expert"), req)

    def test_stage(self):
        self.assertEqual(self.L.stage(3, "llm"), hcg.Stage(True, False))
        self.assertEqual(self.L.stage(11, "llm"), hcg.Stage(False, True))
        with hcg.Layout("vision@0:tp=2,pp=2,dp=2; llm@0:tp=4,dp=2", 8) as L:
            # Colocated modules treat pp as 1.
            for r in range(8):
                self.assertEqual(L.stage(r, "vision"), hcg.Stage(True, True))


class Lifetime(unittest.TestCase):

    def test_context_manager_and_gc(self):
        with hcg.Layout("tp=2,dp=4", 8) as L:
            self.assertFalse(L.closed)
        self.assertTrue(L.closed)
        # Many layouts dropped without close(): freed by __del__, no crash.
        for _ in range(2000):
            hcg.Layout("tp=2,dp=4", 8).enumerate("tp")
        gc.collect()

    def test_threads_share_a_layout(self):
        L = hcg.Layout("tp=2,cp=2,pp=2,dp=*", 64)
        self.addCleanup(L.close)
        want = L.enumerate("dp,cp")
        errors = []

        def work():
            try:
                for _ in range(50):
                    assert L.enumerate("dp,cp") == want
            except Exception as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class Library(unittest.TestCase):

    def test_versions_and_constants(self):
        self.assertEqual(hcg.library_version(), hcg.__version__)
        lib = _lib.lib()
        self.assertEqual([_lib.text(lib.hcg_field_name(i))
                          for i in range(len(hcg.FIELDS))], list(hcg.FIELDS))
        self.assertIsNone(lib.hcg_field_name(len(hcg.FIELDS)))
        for code in Status:
            self.assertTrue(_lib.text(lib.hcg_strerror(code)))
        err = HcgError(Status.ENOTFOUND, "x")
        self.assertEqual((err.name, str(err)), ("ENOTFOUND", "x"))
        self.assertEqual(HcgError(99, "future").name, "99")

    def test_fields_are_the_commands(self):
        # FIELDS is written out (import hcg needs no library); the library
        # (above) and `hcg help fields`, which tests/cli/facts.bats holds
        # the docs to, must name the same fields in the same order.
        table = cli("help", "fields").stdout.splitlines()
        self.assertEqual(table[0].split()[0], "FIELD")
        self.assertEqual(hcg.FIELDS, tuple(line.split()[0] for line in table[1:]))


    def test_import_needs_no_library(self):
        # A process outside the job (no HCG_LIBRARY, no libhcg on its
        # path) imports hcg and uses hcg.torch.store's client alone: the
        # library is loaded at the first call that needs it, not before.
        env = dict(os.environ, HCG_LIBRARY="/nonexistent/libhcg.so.1")
        proc = subprocess.run([sys.executable, "-c", "import hcg, hcg.torch.store; "
                               "print(len(hcg.FIELDS))"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), str(len(hcg.FIELDS)))


if __name__ == "__main__":
    unittest.main()
