"""gtstore demo: fields allocated for several presets, and what each got.

For every preset: the byte strides (the contiguous dimension has the
itemsize), the padding of the contiguous dimension, and where element 0 and
the grid point at ``aligned_index`` fall against the preset's alignment.
Then a case where alignment matters (gt:gpu's 256 bytes, on the CPU), the
same calls made with GT4Py's ``gt4py.storage`` when it is installed, and a
storage with a halo: its domain, a column, and zero-copy views for NumPy and
DLPack.
"""

import numpy as np

import gtstore
import gtstore.arrays as ga

SHAPE = (70, 70, 80)  # a 64 x 64 x 80 domain with a halo of 3 in I and J
ALIGNED_INDEX = (3, 3, 0)  # the first point of the domain
# gt:gpu's parameters (32 elements: 256 bytes for float64, I contiguous) on the
# CPU, where both libraries can allocate without a GPU.
ALIGNED_PRESET = "demo:gpu_on_cpu"


def address_of(array, index):
    return array.__array_interface__["data"][0] + sum(i * s for i, s in zip(index, array.strides))


ROW = "{:16} {:3} {:18} {:>6} {:>7} {:>9} {:>9} {:>9}"


def describe(name, array, plan):
    contiguous = plan.layout.index(max(plan.layout))
    padding = plan.padded_shape[contiguous] - plan.shape[contiguous]
    alignment = plan.alignment_size
    print(ROW.format(name, plan.device, str(array.strides), plan.dims[contiguous], padding,
                     alignment, address_of(array, (0,) * array.ndim) % alignment,
                     address_of(array, ALIGNED_INDEX) % alignment))


def main():
    print(f"gtstore {gtstore.__version__}: float64 fields of shape {SHAPE}, dims IJK, "
          f"aligned_index {ALIGNED_INDEX}\n")
    print(ROW.format("preset", "dev", "strides", "contig", "padding", "alignment",
                     "element 0", str(ALIGNED_INDEX)))
    ga.register_preset(ALIGNED_PRESET, alignment=32, layout=(2, 1, 0), device="cpu")
    for name in ("numpy", "gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", "gtmc", ALIGNED_PRESET):
        array = ga.zeros(SHAPE, backend=name, aligned_index=ALIGNED_INDEX)
        describe(name, array, ga.plan(SHAPE, backend=name, aligned_index=ALIGNED_INDEX))
    print("(strides and alignment in bytes; the last two columns: the address of the "
          "element modulo the alignment)")

    aligned()
    compare_with_gt4py()

    print("\nNames decide, not positions: gt:cpu_kfirst keeps K contiguous for dims 'KJI':")
    kji = ga.empty(SHAPE[::-1], backend="gt:cpu_kfirst", dims="KJI")
    print(f"  shape {kji.shape}  strides {kji.strides}")

    field = ga.ones(SHAPE, dtype=("f8", (3,)), backend="gt:cpu_ifirst")
    print(f"\nA data dimension goes outermost: shape {field.shape}  strides {field.strides}")

    data = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    copy = ga.from_array(data, backend="gt:cpu_ifirst", aligned_index=ALIGNED_INDEX)
    print(f"\nfrom_array: a C-ordered array copied into an I-contiguous field: strides "
          f"{copy.strides}, equal: {bool((copy == data).all())}")

    storages()
    gpu_storage()


def aligned():
    plan = ga.plan(SHAPE, backend=ALIGNED_PRESET, aligned_index=ALIGNED_INDEX)
    array = ga.empty(SHAPE, backend=ALIGNED_PRESET, aligned_index=ALIGNED_INDEX)
    gpu = ga.plan(SHAPE, backend="gt:gpu", aligned_index=ALIGNED_INDEX)
    # Every stride but I's is a multiple of the alignment, so the first domain
    # point of every I row, (3, j, k), is aligned, not only (3, 3, 0).
    first_of_rows = [address_of(array, (3, j, k)) % plan.alignment_size
                     for j in range(SHAPE[1]) for k in range(SHAPE[2])]
    assert plan.strides == gpu.strides and not any(first_of_rows)
    print(f"\n{ALIGNED_PRESET}, gt:gpu's geometry {gpu.strides} on the CPU: I is padded "
          f"from {plan.shape[0]} to {plan.padded_shape[0]},\nelement 0 lies "
          f"{plan.alignment_size - address_of(array, (0, 0, 0)) % plan.alignment_size} bytes "
          f"before a {plan.alignment_size}-byte boundary, and the first domain point "
          f"(3, j, k) is on one for every j and k.")


