"""wandb's shipped protobuf schema (`wandb.proto.wandb_internal_pb2`), imported without the wandb SDK.

`import wandb.proto...` first runs `wandb/__init__.py`, which loads the whole SDK: 0.7 s here, about half of reading
a 100k-step offline run, for a schema whose modules need nothing but protobuf. Where the SDK is not loaded yet, its
package is stood in for by a bare package over the same directory while the schema modules load; they stay in
`sys.modules`, so an SDK imported later (a W&B URL in the same call) finds and shares them.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from types import ModuleType


def internal_pb2() -> ModuleType:
    name = "wandb.proto.wandb_internal_pb2"
    if name in sys.modules or "wandb" in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("wandb")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the wandb package is not installed")
    package = types.ModuleType("wandb")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["wandb"] = package
    try:
        return importlib.import_module(name)
    finally:
        del sys.modules["wandb"]
