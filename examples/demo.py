"""gtstore demo: fields allocated for several presets, and what each got.

For every preset: the shape, the byte strides (the contiguous dimension has
the itemsize), the padding of the contiguous dimension and whether the grid
point at ``aligned_index`` sits on the preset's alignment. Then a storage
with a halo: its domain, a column, and zero-copy views for NumPy and DLPack.
"""

import numpy as np

import gtstore
import gtstore.arrays as ga

SHAPE = (70, 70, 80)  # a 64 x 64 x 80 domain with a halo of 3 in I and J
ALIGNED_INDEX = (3, 3, 0)  # the first point of the domain


def describe(name, array, plan):
    address = array.__array_interface__["data"][0]
    aligned_point = address + sum(i * s for i, s in zip(ALIGNED_INDEX, array.strides))
    contiguous = plan.layout.index(max(plan.layout))
    padding = plan.padded_shape[contiguous] - plan.shape[contiguous]
    print(
        f"{name:15} {plan.device:3}  dims {''.join(plan.dims)}  shape {array.shape}  "
        f"strides {str(array.strides):20} contiguous {plan.dims[contiguous]}  "
        f"padding {padding:2}  aligned point % {plan.alignment_size:3} = "
        f"{aligned_point % plan.alignment_size}"
    )


def main():
    print(f"gtstore {gtstore.__version__}: float64 fields of shape {SHAPE}, "
          f"aligned_index {ALIGNED_INDEX}\n")
    for name in ("numpy", "gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", "gtmc", "F"):
        array = ga.zeros(SHAPE, backend=name, aligned_index=ALIGNED_INDEX)
        describe(name, array, ga.plan(SHAPE, backend=name, aligned_index=ALIGNED_INDEX))

    print("\nGPU presets, planned (allocating them needs CuPy and a device):")
    for name in ("gt:gpu", "gtcuda"):
        plan = ga.plan(SHAPE, backend=name, aligned_index=ALIGNED_INDEX)
        print(f"{name:15} padded shape {plan.padded_shape}  strides {plan.strides}  "
              f"alignment {plan.alignment_size} bytes")

    print("\nNames decide, not positions: gt:cpu_kfirst keeps K contiguous for dims 'KJI':")
    kji = ga.empty(SHAPE[::-1], backend="gt:cpu_kfirst", dims="KJI")
    print(f"  shape {kji.shape}  strides {kji.strides}")

    print("\nA 4-d field with a data dimension (outermost) and explicit 64-byte alignment:")
    field = ga.ones((70, 70, 80, 3), backend="gt:cpu_ifirst", dims="IJK0",
                    aligned_index=(3, 3, 0, 0), alignment_size=64)
    describe("gt:cpu_ifirst", field,
             ga.plan((70, 70, 80, 3), backend="gt:cpu_ifirst", dims="IJK0",
                     aligned_index=(3, 3, 0, 0), alignment_size=64))

    data = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    copy = ga.from_array(data, backend="gt:cpu_ifirst", aligned_index=ALIGNED_INDEX)
    print(f"\nfrom_array: a C-ordered array copied into an I-contiguous field: strides "
          f"{copy.strides}, equal: {bool((copy == data).all())}")

    storages()


def storages():
    print("\nA storage knows its dims and halo; views keep them right:")
    s = gtstore.zeros(SHAPE, defaults="gt:cpu_ifirst", halo=((3, 3), (3, 3), (0, 0)))
    np.asarray(s)[...] = np.arange(np.prod(SHAPE)).reshape(SHAPE)  # zero copy
    for label, view in (("s", s), ("s.domain_view", s.domain_view),
                        ("s[10, 10, :]", s[10, 10, :]), ("s[1:, ::-2, 5]", s[1:, ::-2, 5])):
        print(f"  {label:15} dims {''.join(view.dims):3}  shape {str(view.shape):13}  "
              f"halo {view.halo}  aligned_index {view.aligned_index}")
    inner = s.domain_view
    print(f"  inner[0, 0, 0] == s[3, 3, 0]: {inner[0, 0, 0] == s[3, 3, 0]}")
    exported = np.from_dlpack(s[10, 10, :])  # DLPack, zero copy
    print(f"  DLPack export of the column shares memory: "
          f"{np.shares_memory(exported, np.asarray(s))}")


if __name__ == "__main__":
    main()
