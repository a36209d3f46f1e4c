"""Every golden value of doc/semantics.md sections 2-5 (and the MIMO bridge
goldens of sections 7-8), through the Python binding.

doc/semantics.md states grids as shapes at offsets; here each is written as the
layout that makes that grid (a grid at an offset needs grids before it to
cover the world, so those layouts have a filler grid and name the grid
under test llm).
"""

from __future__ import annotations

import unittest

import hcg
from hcg import HcgError, Status


def enum(layout: str, world: int, spec: str):
    with hcg.Layout(layout, world) as L:
        return L.enumerate(spec)


class Section2Enumeration(unittest.TestCase):
    """Group enumeration for a set of dims."""

    def test_table(self):
        cases = [
            # (layout, world, request, enumeration)
            ("tp=2,dp=4", 8, "tp", [[0, 1], [2, 3], [4, 5], [6, 7]]),
            ("tp=2,cp=2,dp=2", 8, "tp,cp", [[0, 1, 2, 3], [4, 5, 6, 7]]),
            ("fill:x=4; llm@4:tp=2,dp=2", 8, "llm:tp", [[4, 5], [6, 7]]),
            ("tp=1,cp=2,dp=4", 8, "tp", [[r] for r in range(8)]),
            ("a=2,b=2,c=2", 8, "c", [[0, 4], [1, 5], [2, 6], [3, 7]]),
            ("tp=2,cp=3,dp=4", 24, "cp",
             [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11], [12, 14, 16],
              [13, 15, 17], [18, 20, 22], [19, 21, 23]]),
            ("tp=2,cp=3,dp=4", 24, "dp",
             [[0, 6, 12, 18], [1, 7, 13, 19], [2, 8, 14, 20], [3, 9, 15, 21],
              [4, 10, 16, 22], [5, 11, 17, 23]]),
            ("tp=2,cp=3,dp=4", 24, "dp,tp",
             [[0, 1, 6, 7, 12, 13, 18, 19], [2, 3, 8, 9, 14, 15, 20, 21],
              [4, 5, 10, 11, 16, 17, 22, 23]]),
            ("fill:x=3; llm@3:tp=2,cp=2,dp=2", 11, "llm:dp",
             [[3, 7], [4, 8], [5, 9], [6, 10]]),
            ("fill:x=10; llm@10:tp=3,dp=2", 16, "llm:dp",
             [[10, 13], [11, 14], [12, 15]]),
            ("tp=2,cp=1,pp=2,dp=2", 8, "pp", [[0, 2], [1, 3], [4, 6], [5, 7]]),
            # Megatron's order tp-cp-ep-dp-pp with tp=2, pp=4 on 16 ranks.
            ("tp=2,cp=1,ep=1,dp=*,pp=4", 16, "dp",
             [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14],
              [13, 15]]),
            ("tp=2,cp=1,ep=1,dp=*,pp=4", 16, "pp",
             [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]),
        ]
        for layout, world, spec, want in cases:
            with self.subTest(layout=layout, spec=spec):
                self.assertEqual(enum(layout, world, spec), want)

    def test_24_groups_of_5(self):
        groups = enum("tp=2,cp=3,pp=4,dp=5", 120, "dp")
        self.assertEqual(len(groups), 24)
        self.assertTrue(all(len(g) == 5 for g in groups))
        # dp is the slowest dim: stride 24; groups sorted by first member.
        self.assertEqual(groups[0], [0, 24, 48, 72, 96])
        self.assertEqual([g[0] for g in groups], list(range(24)))
        self.assertEqual(sorted(r for g in groups for r in g), list(range(120)))

    def test_canonical_form(self):
        with hcg.Layout("tp=2,cp=3,pp=2,dp=2", 24) as L:
            for spec in ("tp", "cp,dp", "pp,tp", "dp,cp,tp", "tp,cp,pp,dp", ""):
                groups = L.enumerate(spec) if spec else L.enumerate("world:")
                self.assertEqual(groups, sorted(groups, key=lambda g: g[0]))
                for g in groups:
                    self.assertEqual(g, sorted(g))
                self.assertEqual(sorted(r for g in groups for r in g),
                                 list(range(24)))

    def test_empty_and_full_requests(self):
        with hcg.Layout("tp=2,dp=4", 8) as L:
            self.assertEqual(L.enumerate("world:"), [[r] for r in range(8)])
            self.assertEqual(L.enumerate("tp,dp"), [list(range(8))])
            self.assertEqual(L.request("world:").key, "world:")

    def test_naming_order_never_matters(self):
        with hcg.Layout("tp=2,cp=2,dp=2", 8) as L:
            self.assertEqual(L.request("tp,cp"), L.request("cp,tp"))
            self.assertEqual(L.enumerate("dp,tp"), L.enumerate("tp,dp"))

    def test_keys(self):
        with hcg.Layout("tp=2,cp=2,dp=2", 8) as L:
            self.assertEqual(L.request("tp,cp").key, "world:cp-tp")
            self.assertEqual(L.request("dp,tp").key, "world:dp-tp")
            self.assertEqual(L.request("tp,dp,cp").key, "world:dp-cp-tp")
            self.assertEqual(L.request_dims(["cp", "tp"]).key, "world:cp-tp")
        with hcg.Layout("llm:tp=2,cp=2,dp=2", 8) as L:
            self.assertEqual(L.request("llm:cp,tp").key, "llm:cp-tp")

    def test_grid_errors(self):
        cases = [
            ("tp=2,tp=2", 8, Status.ELAYOUT, "names dim 'tp' twice"),
            ("tp=2,dp=0", 8, None, "positive integer"),
            ("tp=2,dp=8", 8, Status.ELAYOUT, "over sized"),
        ]
        for layout, world, code, text in cases:
            with self.subTest(layout=layout):
                with self.assertRaises(HcgError) as cm:
                    hcg.Layout(layout, world)
                if code is not None:
                    self.assertEqual(cm.exception.code, code)
                self.assertIn(text, cm.exception.message)

    def test_unknown_dim_in_request(self):
        with hcg.Layout("tp=2,dp=4", 8) as L:
            with self.assertRaises(HcgError) as cm:
                L.request("tp,zz")
            self.assertEqual(cm.exception.code, Status.ENOTFOUND)
            self.assertIn("no dim 'zz'", str(cm.exception))


