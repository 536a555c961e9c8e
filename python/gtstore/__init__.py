"""gtstore: storage for stencil codes.

Fields whose memory layout, padding and alignment suit a stencil backend,
allocated by libgtstore (C). ``gtstore.arrays`` returns plain NumPy (or CuPy)
arrays and is keyword-compatible with GT4Py's ``gt4py.storage``.
"""

from . import arrays
from ._gtstore import (
    UnknownPresetError,
    __version__,
    cache_limit,
    clear_cache,
    memory_stats,
    set_cache_limit,
)

__all__ = [
    "UnknownPresetError",
    "__version__",
    "arrays",
    "cache_limit",
    "clear_cache",
    "memory_stats",
    "set_cache_limit",
]
