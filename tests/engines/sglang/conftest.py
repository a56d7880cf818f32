"""What the SGLang partner tests need before SGLang is imported.

sglang_cpu (beside this file, shared with bench/adapter_sglang.py) lets SGLang
import on the CPU build of PyTorch: torchvision 0.28 comes from PyPI only as a
CUDA build, whose C++ operators do not load on the CPU build, and its
_meta_registrations module registers fake kernels for torchvision::nms and
torchvision::qnms without checking that the operators exist, so
`import torchvision` fails with "operator torchvision::nms does not exist".
SGLang's model configurations import torchvision.transforms, which is pure
Python; sglang_cpu declares the two operators' schemas (no kernels) before
the import, and keeps them declared for the whole process. One module holds
them, as a second declaration in the same process would be refused.

python/tests goes on sys.path for the helper modules the adapter tests share
(client_option_samples, shedding_client). The fixtures every test here uses
(a clean MEMKV_* environment, a server per module) are sglang_partner's.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
for _path in (_HERE, os.path.join(_REPO, "python", "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import sglang_cpu  # noqa: E402,F401  (before anything imports SGLang)
from sglang_partner import clean_env, server  # noqa: E402,F401  (fixtures)
