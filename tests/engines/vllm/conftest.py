"""What the vLLM partner tests share.

python/tests goes on sys.path for the helper modules the adapter tests share
(shedding_client). The tests of this folder also run in the venv of the
previous minor vLLM release (tests/engines/vllm_prev), so nothing here names
a release.
"""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_PYTHON_TESTS = os.path.join(_REPO, "python", "tests")
if _PYTHON_TESTS not in sys.path:
    sys.path.insert(0, _PYTHON_TESTS)
