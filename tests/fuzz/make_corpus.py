#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets: tests/fuzz/corpus/<target>/.

Each seed is a meaningful case encoded the way fuzz_input.h decodes it, so
that every target starts from typical calls (a GT4Py field with a halo, a
layout-changing copy, a DLPack tensor with negative strides, ...) instead of
random bytes. Run it after changing how a target reads its input (for the targets named,
else all; it replaces their corpora, merged inputs included):

    python3 tests/fuzz/make_corpus.py [TARGET ...]
"""
import pathlib
import shutil
import struct

HERE = pathlib.Path(__file__).resolve().parent

# fuzz_hostile's table, in order (fuzz_input.h)
EDGES = [0, 1, -1, 2, -2, 3, 7, 8, 64, 4096, 2**31 - 1, 2**31, -2**31, 2**32, 2**32 - 1,
         2**33, 2**31, 2**40, 2**52, 2**61, 2**62, 2**62 + 1, 2**63 - 1, 2**63 - 2, -2**63,
         -2**63 + 1, (2**63 - 1) // 2, (2**63 - 1) // 3, -2**62, -2**32, 2**63 - 1 - 4096, 3 << 61]


class Input:
    """Mirror of fuzz_input.h: append the bytes that decode to each value."""

    def __init__(self):
        self.data = bytearray()

    def u8(self, value):
        self.data.append(value & 0xFF)
        return self

    def bits(self, n, value):
        self.data += (value % 2 ** (8 * n)).to_bytes(n, "little")
        return self

    def bool(self, value):
        return self.u8(1 if value else 0)

    def range(self, low, high, value):
        assert low <= value <= high, (low, value, high)
        return self.bits(1 if high - low + 1 <= 256 else 2, value - low)

    def hostile(self, value):
        if value in EDGES:
            return self.u8(EDGES.index(value))
        return self.u8(128).bits(8, value)

    def string(self, text):
        self.data += text.encode() + b"\0"
        return self

    def identity(self, n):
        """fuzz_permutation's draws that leave 0 .. n-1 in order."""
        for i in range(n - 1, 0, -1):
            self.range(0, i, i)
        return self


def dtype():
    seeds = {}
    for text in ["<f8", "|b1", "=i4", "<c16", "|u1", "<e", "Zd", "d", "?", "=q", "<L", ">f4"]:
        seeds["text_" + text.translate(str.maketrans("<>|=?", "lgpeq"))] = Input().string(text)
    # DLPack (float, 64 bits, 1 lane), then an int64 -5 stored into int8
    seeds["dlpack_store"] = (Input().u8(2).u8(64).bits(2, 1).u8(ord("i")).u8(1)
                             .range(0, 4, 1).bits(8, -5).string("<i8"))
    # bool triple, then a NaN stored into float64
    seeds["nan_float"] = (Input().u8(6).u8(8).bits(2, 1).u8(ord("f")).u8(8)
                          .range(0, 4, 3).bits(8, struct.unpack("<Q", struct.pack("<d", float("nan")))[0]))
    return seeds


def dims_layout():
    seeds = {}
    for i, (dims, axes, name) in enumerate([("IJK", "KJI", "gt:cpu_ifirst"), ("IJK0", "IJK", "mine"),
                                            ("KJI", "IJK", "numpy"), ("K0J1", "JIK", "gt:gpu"),
                                            ("IJ", "K", "user"), ("12", "I", "")]):
        seed = Input().string(dims).string(axes).string(name)
        for _ in range(64 - len(name)):  # the name's terminator, then padding
            seed.bool(True)
        seed.hostile(8).range(-1, 4, 0).range(-1, 2, 0)  # registry: named, CPU
        for rank in (2, 1, 0):
            seed.range(-1, 3, rank)
        seed.range(-2, 66, 3).bool(True)  # raw labels and ranks, small
        for d in range(3):
            seed.range(-4, 6, d - 3).range(-1, 3, d).hostile([8, -8, 2**62][d])
        seeds[f"case{i}"] = seed
    return seeds


