"""Shared helpers of the binding's tests.

The tests run against a built libhcg: run-tests.sh sets HCG_LIBRARY (the
.so), HCG_CLI (the hcg command of the same build) and PYTHONPATH. Without
HCG_CLI the tests that compare with the command are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import unittest
from typing import Dict, List, Optional

import hcg


def cli_path() -> Optional[str]:
    path = os.environ.get("HCG_CLI")
    if path:
        return path if os.access(path, os.X_OK) else None
    return shutil.which("hcg")


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the hcg command; skips the calling test when there is none."""
    path = cli_path()
    if path is None:
        raise unittest.SkipTest("no hcg command (set HCG_CLI)")
    proc = subprocess.run([path, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if check and proc.returncode != 0:
        raise AssertionError("hcg %s failed (%d): %s"
                             % (" ".join(args), proc.returncode, proc.stderr))
    return proc


def cli_json(*args: str):
    return json.loads(cli(*args).stdout)


def cli_env(world: int, layout: str, rank: int) -> List[List[str]]:
    """`hcg env` output as [name, value] pairs, in its order."""
    out = cli("env", "-n", str(world), layout, "--rank", str(rank)).stdout
    return [line.split("=", 1) for line in out.splitlines()]


def explain_from_binding(L: hcg.Layout) -> Dict:
    """The document `hcg explain --format json` prints, rebuilt from the
    binding alone, so that the two can be compared field by field."""
    common = ("HCG_VERSION", "HCG_LAYOUT", "HCG_WORLD_SIZE", "HCG_LANGUAGE")
    env0 = L.env(0)
    doc = {
        "version": 1,
        "layout": L.text,
        "world_size": L.world_size,
        "mode": L.mode,
        "language": L.language,
        "env": {k: v for k, v in env0.items() if k in common},
        "grids": [],
        "bridges": [],
        "ranks": [],
    }
    for g in L.grids:
        entry = {
            "name": g.name, "offset": g.offset, "size": g.size,
            "language": g.language,
            "views": [{"name": v.name,
                       "dims": [{"name": d.name, "size": d.size,
                                 "stride": d.stride, "shared": d.shared}
                                for d in v.dims]} for v in g.views],
            "collection": {},
        }
        for field, groups in L.collection(g.name).items():
            if groups is None:
                entry["collection"][field] = None
                continue
            item = {"key": groups.key}
            alias = hcg.Layout.field_alias(field)
            if alias is not None:
                item["same_as"] = alias
            item["size"] = len(groups.groups[0])
            item["groups"] = groups.groups
            entry["collection"][field] = item
        if g.language:
            entry["embedding"] = {k: L.embedding_groups(k)
                                  for k in hcg.EMBEDDINGS}
        doc["grids"].append(entry)
    for g in L.grids:
        if g.language:
            continue
        try:
            b = L.bridge(g.name)
        except hcg.HcgError as exc:
            doc["bridges"].append({"src": g.name, "dest": L.language,
                                   "error": exc.message})
            continue
        item = {"src": b.src, "dest": b.dest, "colocated": b.colocated,
                "kind": b.kind, "scale": b.scale}
        if b.colocated:
            item["dest_cp"] = b.dest_cp
            item["groups"] = b.groups()
        else:
            dest = b.leaders("dest")
            item["leaders"] = [{"src": s, "dest": [dest[t] for t in b.targets(i)]}
                               for i, s in enumerate(b.leaders("src"))]
        doc["bridges"].append(item)
    for r in range(L.world_size):
        grids = L.grids_of_rank(r)
        stages = {}
        for name in grids:
            st = L.stage(r, name)
            stages[name] = {"first": st.first, "last": st.last}
        doc["ranks"].append({
            "rank": r, "grids": grids, "coords": L.all_coords(r),
            "stages": stages,
            "env": {k: v for k, v in L.env(r).items() if k not in common},
        })
    return doc

