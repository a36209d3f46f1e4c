"""The job store process's entry point: ``python3 -I -S -B _store_main.py``
(store.Server runs it; _store_server.py is the server).

The server's modules import one another as a package's modules do
(``from . import _store_proto``), in this process as in the rank's, where
they are hcg.torch's. This process must not import hcg itself: its
package loads libhcg and hcg.torch's helpers, and ``-I -S`` leaves only
the standard library on sys.path, whatever the task's PYTHONPATH holds.
So the directory of this file is made a package of a name of its own,
with nothing run at its import, and the server is started from it.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

#: The name the server's modules are known by in the store's process.
PACKAGE = "_hcg_store"


def main() -> int:
    spec = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [os.path.dirname(os.path.abspath(__file__))]
    sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
    server = importlib.import_module(PACKAGE + "._store_server")
    return int(server.main())


if __name__ == "__main__":
    sys.exit(main())
