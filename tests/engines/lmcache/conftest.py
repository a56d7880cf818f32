"""The LMCache partner tests import lmcache_partner (this folder) and
python/tests' MemKV test helpers (shedding_client): both go on sys.path.
The servers of lmcache_partner are this folder's fixtures."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
for path in (HERE, os.path.join(REPO, "python", "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from lmcache_partner import own_server, shared_server  # noqa: F401 (fixtures)