VIEW_OK = "llm:tp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,pp"


class Section3Views(unittest.TestCase):
    """Named views."""

    def test_view_that_passes(self):
        with hcg.Layout(VIEW_OK, 8) as L:
            pp = [[0, 4], [1, 5], [2, 6], [3, 7]]
            self.assertEqual(L.enumerate("llm:pp"), pp)
            self.assertEqual(L.enumerate("llm/expert:pp"), pp)
            self.assertEqual(L.enumerate("llm/expert:expt_tp,ep"),
                             [[0, 1, 2, 3], [4, 5, 6, 7]])
            view = L.grid("llm").view("expert")
            self.assertEqual([d.shared for d in view.dims], [False, False, True])

    def test_view_that_fails(self):
        text = "llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4"
        with self.assertRaises(HcgError) as cm:
            hcg.Layout(text, 8)
        self.assertEqual(cm.exception.code, Status.ELAYOUT)
        self.assertIn("base pp [[0,4],[1,5],[2,6],[3,7]] != view pp "
                      "[[0,1],[2,3],[4,5],[6,7]]", cm.exception.message)
        self.assertEqual(cm.exception.column, 29)

    def test_all_shared_request_resolves_to_base(self):
        with hcg.Layout(VIEW_OK, 8) as L:
            base, view = L.request("llm:pp"), L.request("llm/expert:pp")
            self.assertEqual(view.key, "llm:pp")
            self.assertEqual(view.view, "base")
            self.assertEqual(view, base)
            self.assertEqual(L.group_of_rank("llm/expert:pp", 5),
                             L.group_of_rank("llm:pp", 5))
            # A view request with an own dim keeps the view's key.
            self.assertEqual(L.request("llm/expert:ep,pp").key,
                             "llm/expert:pp-ep")

    def test_registration_errors(self):
        cases = [
            ("llm:tp=2,dp=4; llm/base:ep=8", "reserved"),
            ("llm:tp=2,dp=4; llm/e:ep=4", "multiply to 4"),
            ("llm:tp=2,dp=4; llm/e:pp,ep=4", "is not a dim of grid 'llm'"),
            ("llm:tp=2,dp=2,pp=2; llm/e:pp,pp,ep=2", "names dim 'pp' twice"),
            ("llm:tp=2,dp=4; llm/e:ep=2,ep=4", "names dim 'ep' twice"),
        ]
        for text, why in cases:
            with self.subTest(layout=text):
                with self.assertRaises(HcgError) as cm:
                    hcg.Layout(text, 8)
                self.assertIn(why, cm.exception.message)
                self.assertGreater(cm.exception.column, 0)


EXPERT = "llm:tp=2,cp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,expt_dp=2,pp"