def geometry():
    def plain(shape, itemsize_index, log2_alignment, aligned):
        seed = Input().bool(False).range(0, 5, len(shape)).identity(len(shape))
        for extent, index in zip(shape, aligned):
            seed.range(0, 40, extent).range(0, max(extent - 1, 0), index)
        seed.range(0, 6, itemsize_index).range(0, 12, log2_alignment).u8(255).bits(8, 0x10008)
        return seed

    seeds = {
        "halo_point": plain([10, 20, 5], 3, 8, [0, 3, 3]),  # f8, 256 bytes, C order
        "empty_dim": plain([0, 6], 2, 4, [0, 5]),
        "below_itemsize": plain([10, 7], 3, 2, [0, 4]),
        "zero_d": plain([], 3, 6, []),
        "itemsize_12": plain([3, 4], 6, 3, [1, 2]),
    }
    # hostile: 2**33 x 2**31 elements of 8 bytes, alignment 3 * 2**61
    seeds["huge"] = (Input().bool(True).range(-1, 65, 2).identity(2).u8(0)
                     .bool(True).hostile(2**33).bool(False).range(0, 2**33 - 1, 0)
                     .bool(True).hostile(2**31).bool(False).range(0, 2**31 - 1, 0)
                     .bool(False).range(0, 6, 3).bool(True).hostile(3 << 61).u8(255).bits(8, 0))
    # an extent: (3, 4) with strides (-16, 8) of 8 bytes
    seeds["extent"] = (plain([2], 0, 0, [0]).range(0, 4, 2)
                       .bool(True).range(0, 50, 3).bool(True).range(-64, 64, -16)
                       .bool(True).range(0, 50, 4).bool(True).range(-64, 64, 8)
                       .bool(True).range(1, 16, 8))
    return seeds


def buffer():
    def alloc(seed, slot, kind, value, zero):
        seed.range(0, 7, slot).range(0, 3, 0).range(0, 3, kind)
        if kind == 3:
            seed.hostile(value)
        else:
            seed.range(*{0: (0, 4096), 1: (1, 4096), 2: (0, 4095)}[kind], value)
        return seed.bool(zero)

    def release(seed, slot):
        return seed.range(0, 7, slot).range(0, 3, 2)

    small = alloc(Input().range(0, 24, 8), 0, 0, 100, True)
    reuse = Input().range(0, 24, 16)
    alloc(reuse, 0, 2, 1024, False)      # 3 MiB, dirtied
    release(reuse, 0)
    alloc(reuse, 1, 2, 1000, True)       # served from the cache: must read as zeros
    alloc(reuse, 2, 1, 1, False)         # 2 MiB - 1: the heap's largest
    huge = Input().range(0, 24, 8)
    alloc(huge, 0, 2, 1024, False)
    release(huge, 0)
    alloc(huge, 1, 3, 2**63 - 1 - 4096, True)  # must fail, not reuse the cached block
    alloc(huge, 2, 3, -1, False)
    wrap = Input().range(0, 24, 0).range(0, 7, 0).range(0, 3, 3).bool(True).range(0, 64, 64).bool(True)
    return {"small": small, "cache_reuse": reuse, "huge_after_cache": huge, "wrap": wrap}


def dlpack_import():
    def tensor(shape, strides, versioned=True, byte_offset=0, dtype_index=0, readonly=False,
               options=None):
        seed = Input().bool(versioned).u8(255).range(0, 4, len(shape))
        for extent, stride in zip(shape, strides or [0] * len(shape)):
            seed.range(0, 6, extent).range(-8, 8, stride)
        seed.u8(255).range(0, 64, 8)             # data: block + 8
        seed.u8(0)                               # CPU
        seed.u8(0).range(0, 7, dtype_index)      # dtype from the table
        seed.u8(255)                             # shape given
        seed.u8(255 if strides else 0)           # strides given, or C order
        seed.range(0, 128, byte_offset)
        seed.u8(0).u8(1)                         # version 1.1
        seed.bits(1, 1 if readonly else 0)       # flags
        seed.bool(options is not None)
        if options:
            seed.data += options
        return seed

    with_halo = (Input().bool(False).bool(False).range(0, 2, 1).range(0, 8, 3)
                 .bool(False).range(-1, 3, 1).range(-1, 3, 1).range(-1, 3, 0).range(-1, 3, 0)
                 .data)
    return {
        "c_order": tensor([2, 3], None),
        "strided": tensor([2, 3], [3, 1]),
        "negative": tensor([3, 2], [-2, -1], byte_offset=40),
        "legacy_f4": tensor([4], [2], versioned=False, dtype_index=1),
        "readonly_3d": tensor([2, 2, 2], [4, 2, 1], readonly=True),
        "empty": tensor([0, 3], [0, 0]),
        "options_halo": tensor([4, 4], None, options=with_halo),
    }


