"""A C kernel called from Python: examples/c_kernel.c's scale_kernel,
built as a shared library, bound by gtstore through Signature.call_c.

    cc -shared -fPIC -std=c11 -Iinclude examples/c_kernel.c -o /tmp/libc_kernel.so
    python examples/c_kernel.py /tmp/libc_kernel.so

(run from the repository's root; gtstore/binding.h needs no generated header).
"""

import ctypes
import sys

import numpy as np

import gtstore
from gtstore import Field, Signature


def main(library):
    lib = ctypes.CDLL(library)
    kernel = ctypes.cast(lib.scale_kernel, ctypes.c_void_p).value
    sig = Signature(out=Field["f8", "IJK"], inp=Field["f8", "IJK"], writes=["out"])

    # inp stored K, J, I with a halo of 1 in I and J: a gtstore Storage
    values = np.arange(6 * 5 * 4, dtype="f8").reshape(4, 5, 6)
    inp = gtstore.as_storage(values, dims="KJI", halo=((0, 0), (1, 1), (1, 1)))
    out = np.zeros((6, 5, 4))
    factor = ctypes.c_double(2.0)
    sig.call_c(kernel, out, inp, ctx=ctypes.addressof(factor))

    expected = np.zeros((6, 5, 4))
    expected[:4, :3, :] = 2 * values.transpose(2, 1, 0)[1:5, 1:4, :]
    assert np.array_equal(out, expected)
    print("out[0, 0, 1] =", out[0, 0, 1], "(2 * inp at I=1, J=1, K=1): ok")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip() + "\n\nusage: python examples/c_kernel.py LIBRARY.so")
    try:
        main(sys.argv[1])
    except OSError as error:  # ctypes could not load it
        sys.exit(f"examples/c_kernel.py: cannot load {sys.argv[1]!r} ({error}); build it as above")
