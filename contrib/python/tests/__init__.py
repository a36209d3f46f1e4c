"""Tests of the hcg binding (see ../run-tests.sh for the environment).

Discovery runs them either as top-level modules (``-s tests``) or, from
contrib/python with a plain ``python3 -m unittest``, as this package; the
modules import their helper as ``support`` either way.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)