def views():
    def create(seed, shape, halos, dtype_index=0, alignment=None):
        seed.range(0, 4, len(shape))
        for extent in shape:
            seed.range(0, 6, extent)
        seed.range(0, 7, dtype_index).bool(False)
        for extent, (lo, hi) in zip(shape, halos):
            seed.range(0, extent, lo).range(0, extent - lo, hi)
        if alignment is None:
            seed.bool(True)
        else:
            seed.bool(False).range(0, 8, alignment)
        return seed.u8(0).u8(255)  # allocated, no aligned index given

    def op(seed, kind, dim, n):  # a view operation (0, 1: slice ... 6: halo) on dim
        return seed.range(0, 9, 2).u8(255).range(-1, n, dim).range(0, 6, kind)

    chain = create(Input(), [6, 5, 4], [(2, 1), (1, 1), (0, 0)], alignment=6)
    op(chain, 0, 0, 3).u8(255).range(-1, 6, 1).u8(255).range(-3, 3, 2).u8(255).range(0, 7, 3)
    op(chain, 2, 1, 3).u8(255).range(-1, 5, 2)               # index J = 2
    op(chain, 3, 0, 2)                                        # insert a dim
    op(chain, 5, 0, 3)                                        # the domain
    chain.range(0, 9, 0).range(-2, 100, 7)                    # fill with 7
    chain.range(0, 9, 1)                                      # copy
    reverse = create(Input(), [5, 4], [(1, 2), (0, 1)], dtype_index=1)
    op(reverse, 0, 0, 2).u8(255).range(-1, 5, 4).u8(255).range(-3, 3, -1).u8(255).range(0, 6, 5)
    op(reverse, 4, 0, 2).range(0, 1, 0).u8(255)               # transpose: (1, 0) ... then
    reverse.range(0, 9, 0).range(-2, 100, 1)
    empty = create(Input(), [0, 3], [(0, 0), (1, 1)])
    op(empty, 6, 0, 2).u8(255).range(0, 0, 0).u8(255).range(0, 2, 0)
    empty.u8(255).range(0, 3, 1).u8(255).range(0, 2, 1)                # halo ((0, 0), (1, 1))
    return {"chain_3d": chain, "reverse_2d": reverse, "empty": empty}


def kernels():
    def small(itemsize_index, shape, dst, src, dst_base=1024, src_base=0, fill=False):
        seed = Input().u8(0).range(0, 4, itemsize_index).range(0, 6, len(shape))
        seed.range(0, 2047, dst_base).range(0, 2047, src_base)
        for extent, ds, ss in zip(shape, dst, src):
            seed.range(0, 5, extent).u8(0).range(-6, 6, ds).u8(0).range(-6, 6, ss)
        seed.bool(fill)
        if fill:
            for _ in range(16):
                seed.bool(True)
        return seed

    hostile = Input().u8(255).bool(True).range(-2, 66, 2).bool(True).range(0, 4, 3)  # a fill
    hostile.bool(False).hostile(2**33).bool(True).range(-2, 2, 0).bool(True).range(-2, 2, 0)
    hostile.bool(False).hostile(2**31).bool(True).range(-2, 2, 0).bool(True).range(-2, 2, 0)
    return {
        "copy_rows": small(3, [4, 5], [5, 1], [5, 1]),
        "copy_transpose": small(3, [5, 4], [4, 1], [1, 5]),
        "copy_overlap": small(2, [5, 5], [5, 1], [1, 5], dst_base=64, src_base=80),
        "fill_negative": small(1, [3, 4], [-4, -1], [0, 0], fill=True),
        "copy_reverse_16": small(4, [2, 3, 2], [6, 2, 1], [-6, -2, -1], src_base=400),
        "fill_zero_huge": hostile,
    }


