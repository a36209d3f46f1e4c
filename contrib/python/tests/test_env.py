"""hcg.env: reading what the SPANK plugin exported.

The fake task environments come from `hcg env -n N LAYOUT --rank R`, which
prints exactly the walk the plugin exports (both call hcg_rank_env).
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

import hcg
from hcg import HcgError, Status, env

import support

LAYOUTS = [
    ("tp=2,cp=2,pp=2,dp=*", 16),
    ("llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp", 16),
    ("vision:tp=2,pp=2,dp=2; llm:tp=2,dp=*", 16),
    ("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8),
]


def environ_of(world: int, layout: str, rank: int, **extra: str):
    """A task environment: the plugin's variables plus unrelated ones."""
    out = {"PATH": "/usr/bin", "SLURM_PROCID": str(rank)}
    out.update(dict(support.cli_env(world, layout, rank)))
    out.update(extra)
    return out


class RoundTrip(unittest.TestCase):

    def test_binding_env_is_the_command_env(self):
        for layout, world in LAYOUTS:
            with hcg.Layout(layout, world) as L:
                for rank in (0, 5, world - 1):
                    with self.subTest(layout=layout, rank=rank):
                        self.assertEqual(
                            [list(kv) for kv in L.env(rank).items()],
                            support.cli_env(world, layout, rank))

    def test_from_environ(self):
        for layout, world in LAYOUTS:
            for rank in range(world):
                with self.subTest(layout=layout, rank=rank):
                    fake = environ_of(world, layout, rank)
                    with env.from_environ(fake) as task:
                        self.assertEqual(task.rank, rank)
                        self.assertEqual(task.world_size, world)
                        self.assertEqual(task.layout.text, fake["HCG_LAYOUT"])
                        self.assertEqual(",".join(task.grids), fake["HCG_GRIDS"])
                        self.assertEqual(task.language, fake["HCG_LANGUAGE"])
                        for g in task.grids:
                            grid = task.layout.grid(g)
                            for v in grid.views:
                                stem = "HCG_" + g.upper() + (
                                    "" if v.index == 0 else "_" + v.name.upper())
                                for dim, c in task.coords(g, v.name).items():
                                    self.assertEqual(
                                        fake["%s_%s_RANK" % (stem, dim.upper())],
                                        str(c))

    def test_task_shortcuts(self):
        layout, world = LAYOUTS[1]
        with env.from_environ(environ_of(world, layout, 5)) as task:
            self.assertEqual(task.default_grid(), "llm")
            members, index, key = task.group("llm:dp,cp")
            self.assertEqual((members, index, key), ([1, 3, 5, 7], 2, "llm:dp-cp"))
            self.assertEqual(task.collection()["ep"].members, [4, 5, 6, 7])
            self.assertEqual(task.stage(), hcg.Stage(True, False))
            self.assertEqual(task.embedding_group(), [5, 13])
        layout, world = LAYOUTS[3]
        with env.from_environ(environ_of(world, layout, 3)) as task:
            self.assertEqual(task.grids, ["vision", "llm"])
            self.assertEqual(task.default_grid(), "llm")  # colocated: language

    def test_language_override_travels(self):
        layout = "enc:tp=2,dp=2; dec:tp=2,dp=2"
        proc = support.cli("env", "-n", "8", "--language", "dec", layout,
                           "--rank", "5")
        fake = dict(line.split("=", 1) for line in proc.stdout.splitlines())
        self.assertEqual(fake["HCG_LANGUAGE"], "dec")
        with env.from_environ(fake) as task:
            self.assertEqual(task.language, "dec")
            self.assertEqual(task.embedding_group(), [5])

    def test_os_environ_in_a_child(self):
        layout, world = LAYOUTS[0]
        child = dict(os.environ)
        child.update(dict(support.cli_env(world, layout, 6)))
        code = ("import hcg.env as e; t = e.from_environ(); "
                "print(t.rank, t.group('dp').members)")
        out = subprocess.run([sys.executable, "-c", code], env=child,
                             stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        self.assertEqual(out, "6 [6, 14]\n")

    def test_in_task(self):
        self.assertFalse(env.in_task({}))
        self.assertTrue(env.in_task({"HCG_LAYOUT": "x"}))


class NodeLocal(unittest.TestCase):
    """HCG_*_LOCAL, the plugin's placement verdicts, as `hcg env --nodes`
    prints them for the same placement."""

    def test_verdicts_of_hcg_env_nodes(self):
        layout = "llm:tp=4,dp=*; llm/expert:ep=8,expt_dp=*"
        out = support.cli("env", "-n", "16", "--nodes", "4", layout,
                          "--rank", "5").stdout
        extra = dict(line.split("=", 1) for line in out.splitlines()
                     if line.endswith(("_LOCAL=0", "_LOCAL=1")))
        self.assertEqual(extra, {"HCG_LLM_TP_LOCAL": "1",
                                 "HCG_LLM_EXPERT_EP_LOCAL": "0"})
        with env.from_environ(environ_of(16, layout, 5, **extra)) as t:
            self.assertEqual(t.node_local, {"llm:tp": True,
                                            "llm/expert:ep": False})
        with env.from_environ(environ_of(16, layout, 5)) as t:
            self.assertEqual(t.node_local, {})

    def test_bad_value(self):
        with self.assertRaises(HcgError) as cm:
            env.from_environ(environ_of(8, "tp=2,dp=*", 1,
                                        HCG_WORLD_TP_LOCAL="yes"))
        self.assertEqual(cm.exception.code, Status.EENV)
        self.assertIn("HCG_WORLD_TP_LOCAL", str(cm.exception))


class DomainLocal(unittest.TestCase):
    """HCG_*_DOMAIN_LOCAL, the verdicts on NVLink domains, as `hcg env
    --nodes N --domain-size B` prints them."""

    def test_verdicts_of_hcg_env_domain_size(self):
        layout = "llm:tp=2,dp=*; llm/expert:expt_tp=1,expt_dp=2,ep=4"
        out = support.cli("env", "-n", "8", "--nodes", "4", "--domain-size",
                          "2", layout, "--rank", "5").stdout
        extra = dict(line.split("=", 1) for line in out.splitlines()
                     if line.endswith(("_LOCAL=0", "_LOCAL=1")))
        self.assertEqual(extra["HCG_LLM_EXPERT_EP_DOMAIN_LOCAL"], "0")
        self.assertEqual(extra["HCG_LLM_EXPERT_EXPT_TP_DOMAIN_LOCAL"], "1")
        with env.from_environ(environ_of(8, layout, 5, **extra)) as t:
            self.assertEqual(t.domain_local, {"llm/expert:ep": False,
                                              "llm/expert:expt_tp": True})
            self.assertEqual(t.node_local["llm/expert:ep"], False)
        with env.from_environ(environ_of(8, layout, 5)) as t:
            self.assertEqual(t.domain_local, {})

    def test_bad_value(self):
        with self.assertRaises(HcgError) as cm:
            env.from_environ(environ_of(8, "ep=2,dp=*", 1,
                                        HCG_WORLD_EP_DOMAIN_LOCAL=""))
        self.assertEqual(cm.exception.code, Status.EENV)
        self.assertIn("HCG_WORLD_EP_DOMAIN_LOCAL", str(cm.exception))


class Refusals(unittest.TestCase):

    def base(self):
        return environ_of(16, LAYOUTS[1][0], 5)

    def refused(self, environ, code, *words):
        with self.assertRaises(HcgError) as cm:
            env.from_environ(environ).close()
        self.assertEqual(cm.exception.code, code)
        for w in words:
            self.assertIn(w, cm.exception.message)
        return cm.exception

    def without(self, *names):
        e = self.base()
        for n in names:
            del e[n]
        return e

    def test_no_environment(self):
        self.refused({"PATH": "/bin"}, Status.EENV, "no HCG_* environment",
                     "--hcg-layout")

    def test_version(self):
        self.refused(self.without("HCG_VERSION"), Status.EENV, "HCG_VERSION")
        for bad in ("2", "0", "x", "", "1.0"):
            e = self.base()
            e["HCG_VERSION"] = bad
            self.refused(e, Status.EENV, "HCG_VERSION")

    def test_world_and_rank(self):
        self.refused(self.without("HCG_WORLD_SIZE"), Status.EENV, "HCG_WORLD_SIZE")
        self.refused(self.without("HCG_RANK"), Status.EENV, "HCG_RANK")
        for name, bad in (("HCG_RANK", "16"), ("HCG_RANK", "-1"),
                          ("HCG_RANK", "five"), ("HCG_WORLD_SIZE", "0"),
                          ("HCG_WORLD_SIZE", "99999999999")):
            e = self.base()
            e[name] = bad
            self.refused(e, Status.EENV, name)

    def test_layout(self):
        self.refused(self.without("HCG_LAYOUT"), Status.EENV, "HCG_LAYOUT")
        e = self.base()
        e["HCG_LAYOUT"] = "llm:tp=2,dp=0"
        exc = self.refused(e, Status.EENV, "HCG_LAYOUT is not a valid layout",
                           "HCG_WORLD_SIZE=16", "^")
        self.assertGreater(exc.column, 0)
        e = self.base()
        e["HCG_WORLD_SIZE"] = "32"  # the canonical layout spans 16 ranks
        self.refused(e, Status.EENV, "HCG_LAYOUT")

    def test_inconsistent_variables(self):
        e = self.base()
        e["HCG_RANK"] = "6"  # changed after launch: coordinates disagree
        self.refused(e, Status.EMISMATCH, "HCG_LLM_", "HCG_RANK=6")
        e = self.base()
        e["HCG_GRIDS"] = "vision"
        self.refused(e, Status.EMISMATCH, "HCG_GRIDS")
        e = self.base()
        e["HCG_LLM_EXPERT_EP_SIZE"] = "8"
        self.refused(e, Status.EMISMATCH, "HCG_LLM_EXPERT_EP_SIZE='8'")
        e = self.base()
        e["HCG_LANGUAGE"] = "nope"
        self.refused(e, Status.EENV, "HCG_LAYOUT")

    def test_per_dim_variables_may_be_absent(self):
        e = {k: v for k, v in self.base().items()
             if not k.startswith("HCG_LLM_") and k != "HCG_GRIDS"}
        with env.from_environ(e) as task:
            self.assertEqual(task.coords()["dp"], 2)


if __name__ == "__main__":
    unittest.main()