class Section4Expert(unittest.TestCase):
    """Alternate (expert) factorization, world 16."""

    def setUp(self):
        self.L = hcg.Layout(EXPERT, 16)
        self.addCleanup(self.L.close)

    def test_dense(self):
        L = self.L
        self.assertEqual(L.enumerate("llm:cp"),
                         [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11],
                          [12, 14], [13, 15]])
        self.assertEqual(L.enumerate("llm:dp"),
                         [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13],
                          [10, 14], [11, 15]])
        self.assertEqual(L.enumerate("llm:dp,cp"),
                         [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14],
                          [9, 11, 13, 15]])
        self.assertEqual(L.enumerate("llm:pp"), [[r, r + 8] for r in range(8)])
        self.assertEqual(L.enumerate("llm:tp,pp"),
                         [[0, 1, 8, 9], [2, 3, 10, 11], [4, 5, 12, 13],
                          [6, 7, 14, 15]])

    def test_expert(self):
        L = self.L
        self.assertEqual(L.enumerate("llm/expert:ep"),
                         [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11],
                          [12, 14], [13, 15]])
        self.assertEqual(L.enumerate("llm/expert:expt_tp,ep"),
                         [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11],
                          [12, 13, 14, 15]])
        self.assertEqual(L.enumerate("llm/expert:expt_tp,ep,pp"),
                         [[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]])
        self.assertEqual(L.request("llm/expert:expt_tp,ep").key,
                         "llm/expert:ep-expt_tp")

    def test_inferred_expert_dp(self):
        with hcg.Layout("llm:tp=2,cp=2,dp=*,pp=2; "
                        "llm/expert:expt_tp=1,ep=4,expt_dp=*,pp", 16) as L:
            view = L.grid("llm").view("expert")
            self.assertEqual([d.size for d in view.dims], [1, 4, 2, 2])
            self.assertEqual(L.grid("llm").dims[2].size, 2)


# Field -> (view, dims) of doc/semantics.md section 5.
FIELD_DIMS = {
    "tp": ("base", ["tp"]), "cp": ("base", ["cp"]), "pp": ("base", ["pp"]),
    "dp": ("base", ["dp"]), "dp_cp": ("base", ["dp", "cp"]),
    "tp_cp": ("base", ["tp", "cp"]), "mp": ("base", ["tp", "gtp_remat", "pp"]),
    "tp_dp": ("base", ["tp", "gtp_remat", "dp"]),
    "tp_dp_cp": ("base", ["tp", "gtp_remat", "dp", "cp"]),
    "dp_cp_gtp_remat": ("base", ["gtp_remat", "dp", "cp"]),
    "ep": ("expert", ["ep"]), "expt_tp": ("expert", ["expt_tp"]),
    "expt_dp": ("expert", ["expt_dp"]), "tp_ep": ("expert", ["expt_tp", "ep"]),
    "tp_ep_pp": ("expert", ["expt_tp", "ep", "pp"]),
    "expt_dp_gtp_remat": ("expert", ["expt_gtp_remat", "expt_dp"]),
    "tp_ep_pp_with_egtp_remat": ("expert", ["expt_tp", "ep", "expt_gtp_remat",
                                            "pp"]),
}


