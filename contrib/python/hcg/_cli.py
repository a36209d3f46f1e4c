"""The ``hcg`` command of the wheel (private): runs the C command built with
this package (hcg/_bin/hcg), the same program ``make install`` installs."""

import os
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "hcg")
    if not os.access(exe, os.X_OK):
        sys.exit("hcg: %s is missing: this hcg package was not installed from "
                 "its wheel (pip install contrib/python builds one); the hcg "
                 "command of a system install is /usr/bin/hcg or "
                 "/usr/local/bin/hcg" % exe)
    try:
        os.execv(exe, ["hcg"] + sys.argv[1:])
    except OSError as exc:
        sys.exit("hcg: cannot run %s: %s" % (exe, exc.strerror))
