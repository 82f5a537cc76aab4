"""Where tensors live: the one place a device is chosen, once, at the top (the CLI's ``--device``, the app's
``KGBIAS_DEVICE``).

The rule for measures: the model is moved to the resolved device once, on load
(:func:`kgbias_core.embeddings.store.load_model`), and every function below takes its tensors where they are.
No measure, influence query, solver or ranking picks a device of its own; tables leave the device once, at
display (:mod:`kgbias_core.tables`).

The rule for training and retraining: a new training runs on the resolved device. A *retrain* (a what-if, the
noise band, a calibration, an influence check) runs on the kind of device its base model was trained on
(:func:`retrain_device`), whatever device the measures use, because an unedited retrain must reproduce its
base bit for bit for the retrained change to be the edit's effect.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Protocol

import torch

from kgbias_core.errors import CUDA_INDEX_OUT_OF_RANGE, NO_CUDA_DEVICE, UNKNOWN_DEVICE, DeviceError


class TrainedModel(Protocol):
    """What :func:`retrain_device` reads of a model (a :class:`~kgbias_core.embeddings.store.StoredModel`): its
    info, where training recorded its device. A protocol, not the store's class: the device sits below the store."""

    info: Mapping[str, Any]


#: The app's device: auto | cpu | cuda | cuda:N (the CLI's --device overrides it).
DEVICE_ENV = "KGBIAS_DEVICE"
#: The specs :func:`resolve_device` accepts, for help texts.
DEVICE_CHOICES = "auto | cpu | cuda | cuda:N"
_SPEC = re.compile(r"(auto|cpu|cuda)(?::(\d+))?")


def default_device() -> torch.device:
    """``auto``: CUDA where PyTorch sees a GPU, else the CPU (as PyKEEN's ``resolve_device`` does)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(spec: str | torch.device | None = None, *, source: str = "--device") -> torch.device:
    """The device that ``spec`` names: ``auto`` (CUDA if available, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.

    ``None`` reads ``KGBIAS_DEVICE`` and falls back to ``auto``. An unknown spec, a CUDA device on a machine
    without one, or an index beyond the GPUs present raises :class:`DeviceError` naming ``source`` (the flag
    or the variable it came from), so that the CLI prints one line and the app one ``st.error``.
    """
    if isinstance(spec, torch.device):
        spec = str(spec)
    if spec is None:
        spec, source = os.environ.get(DEVICE_ENV) or "auto", DEVICE_ENV
    text = spec.strip().lower()
    match = _SPEC.fullmatch(text)
    if match is None or (match.group(2) is not None and match.group(1) != "cuda"):
        raise DeviceError(UNKNOWN_DEVICE.format(spec=spec, source=source))
    kind, index = match.group(1), match.group(2)
    if kind == "auto":
        return default_device()
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceError(NO_CUDA_DEVICE.format(spec=spec, source=source))
    if index is None:
        return torch.device("cuda")
    count = torch.cuda.device_count()
    if int(index) >= count:
        raise DeviceError(CUDA_INDEX_OUT_OF_RANGE.format(spec=spec, source=source, count=count, last=count - 1))
    return torch.device("cuda", int(index))


def retrain_device(model: TrainedModel) -> torch.device:
    """Where a retrain of ``model`` runs: the kind of device it was trained on, whatever device measures use.

    float32 sums in another order change a training as another seed would: the same config trained
    on an H100 and on the CPU gave B_gr up to 0.074 apart on FB15k-237 (0.019 on FB13). A what-if
    retrained on another kind of device than its base would count that drift as the edit's effect;
    on the base's own kind an unedited retrain reproduces it bit for bit. Only where that kind is
    absent (a GPU-trained model on a CPU-only machine) does the default device, and the drift, remain.
    """
    trained_on = str(model.info.get("device") or "")
    if trained_on == "cpu":
        return torch.device("cpu")
    if trained_on.startswith("cuda") and torch.cuda.is_available():
        return torch.device("cuda")
    return default_device()


def describe_device(device: torch.device) -> str:
    """A short human name: ``CPU`` or ``GPU (NVIDIA H100 80GB HBM3, cuda:0)``."""
    if device.type != "cuda":
        return "CPU"
    index = device.index if device.index is not None else torch.cuda.current_device()
    return f"GPU ({torch.cuda.get_device_name(index)}, cuda:{index})"