def spec():
    """A GT4Py field (IJK, halo 2, gt:cpu_ifirst), a storage made like a
    Fortran-ordered array with a subarray dim, and base-only labels and
    ranks left to the library."""
    def start(shape, dtype_index=0, nsub=0, preset=-1, flags=0):
        seed = Input().range(0, 6, len(shape)).range(0, 3, dtype_index)
        for extent in shape:
            seed.range(0, 5, extent)
        return seed.range(-1, len(shape) + 1, nsub).range(-1, 5, preset).u8(flags)

    field = start([5, 5, 4], preset=1, flags=8).bool(True)
    for lower, upper in [(2, 2), (2, 2), (0, 0)]:
        field.range(-1, 4, lower).range(-1, 4, upper)
    field.bool(False).range(0, 70, 0)
    like = start([3, 4, 2], nsub=1, flags=32).bool(False).bool(False).range(0, 70, 0)
    like.range(-1, 4, 2).range(0, 16, 8).range(0, 70, 0)
    for stride in [8, 24]:
        like.bool(False).range(-64, 64, stride)
    like.u8(1)  # strides only
    left = start([3, 4, 2], nsub=1, flags=3)
    for label in [-3, 4, -5]:  # I, 4, the next one
        left.range(-5, 8, label)
    for rank in [1, 0, -1]:  # the subarray dim outermost
        left.range(-2, 6, rank)
    left.bool(False).bool(False).range(0, 70, 64)
    return {"gt4py_field": field, "like_fortran_subarray": like, "left_to_library": left}


def broadcast():
    """fuzz_broadcast: GDP-3's first draft's IJ + K, and a K field into a KJI output."""

    def storage(seed, labels, shape, halo, layout, alignment):
        seed.range(0, 5, len(labels)).u8(0)  # not hostile
        for label, extent, h, rank in zip(labels, shape, halo, layout):
            seed.range(0, 4, "IJK01".index(label)).range(0, 4, extent)
            seed.range(0, 4, h).range(0, 4, h).range(0, max(extent - 1, 0), h).range(-1, 5, rank)
        return seed.range(0, 256, alignment)

    ij_k = Input().range(0, 6, 2)
    storage(ij_k.bool(True), "IJ", [4, 4], [1, 1], [1, 0], 64)
    storage(ij_k.bool(True), "K", [3], [0], [0], 8)
    ij_k.bool(False).bool(True).bool(False)  # no out; reduce over J, no keepdims
    into = Input().range(0, 6, 2)
    storage(into.bool(True), "K", [3], [0], [0], 8)
    into.bool(False).range(0, 4, 3).range(0, 4, 1).range(0, 4, 1).range(0, 4, 3)  # a 3-d array
    storage(into.bool(True), "KJI", [3, 1, 3], [0, 0, 1], [0, 1, 2], 0)
    return {"ij_plus_k": ij_k, "into_kji": into}


def halo_plan():
    """A 2 x 2 periodic grid with two fields (asymmetric halos, K with a
    halo, I-first and C layouts), an uneven open 3 x 2 grid, and a 1-d split
    over 4 ranks where one rank's field is made for another subdomain."""
    def start(pdim, dims, nranks, nfields, k):
        seed = Input().range(1, 2, pdim)
        for extent, blocks, periodic in dims:
            seed.range(1, 20, extent).range(0, 8, blocks).bool(periodic)
        return seed.range(1, 8, nranks).range(1, 3, nfields).range(0, 3, k)

    def field(seed, halos, order):
        for d, (lower, upper) in enumerate(halos):
            top = 4 if d < 2 else 2
            seed.range(0, top, lower).range(0, top, upper)
        for i in range(len(order) - 1, 0, -1):  # fuzz_permutation's draws
            seed.range(0, i, order[i])
        return seed

    periodic = start(2, [(8, 2, True), (6, 2, True)], 4, 2, 2)
    field(periodic, [(2, 1), (1, 3), (1, 0)], [0, 1, 2])
    field(periodic, [(0, 2), (1, 1), (0, 0)], [2, 1, 0]).u8(0)
    uneven = start(2, [(9, 3, False), (7, 2, False)], 6, 1, 0)
    field(uneven, [(1, 1), (2, 2)], [0, 1]).u8(0)
    bad = start(1, [(13, 4, True), (5, 0, False)], 4, 1, 1)
    field(bad, [(3, 2), (1, 1), (0, 1)], [0, 1, 2]).u8(0xff).range(0, 3, 2)
    return {"periodic_2x2_two_fields": periodic, "uneven_3x2": uneven,
            "one_rank_mismatched": bad}