class Section5Collection(unittest.TestCase):
    """Process-group collection of one grid, and embedding groups."""

    def check_fields(self, text: str, world: int) -> None:
        with hcg.Layout(text, world) as L:
            g = L.grid("llm")
            coll = L.collection("llm")
            self.assertEqual(list(coll), list(hcg.FIELDS))
            for field, (view, dims) in FIELD_DIMS.items():
                with self.subTest(layout=text, field=field):
                    names = [v.name for v in g.views]
                    have = ([d for d in dims if d in g.view(view).dim_names]
                            if view in names else [])
                    if not have:
                        self.assertIsNone(coll[field])
                        continue
                    spec = "llm%s:%s" % ("" if view == "base" else "/" + view,
                                         ",".join(have))
                    self.assertEqual(coll[field].key, L.request(spec).key)
                    self.assertEqual(coll[field].groups, L.enumerate(spec))
            # Aliases are the same group (same key); intra_dist_opt is all
            # base dims.
            self.assertEqual(coll["intra_dp_cp"], coll["dp_cp"])
            self.assertEqual(coll["intra_expt_dp"], coll["expt_dp"])
            self.assertEqual(coll["intra_dist_opt"].groups,
                             L.enumerate("llm:" + ",".join(g.dim_names)))

    def test_fields_dense(self):
        self.check_fields("llm:tp=2,cp=2,dp=2,pp=2", 16)

    def test_fields_expert(self):
        self.check_fields(EXPERT, 16)

    def test_fields_gtp_remat(self):
        self.check_fields("llm:tp=2,gtp_remat=2,cp=1,dp=2,pp=2; llm/expert:"
                          "expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=2,pp", 16)

    def test_fields_tp_only(self):
        self.check_fields("llm:tp=8", 8)

    def test_absent_dims_are_left_out(self):
        with hcg.Layout("tp=2,dp=4", 8) as L:
            coll = L.collection()
            self.assertIsNone(coll["cp"])
            self.assertIsNone(coll["ep"])
            self.assertEqual(coll["dp_cp"].key, "world:dp")
            self.assertEqual(coll["dp_cp"], coll["dp"])
            self.assertEqual(coll["tp_cp"], coll["tp"])
            self.assertEqual(coll["mp"].key, "world:tp")

    def test_expert_fields_golden(self):
        with hcg.Layout(EXPERT, 16) as L:
            coll = L.collection("llm")
            self.assertEqual(coll["tp_ep"].groups,
                             [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11],
                              [12, 13, 14, 15]])
            self.assertEqual(coll["tp_ep_pp"].groups,
                             [[0, 1, 2, 3, 8, 9, 10, 11],
                              [4, 5, 6, 7, 12, 13, 14, 15]])
            self.assertEqual(coll["mp"].groups,
                             [[0, 1, 8, 9], [2, 3, 10, 11], [4, 5, 12, 13],
                              [6, 7, 14, 15]])

    def test_collection_of_a_rank(self):
        with hcg.Layout(EXPERT, 16) as L:
            whole = L.collection("llm")
            for rank in (0, 5, 15):
                mine = L.collection("llm", rank)
                for field, group in mine.items():
                    if group is None:
                        self.assertIsNone(whole[field])
                        continue
                    self.assertIn(group.members, whole[field].groups)
                    self.assertEqual(group.members[group.index], rank)
                    self.assertEqual(group.key, whole[field].key)

    def test_field_alias(self):
        self.assertEqual(hcg.Layout.field_alias("intra_dp_cp"), "dp_cp")
        self.assertEqual(hcg.Layout.field_alias("intra_expt_dp"), "expt_dp")
        self.assertIsNone(hcg.Layout.field_alias("tp"))

    def test_embedding_golden(self):
        with hcg.Layout("tp=2,dp=2,pp=2", 8) as L:
            self.assertEqual(L.embedding_groups("embd"),
                             [[0, 4], [1, 5], [2, 6], [3, 7]])
            self.assertEqual(L.embedding_groups("pos_embd"),
                             [[0], [1], [2], [3]])
            self.assertEqual(L.embedding_group(5, "embd"), [1, 5])
            self.assertEqual(L.embedding_group(5, "pos_embd"), None)
            self.assertEqual(L.embedding_group(1, "pos_embd"), [1])

    def test_embedding_pp1_and_language_only(self):
        with hcg.Layout("vision:tp=2,dp=4; llm:tp=2,dp=2", 12) as L:
            self.assertEqual(L.language, "llm")
            self.assertEqual(L.embedding_groups(),
                             [[8], [9], [10], [11]])
            self.assertIsNone(L.embedding_group(3))


class Section7And8Bridges(unittest.TestCase):
    """The bridge goldens (MIMO)."""

    def test_colocated_fan_in_and_out(self):
        for text, kind in (("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", "fan-in"),
                           ("vision@0:tp=4,dp=2; llm@0:tp=2,dp=4", "fan-out")):
            with self.subTest(layout=text), hcg.Layout(text, 8) as L:
                b = L.bridge("vision")
                self.assertEqual((b.kind, b.scale, b.colocated), (kind, 2, True))
                self.assertEqual(b.groups(), [[0, 2], [1, 3], [4, 6], [5, 7]])
                for r in (0, 1, 4, 5):
                    self.assertEqual(b.batch_slice(r, 16), (0, 8))
                for r in (2, 3, 6, 7):
                    self.assertEqual(b.batch_slice(r, 16), (8, 8))
                with self.assertRaises(HcgError) as cm:
                    b.batch_slice(0, 15)
                self.assertEqual(cm.exception.code, Status.EBRIDGE)

    def test_colocated_scale_4_and_offset(self):
        with hcg.Layout("vision@0:tp=1,dp=8; llm@0:tp=4,dp=2", 8) as L:
            b = L.bridge("vision", "llm")
            self.assertEqual((b.kind, b.scale), ("fan-in", 4))
            self.assertEqual(b.groups(), [[0, 1, 2, 3], [4, 5, 6, 7]])
        # The golden "offset 4, TP2/DP2 -> TP1/DP4" cannot be a layout: grids
        # must cover the world and be all colocated or all disjoint, so no
        # valid layout puts two colocated grids at offset 4 (the core's unit
        # tests check that case on raw grids).

    def test_non_colocated_leaders(self):
        with hcg.Layout("vision:tp=2,cp=1,pp=2,dp=2; llm:tp=2,cp=1,pp=1,dp=4",
                        16) as L:
            b = L.bridge("vision")
            self.assertFalse(b.colocated)
            self.assertEqual(b.leaders("src"), [3, 7])
            self.assertEqual(b.leaders("dest"), [8, 10, 12, 14])
            dest = b.leaders("dest")
            self.assertEqual([[dest[t] for t in b.targets(lane)]
                              for lane in range(b.src_lanes)],
                             [[8, 10], [12, 14]])


if __name__ == "__main__":
    unittest.main()
