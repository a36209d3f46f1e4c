"""The binding agrees with the `hcg` command: `hcg check`, `hcg enum` and
`hcg explain --format json` (whole world and --rank R)."""

from __future__ import annotations

import json
import unittest

import hcg

import support

LAYOUTS = [
    ("tp=2,cp=2,pp=2,dp=*", 16),
    ("tp=2,cp=3,dp=4", 24),
    ("llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp", 16),
    ("llm:tp=2,gtp_remat=2,cp=1,dp=2,pp=2; llm/expert:"
     "expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=2,pp", 16),
    ("vision:tp=2,pp=2,dp=2; llm:tp=2,dp=*", 16),
    ("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8),
    ("vision@0:tp=2,dp=2,pp=2; llm@0:tp=4,dp=2", 8),  # bridge refused
    ("a:tp=2,dp=4; b:tp=4,dp=2; llm:tp=2,dp=*", 24),
    ("fill:x=3; llm@3:tp=2,cp=2,dp=2", 11),
]


class Check(unittest.TestCase):

    def test_canonical_text(self):
        for layout, world in LAYOUTS:
            with self.subTest(layout=layout), hcg.Layout(layout, world) as L:
                out = support.cli("check", "-n", str(world), layout).stdout
                self.assertIn(L.text, out.splitlines())


class Enum(unittest.TestCase):

    def specs(self, L: hcg.Layout):
        """A spread of specs: each dim alone, pairs, all, singletons."""
        for g in L.grids:
            for v in g.views:
                prefix = g.name + ("" if v.index == 0 else "/" + v.name) + ":"
                names = list(v.dim_names)
                yield prefix
                yield prefix + ",".join(names)
                for i, a in enumerate(names):
                    yield prefix + a
                    for b in names[i + 1:]:
                        yield prefix + b + "," + a

    def test_enum(self):
        for layout, world in LAYOUTS:
            with hcg.Layout(layout, world) as L:
                for spec in self.specs(L):
                    with self.subTest(layout=layout, spec=spec):
                        out = support.cli("enum", "-n", str(world), layout,
                                          spec).stdout
                        self.assertEqual(out, json.dumps(
                            L.enumerate(spec), separators=(",", ":")) + "\n")


class Explain(unittest.TestCase):

    def test_whole_world(self):
        for layout, world in LAYOUTS:
            with self.subTest(layout=layout), hcg.Layout(layout, world) as L:
                cli = support.cli_json("explain", "-n", str(world), layout,
                                       "--format", "json")
                ours = support.explain_from_binding(L)
                # Compared part by part so that a failure names the part.
                for part in ("version", "layout", "world_size", "mode",
                             "language", "env", "grids", "bridges", "ranks"):
                    self.assertEqual(ours[part], cli[part], part)
                self.assertEqual(set(cli), set(ours))

    def test_one_rank(self):
        for layout, world in LAYOUTS:
            with hcg.Layout(layout, world) as L:
                for rank in (0, world // 2 + 1, world - 1):
                    with self.subTest(layout=layout, rank=rank):
                        cli = support.cli_json("explain", "-n", str(world),
                                               layout, "--rank", str(rank),
                                               "--format", "json")
                        self.check_rank(L, rank, cli)

    def check_rank(self, L: hcg.Layout, rank: int, cli) -> None:
        self.assertEqual(cli["rank"], rank)
        self.assertEqual(cli["grids"], L.grids_of_rank(rank))
        self.assertEqual(cli["coords"], L.all_coords(rank))
        self.assertEqual(cli["env"], L.env(rank))
        for g in cli["grids"]:
            st = L.stage(rank, g)
            self.assertEqual(cli["stages"][g], {"first": st.first,
                                                "last": st.last})
            mine = L.collection(g, rank)
            for field, item in cli["groups"][g].items():
                if item is None:
                    self.assertIsNone(mine[field], field)
                    continue
                self.assertEqual((item["members"], item["index"], item["key"]),
                                 tuple(mine[field]), field)
        embd = L.embedding_group(rank, "embd")
        if cli["embedding"] is None:
            self.assertIsNone(embd)
        else:
            self.assertEqual(cli["embedding"]["embd"], embd)
            self.assertEqual(cli["embedding"]["pos_embd"],
                             L.embedding_group(rank, "pos_embd"))
        for item in cli["bridges"]:
            if "error" in item or not item["colocated"]:
                continue
            b = L.bridge(item["src"], item["dest"])
            self.assertEqual(item["group"], b.group_of_rank(rank))


if __name__ == "__main__":
    unittest.main()
