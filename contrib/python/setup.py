"""Builds hcg's wheel: the Python package plus its own libhcg and hcg command.

    pip wheel --no-build-isolation --no-deps -w DIST contrib/python

compiles the same C sources as the autotools build (the lists are read
from runtime/Makefile.am, so there is one list, not two) into
hcg/libhcg.so.1 (the core and the runtime, PMIx opened at run time:
runtime/lib/pmix_dl.c, no NCCL or CUDA) and hcg/_bin/hcg (the command,
run by the ``hcg`` entry point). Nothing of PMIx, Slurm or CUDA is needed
to build it; Debian's python3-setuptools and python3-wheel and a C
compiler are. The wheel is tagged py3-none-<platform>: the library does
not depend on Python's version.

The sources are ../../runtime in a checkout, or csrc/ in an sdist (which
copies them there). CC, CFLAGS and LDFLAGS are honoured; HCG_WERROR=1
adds -Werror (the project's tests set it).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

try:  # setuptools >= 70 has its own; older ones take wheel's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
# What the sdist copies from runtime/ into csrc/.
C_PARTS = ("Makefile.am", "hcg.h", "core", "lib", "cli")


def c_source_dir():
    for d in (os.path.join(HERE, "csrc"),
              os.path.join(HERE, os.pardir, os.pardir, "runtime")):
        if os.path.isfile(os.path.join(d, "Makefile.am")):
            return os.path.normpath(d)
    sys.exit("hcg: no C sources: neither csrc/ (an sdist) nor ../../runtime "
             "(a checkout of hcg) has Makefile.am")


def makefile_sources(src):
    """The unconditional .c lists of runtime/Makefile.am, by variable."""
    with open(os.path.join(src, "Makefile.am")) as f:
        text = f.read().replace("\\\n", " ")
    lists = {}
    depth = 0
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["if"]:
            depth += 1
        elif words[:1] == ["endif"]:
            depth -= 1
        m = re.match(r"^(\w+_SOURCES)\s*\+?=\s*(.*)$", line)
        if m and depth == 0:
            lists.setdefault(m.group(1), []).extend(
                w for w in m.group(2).split() if w.endswith(".c"))
    for name in ("libhcgcore_la_SOURCES", "libhcgrt_la_SOURCES", "hcg_SOURCES"):
        if not lists.get(name):
            sys.exit("hcg: %s/Makefile.am has no %s" % (src, name))
    return lists


def run(cmd):
    print(" ".join(shlex.quote(c) for c in cmd))
    rc = subprocess.call(cmd)
    if rc:
        raise SystemExit("hcg: command failed (status %d): %s"
                         % (rc, " ".join(cmd)))


def build_c(out_dir):
    """hcg/libhcg.so.1 and hcg/_bin/hcg into out_dir (the package's)."""
    src = c_source_dir()
    lists = makefile_sources(src)
    cc = shlex.split(os.environ.get("CC", "cc"))
    cflags = shlex.split(os.environ.get("CFLAGS", "-O2"))
    ldflags = shlex.split(os.environ.get("LDFLAGS", ""))
    warn = ["-Wall", "-Wextra"]
    if os.environ.get("HCG_WERROR") == "1":
        warn.append("-Werror")
    tmp = tempfile.mkdtemp(prefix="hcg-build-")
    try:
        # The one thing configure would say: PMIx is opened at run time.
        with open(os.path.join(tmp, "config.h"), "w") as f:
            f.write("/* hcg's wheel: setup.py */\n#define HCG_PMIX_DLOPEN 1\n")
        base = cc + ["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-fPIC",
                     "-pthread", "-I" + src, "-I" + tmp] + warn + cflags

        def compile_one(rel):
            obj = os.path.join(tmp, rel.replace("/", "_")[:-2] + ".o")
            run(base + ["-c", os.path.join(src, rel), "-o", obj])
            return obj

        core = lists["libhcgcore_la_SOURCES"]
        # The wheel reaches PMIx by dlopen and has no NCCL (its
        # communicators are torch's): the files Makefile.am picks for that.
        rt = lists["libhcgrt_la_SOURCES"] + ["lib/pmix_dl.c",
                                             "lib/comm_none.c"]
        cli = lists["hcg_SOURCES"]
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            objs = dict(zip(core + rt + cli,
                            pool.map(compile_one, core + rt + cli)))
        # libhcg exports hcg_* only, as the autotools build does.
        vers = os.path.join(tmp, "libhcg.map")
        with open(vers, "w") as f:
            f.write("{ global: hcg_[a-z]*; local: *; };\n")
        os.makedirs(os.path.join(out_dir, "_bin"), exist_ok=True)
        run(cc + ["-shared", "-pthread", "-Wl,-soname,libhcg.so.1",
                  "-Wl,--version-script=" + vers, "-Wl,-z,defs"] + ldflags +
            ["-o", os.path.join(out_dir, "libhcg.so.1")] +
            [objs[s] for s in core + rt] + ["-ldl"])
        run(cc + ["-pthread"] + ldflags +
            ["-o", os.path.join(out_dir, "_bin", "hcg")] +
            [objs[s] for s in cli + core])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class BuildPy(build_py):
    def run(self):
        super().run()
        build_c(os.path.join(self.build_lib, "hcg"))


class Sdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = c_source_dir()
        for part in C_PARTS:
            a, b = os.path.join(src, part), os.path.join(base_dir, "csrc", part)
            if os.path.isdir(a):
                shutil.copytree(a, b, ignore=shutil.ignore_patterns(
                    "*.o", "*.lo", ".deps", ".libs", "*.1", "*.5"))
            else:
                os.makedirs(os.path.dirname(b), exist_ok=True)
                shutil.copy2(a, b)


class BinaryDistribution(Distribution):
    """Carries compiled code: installed as platform files, tagged with the
    platform."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=BinaryDistribution,
      cmdclass={"build_py": BuildPy, "sdist": Sdist, "bdist_wheel": BdistWheel})
