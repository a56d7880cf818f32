"""Lets SGLang import on the CPU build of PyTorch (import this before SGLang).

torchvision 0.28 comes from PyPI only as a CUDA build: its C++ operators do
not load on the CPU build of PyTorch, and its _meta_registrations module
registers fake kernels for torchvision::nms and torchvision::qnms without
checking that the operators exist, so `import torchvision` fails with
"operator torchvision::nms does not exist". SGLang's model configurations
import torchvision.transforms, which is pure Python. Declaring the two
operators' schemas (no kernels) before the import lets torchvision, and so
SGLang, import; nothing here calls them.
"""

import torch

# Kept for the whole process: dropping the Library object would remove the
# definitions again.
_TORCHVISION_SCHEMAS = torch.library.Library("torchvision", "DEF")
for _op in ("nms", "qnms"):
    _TORCHVISION_SCHEMAS.define(_op + "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
