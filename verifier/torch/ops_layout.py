"""Layout queries on exact tensors: contiguity, strides, offsets, storage and pointers.

Engine code asks these to pick a kernel or to assert a precondition
(``assert x.is_contiguous()``); the answers come from the numpy object array
that holds the elements, whose views follow torch's: a basic slice or a
transpose shares memory with strides in elements, and advanced indexing
copies.  ``data_ptr`` is the array's real address, so two views of one tensor
compare as they would in torch; it is only an identity, never dereferenced.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from specexact.torch.ops_shape import same
from specexact.torch.tensor import ExactTensor, as_exact, as_int
from specexact.torch.values import unsupported

__all__ = ["LAYOUT", "LAYOUT_PROPERTIES"]


def _root(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def _address(arr: np.ndarray[Any, Any]) -> int:
    return int(arr.__array_interface__["data"][0])


def is_contiguous(self: Any, memory_format: Any = torch.contiguous_format) -> bool:
    t = as_exact(self)
    if memory_format not in (torch.contiguous_format, torch.preserve_format):
        raise unsupported(f"Tensor.is_contiguous(memory_format={memory_format}) (only the "
                          "default contiguous format is modelled)")
    return bool(t.arr.flags["C_CONTIGUOUS"])


def stride(self: Any, dim: Any = None) -> Any:
    t = as_exact(self)
    strides = tuple(s // t.arr.itemsize for s in t.arr.strides)
    if dim is None:
        return strides
    d = as_int(dim)
    return strides[d]


def storage_offset(self: Any) -> int:
    t = as_exact(self)
    root = _root(t.arr)
    return (_address(t.arr) - _address(root)) // t.arr.itemsize


def data_ptr(self: Any) -> int:
    return _address(as_exact(self).arr)


class ExactStorage:
    """What ``Tensor.untyped_storage()`` answers for an exact tensor: its size and address."""

    __slots__ = ("_nbytes", "_ptr", "device")

    def __init__(self, t: ExactTensor) -> None:
        root = _root(t.arr)
        self._ptr = _address(root)
        self._nbytes = root.size * t.element_size()
        self.device = t.device

    def data_ptr(self) -> int:
        return self._ptr

    def nbytes(self) -> int:
        return self._nbytes

    def size(self) -> int:
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes


def untyped_storage(self: Any) -> ExactStorage:
    return ExactStorage(as_exact(self))


def is_pinned(self: Any, device: Any = None) -> bool:
    return False  # exact tensors live on the CPU, never in page-locked memory


def record_stream(self: Any, stream: Any) -> None:
    return None  # a CUDA allocator hint: no effect on values


LAYOUT: dict[str, Any] = {
    "is_contiguous": is_contiguous, "stride": stride, "storage_offset": storage_offset,
    "data_ptr": data_ptr, "untyped_storage": untyped_storage, "is_pinned": is_pinned,
    "pin_memory": same, "record_stream": record_stream,
}

#: Tensor attributes that are layout facts, answered from the wrapper's real metadata.
LAYOUT_PROPERTIES: frozenset[str] = frozenset({"nbytes", "is_mkldnn", "is_nested",
                                               "is_sparse_csr", "is_mps", "is_xpu"})
