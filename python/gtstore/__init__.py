"""gtstore: storage for stencil codes.

Fields whose memory layout, padding and alignment suit a stencil backend,
allocated (or wrapped) by libgtstore (C). Two interfaces over one allocator:

- ``gtstore.empty``, ``zeros``, ``as_storage``, ... return ``Storage`` objects
  (GDP-3): fields with dimension labels, a halo and an aligned point, that
  NumPy, DLPack consumers and xarray read without copying;
- ``gtstore.arrays`` returns plain NumPy (or CuPy) arrays and is
  keyword-compatible with GT4Py's ``gt4py.storage``.
"""

from . import arrays, gt4py, stencils
from ._gtstore import (
    CPUStorage,
    CUDAManagedGPUStorage,
    CUDASyncedGPUStorage,
    CudaManagedGPUStorage,
    GT4PySyncedGPUStorage,
    GPUStorage,
    GTNoSuchBufferError,
    KernelCaller,
    SoftwareManagedGPUStorage,
    Binding,
    BoundField,
    FieldWarning,
    Signature,
    Storage,
    SyncState,
    UnknownPresetError,
    __version__,
    as_storage,
    cache_limit,
    clear_cache,
    devices,
    empty,
    empty_like,
    from_dlpack,
    full,
    full_like,
    gpu,
    memory_stats,
    ones,
    ones_like,
    pinned_host_sides,
    reset_transfer_counts,
    set_cache_limit,
    set_pinned_host_sides,
    storage,
    transfer_counts,
    use_gpu,
    zeros,
    zeros_like,
)
from .fields import Alignment, DefaultParameters, Field, LayoutMap
from . import _xarray

_xarray.install()  # GDP-3's default accessor, without importing xarray

__all__ = [
    "Alignment",
    "Binding",
    "BoundField",
    "CPUStorage",
    "DefaultParameters",
    "Field",
    "FieldWarning",
    "LayoutMap",
    "Signature",
    "CUDAManagedGPUStorage",
    "CUDASyncedGPUStorage",
    "CudaManagedGPUStorage",
    "GPUStorage",
    "GT4PySyncedGPUStorage",
    "GTNoSuchBufferError",
    "KernelCaller",
    "SoftwareManagedGPUStorage",
    "Storage",
    "SyncState",
    "UnknownPresetError",
    "__version__",
    "arrays",
    "as_storage",
    "cache_limit",
    "clear_cache",
    "devices",
    "empty",
    "empty_like",
    "from_dlpack",
    "full",
    "full_like",
    "gpu",
    "gt4py",
    "memory_stats",
    "ones",
    "ones_like",
    "pinned_host_sides",
    "reset_transfer_counts",
    "set_cache_limit",
    "set_pinned_host_sides",
    "stencils",
    "storage",
    "transfer_counts",
    "use_gpu",
    "zeros",
    "zeros_like",
]
