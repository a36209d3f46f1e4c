"""Builds hcg's wheel: the Python package plus libhcg and the hcg command.

    pip wheel --no-build-isolation --no-deps -w DIST contrib/python

runs the project's own build, configure and make (the autotools files of
the checkout, or of csrc/ in an sdist), for libhcg and the hcg command
alone: PMIx opened at run time (``--with-pmix=dlopen``), no NCCL, CUDA or
Slurm. So the wheel's hcg/libhcg.so.1 and hcg/_bin/hcg are built with the
flags, checks and export list of the library CI tests (configure.ac and
m4/hcg_flags.m4); this file only packages them. Building needs a C
compiler and make besides Debian's python3-setuptools and python3-wheel,
and, in a checkout whose configure is not generated yet, autoconf,
automake and libtool (scripts/deps.sh installs them). Nothing of PMIx,
Slurm or CUDA is needed. The wheel is tagged py3-none-<platform>: the
library does not depend on Python's version.

CC, CFLAGS (default -O2) and LDFLAGS go to configure. Warnings are not
errors unless HCG_WERROR=1 (the project's tests set it): a user's newer
compiler may warn where ours does not.
"""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

try:  # setuptools >= 70 has its own; older ones take wheel's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
# What configure needs, copied from the checkout into an sdist's csrc/:
# the generated configure and Makefile.in files (an sdist builds without
# autotools) and the sources of runtime/, the one directory made.
GENERATED = ("configure", "aclocal.m4", "config.h.in", "build-aux")
TOP = ("configure.ac", "Makefile.am", "Makefile.in", "m4", "runtime")
# The other directories configure writes a Makefile for (AC_CONFIG_FILES):
# their Makefile.in alone, as nothing is made there.
OTHERS = ("spank", "tests", "bench")
CONFIGURE = ["--with-pmix=dlopen", "--without-nccl", "--without-cuda",
             "--without-slurm", "--with-plugstack-dir=no",
             "--disable-dependency-tracking"]


def run(cmd, cwd=None, env=None):
    print(" ".join(shlex.quote(c) for c in cmd), flush=True)
    rc = subprocess.call(cmd, cwd=cwd, env=env)
    if rc:
        raise SystemExit("hcg: command failed (status %d): %s"
                         % (rc, " ".join(cmd)))


def project_tree():
    """The tree configure runs from: csrc/ in an sdist, else the checkout
    this directory is in, its configure generated when missing or older
    than configure.ac or a Makefile.am (scripts/autogen.sh, the rule
    scripts/build.sh uses too)."""
    csrc = os.path.join(HERE, "csrc")
    if os.path.isfile(os.path.join(csrc, "configure")):
        return csrc
    top = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
    if not os.path.isfile(os.path.join(top, "configure.ac")):
        sys.exit("hcg: no C sources: neither csrc/ (an sdist) nor ../.. (a "
                 "checkout of hcg) has them")
    run([os.path.join(top, "scripts", "autogen.sh")])
    return top


def build_c(out_dir):
    """hcg/libhcg.so.1 and hcg/_bin/hcg into out_dir (the package's), made
    by configure and make in a scratch directory."""
    tree = project_tree()
    tmp = tempfile.mkdtemp(prefix="hcg-build-")
    try:
        env = dict(os.environ)
        env.setdefault("CFLAGS", "-O2")
        args = list(CONFIGURE)
        if os.environ.get("HCG_WERROR") != "1":
            args.append("--disable-werror")
        run([os.path.join(tree, "configure"), "--quiet"] + args, cwd=tmp, env=env)
        run(["make", "-s", "-j%d" % (os.cpu_count() or 2), "-C", "runtime",
             "libhcg.la", "hcg"], cwd=tmp, env=env)
        os.makedirs(os.path.join(out_dir, "_bin"), exist_ok=True)
        # libtool's libhcg.so.1 is a link to the versioned file.
        lib = os.path.realpath(os.path.join(tmp, "runtime", ".libs", "libhcg.so.1"))
        shutil.copyfile(lib, os.path.join(out_dir, "libhcg.so.1"))
        # The command links the core statically: a program, not libtool's
        # wrapper script.
        cli = os.path.join(out_dir, "_bin", "hcg")
        shutil.copyfile(os.path.join(tmp, "runtime", "hcg"), cli)
        os.chmod(cli, 0o755)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class BuildPy(build_py):
    def run(self):
        super().run()
        build_c(os.path.join(self.build_lib, "hcg"))


def _built(d, names):
    """What an in-tree build left in runtime/: no part of an sdist."""
    gone = {".deps", ".libs", "Makefile", "config.h", "stamp-h1"}
    return [n for n in names if n in gone or n.endswith((".o", ".lo", ".la")) or
            (n in ("hcg", "hcg.pc", "hcg-hello", "hcg-hello-test") and
             os.path.isfile(os.path.join(d, n)))]


class Sdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        top = project_tree()
        dest = os.path.join(base_dir, "csrc")
        parts = list(GENERATED + TOP) + [os.path.join(d, f) for d in OTHERS
                                         for f in ("Makefile.am", "Makefile.in")]
        for part in parts:
            a, b = os.path.join(top, part), os.path.join(dest, part)
            # copy2 and copytree keep the times: make must not think a
            # Makefile.in older than its Makefile.am.
            if os.path.isdir(a):
                shutil.copytree(a, b, ignore=_built)
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
