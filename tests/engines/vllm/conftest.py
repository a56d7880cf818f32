"""What the vLLM partner tests share.

python/tests goes on sys.path for the helper modules the adapter tests share
(shedding_client), and this folder for vllm_partner.py, whose fixtures (a
server, Engines) the tier tests use. The tests of this folder also run in
the venv of the previous minor vLLM release (tests/engines/vllm_prev), so
nothing here names a release.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
for _path in (_HERE, os.path.join(_REPO, "python", "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from vllm_partner import engines, server  # noqa: E402,F401 (fixtures)