def compare_with_gt4py():
    try:
        import gt4py
        import gt4py.storage as gs
        from gt4py.storage.cartesian.layout import (
            LayoutInfo, layout_checker_factory, layout_maker_factory)
    except Exception:  # ImportError, or a broken installation
        print("\nGT4Py is not installed (./dev test installs it): "
              "skipping the comparison with gt4py.storage")
        return
    maker = layout_maker_factory((2, 1, 0))
    gs.register(ALIGNED_PRESET, LayoutInfo(alignment=32, device="cpu", layout_map=maker,
                                           is_optimal_layout=layout_checker_factory(maker)))
    print(f"\nThe same calls with GT4Py {gt4py.__version__}: empty(SHAPE, backend=..., "
          f"aligned_index={ALIGNED_INDEX})")
    for name in ("numpy", "gt:cpu_kfirst", "gt:cpu_ifirst", "dace:cpu", ALIGNED_PRESET):
        ours = ga.empty(SHAPE, backend=name, aligned_index=ALIGNED_INDEX)
        theirs = gs.empty(SHAPE, backend=name, aligned_index=ALIGNED_INDEX)
        alignment = ga.plan(SHAPE, backend=name, aligned_index=ALIGNED_INDEX).alignment_size
        ours_mod = address_of(ours, ALIGNED_INDEX) % alignment
        theirs_mod = address_of(theirs, ALIGNED_INDEX) % alignment
        assert (ours.shape, ours.strides, ours_mod) == (theirs.shape, theirs.strides, theirs_mod)
        print(f"  {name:15} gtstore {str(ours.strides):19} GT4Py {str(theirs.strides):19} "
              f"aligned point % {alignment:3}: {ours_mod} and {theirs_mod}")


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



def gpu_storage():
    gpu = gtstore.gpu()
    if gpu is None:  # no CUDA GPU here: the emulated device plays one
        gtstore.use_gpu("emulated")
        gpu = gtstore.gpu()
    print(f"\nOn the GPU ({gpu['name']}), a field has a host copy that gtstore keeps in sync:")
    g = gtstore.zeros(SHAPE, defaults="gt:gpu", halo=((3, 3), (3, 3), (0, 0)))
    g.synchronize()
    before = gtstore.transfer_counts()
    g[3:-3, 3:-3, :] = 1.0
    print(f"  {type(g).__name__}, after a host write: {g.sync_state}")
    device_sum = float(g.to_ndarray().sum())  # the device side (NumPy or CuPy), synced first
    print(f"  the device side sums to {device_sum:.0f} (64 * 64 * 80 = {64 * 64 * 80}): "
          f"{g.sync_state}")
    lap = gtstore.zeros(SHAPE, defaults="gt:gpu", halo=((3, 3), (3, 3), (0, 0)))
    with gtstore.Stream():  # queued there; the call returns at once
        gtstore.stencils.laplacian(lap, g, device="gpu")
    edge = float(np.asarray(lap)[3, 3:-3, 0].sum())  # the host waits for the kernel
    n = SHAPE[1] - 6  # the points of a row of the domain: n - 2 of -1, 2 corners of -2
    assert edge == -(n - 2) - 4, edge
    print(f"  stencils.laplacian(lap, g, device='gpu'), one kernel on a stream: the domain's "
          f"first row sums to {edge:.0f} ({n - 2} points of -1, 2 corners of -2)")
    if gpu["name"] == "emulated":
        after = gtstore.transfer_counts()
        print(f"  transfers to the device: {after['to_device'] - before['to_device']}, "
              f"of {after['to_device_bytes'] - before['to_device_bytes']} bytes "
              f"(the whole allocation, {g.nbytes} bytes of elements)")


if __name__ == "__main__":
    main()