def binding():
    """The laplacian's call (out, inp with extent 1 in I and J, origin (1, 1, 0)
    for all) on two 8 x 8 x 4 fields, and the same with inp labelled K, J, I
    and a halo of 1 instead of the call's origin."""
    def spec(seed, extent):
        seed.range(1, 4, 3).identity(4)  # dims I, J, K
        for _ in range(3):  # extents in I, J, K
            e = extent if _ < 2 else 0
            seed.range(0, 2, e).range(0, 2, e)
        seed.bool(extent == 0).bool(False).range(0, 3, 0).bool(False)

    def field(seed, labels=None, halo=None):
        for n in (8, 8, 4):
            seed.range(0, 8, n)
        seed.identity(3)
        for _ in range(3):
            seed.bool(False)  # forwards
        seed.bool(False)  # real memory
        seed.range(0, 7, 1).range(0, 15, 1)  # float64, its ndim
        seed.bool(labels is not None)
        if labels is not None:
            for i in range(2, 0, -1):  # fuzz_permutation draws
                seed.range(0, i, labels[i])
            seed.range(0, 7, 1)
        seed.bool(halo is not None)
        if halo is not None:
            for _ in range(3):
                seed.range(-1, 4, halo).range(0, 4, halo)
        seed.bool(False).bool(False)  # no default origin, writable

    seeds = {}
    for name, origin_all, labels, halo in (("laplacian", True, None, None),
                                           ("laplacian_kji_halo", False, [0, 1, 0], 1)):
        seed = Input().range(1, 3, 2)
        spec(seed, 0)
        spec(seed, 1)
        field(seed)
        field(seed, labels, halo)
        seed.bool(False)  # no domain
        seed.bool(origin_all)
        if origin_all:
            seed.range(-1, 8, 1).range(-1, 8, 1).range(-1, 8, 0)
        seed.bool(False).bool(False)
        seeds[name] = seed
    return seeds


def access():
    def start(device, shape, at):
        return Input().range(0, 4, device).range(1, 6, shape[0]).range(1, 6, shape[1]) \
            .range(0, shape[0] - 1, at[0]).range(0, shape[1] - 1, at[1])

    def step(seed, side, access, toggle=False):  # side, access: -1 .. 2/3, as the target reads
        return seed.range(-1, 2, side).range(-1, 3, access).range(0, 7, 0 if toggle else 1)

    seeds = {}
    names = ["host", "mirrored", "device_only", "managed", "pinned"]
    for device, name in enumerate(names):
        seed = start(device, (4, 5), (1, 2))
        for side, access in [(0, 1), (1, 0), (1, 2), (0, 0), (1, 1), (0, 2), (2, 0), (0, 3)]:
            step(seed, side, access)
        step(seed, 1, 1, toggle=True)
        step(seed, 0, 0)
        seeds[name] = seed
    return seeds


def streams():
    """fuzz_streams: the second field mirrored or not, then steps (op, field,
    stream, first, count, and a copy's source field and start or a sync's
    side) that write on one stream and read on another, on both sides."""
    def step(seed, op, field, stream, first, count, *extra):
        seed.range(0, 5, op).range(0, 1, field).range(0, 2, stream)
        seed.range(0, 15, first).range(1, 16 - first, count)
        if op == 1:
            seed.range(0, 1, extra[0]).range(0, 16 - count, extra[1])
        if op == 5:
            seed.bool(extra[0])
        return seed

    seeds = {}
    for name, mirrored in (("mirrored", True), ("device_only", False)):
        seed = Input().bool(mirrored)
        step(seed, 0, 0, 1, 0, 16)         # fill field 0 on stream 1
        step(seed, 1, 1, 2, 4, 8, 0, 2)    # copy into field 1 on stream 2
        step(seed, 4, 1, 1, 0, 1)          # read field 1's device side on stream 1
        step(seed, 2, 0, 0, 3, 5)          # a host write of field 0
        step(seed, 0, 0, 2, 6, 4)          # a fill over it on stream 2
        step(seed, 3, 0, 1, 0, 1)          # read field 0 on the host
        step(seed, 5, 0, 1, 0, 1, True)    # sync it to the host on stream 1
        step(seed, 1, 0, 1, 0, 4, 1, 4)    # copy from field 1 on stream 1
        step(seed, 4, 0, 0, 0, 1)          # read its device side on the default stream
        seeds[name] = seed
    return seeds


def main():
    import sys
    makers = {"dtype": dtype, "dims_layout": dims_layout, "geometry": geometry, "buffer": buffer,
              "dlpack_import": dlpack_import, "views": views, "access": access, "kernels": kernels, "spec": spec,
              "broadcast": broadcast, "halo_plan": halo_plan, "binding": binding,
              "streams": streams}
    for target in sys.argv[1:] or makers:  # the targets named, else all
        make = makers[target]
        folder = HERE / "corpus" / target
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, seed in make().items():
            (folder / name).write_bytes(bytes(seed.data if isinstance(seed, Input) else seed))


if __name__ == "__main__":
    main()
