"""GHEX interop: gtstore storages handed to GHEX's Python API (the `ghex`
package) without a copy, exchanged by GHEX, and compared with gtstore's own
exchange of the same fields. Skipped, with the import error, where ghex is
not installed (`./dev ghex` builds it: docs/distributed.md)."""

import numpy as np
import pytest

from gtstore import distributed as gd

from conftest import all_ranks

try:
    from ghex.context import make_context
    from ghex.structured.cartesian_sets import ProductSet, UnitRange
    from ghex.structured.regular import (
        DomainDescriptor,
        HaloGenerator,
        make_communication_object,
        make_field_descriptor,
        make_pattern,
    )
except ImportError as error:  # keep the exact reason in the skip message
    pytest.skip(f"ghex is not installed: {error!r}", allow_module_level=True)


def ghex_exchange(part, fields):
    """GHEX's exchange of storages made by `part` (their memory, no copy)."""
    ctx = make_context(part.comm)
    sub = part.subdomain
    domain = DomainDescriptor(ctx.rank(), ProductSet(*(UnitRange(s.start, s.stop) for s in sub)))
    box = ProductSet(*(UnitRange(0, n) for n in part.global_shape))
    periodic = tuple(part.periodic) + (False,) * (len(part.global_shape) - 2)
    halo = part.halo
    pattern = make_pattern(ctx, HaloGenerator(box, halo, periodic), [domain])
    co = make_communication_object(ctx)
    descriptors = [
        pattern(make_field_descriptor(domain, f, tuple(lo for lo, _ in halo), f.shape))
        for f in fields
    ]
    co.exchange(descriptors).wait()


@pytest.mark.parametrize("preset", ["gt:cpu_ifirst", "gt:cpu_kfirst"])
@pytest.mark.parametrize("periodic", [(True, True), (False, True)])
def test_ghex_exchanges_gtstore_storages_like_gtstore(comm, preset, periodic):
    shape = (12, 10, 3)
    part = gd.CartesianPartitioner(comm, shape, halo=((2, 1), (1, 2), (0, 0)), periodic=periodic)
    G = np.random.default_rng(7).random(shape)
    ours = [part.full(np.nan, "f8", defaults=preset) for _ in range(2)]
    theirs = [part.full(np.nan, "f8", defaults=preset) for _ in range(2)]
    for f in ours + theirs:
        part.scatter(G if part.rank == 0 else None, f)
    addresses = [f.__array_interface__["data"][0] for f in theirs]
    with part.halo_exchange(ours) as ex:
        ex.exchange()
    ghex_exchange(part, theirs)
    ok = all(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
             for a, b in zip(ours, theirs))
    ok = ok and [f.__array_interface__["data"][0] for f in theirs] == addresses
    # the J halo (periodic: always a neighbour) was filled, not left NaN
    ok = ok and not np.isnan(np.asarray(ours[0])[2:-1, :]).any()
    part.close()
    all_ranks(comm, ok, f"GHEX and gtstore agree ({preset}, periodic {periodic})")
