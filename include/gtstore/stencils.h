/* Built-in stencils over bound fields (gtstore/binding.h) of any layout:
 * float64 fields labelled I, J, K in any memory order, each loop running
 * along the output's contiguous dimension (vectorised where every field is
 * unit-stride there) and in parallel with OpenMP over the others.
 *
 *   copy(out, inp):            out = inp
 *   laplacian(out, inp):       out = inp[-1,0] + inp[1,0] + inp[0,-1] + inp[0,1] - 4 inp
 *                              (inp: extent 1 in I and J)
 *   hdiff(out, inp, coeff):    the horizontal diffusion of GT4Py's examples,
 *                              with flux limiter (inp: extent 2 in I and J)
 *   tridiagonal(x, a, b, c, d): per column, the Thomas algorithm along K for
 *                              a[k] x[k-1] + b[k] x[k] + c[k] x[k+1] = d[k]
 *                              over the domain's K (a at its first and c at
 *                              its last level are not read; no pivoting)
 *
 * Use: gts_bind(gts_stencil_signature(s), ...) then gts_stencil_run(s, ...)
 * with the binding; on a GPU, gts_bind(gts_stencil_signature_on(s,
 * GTS_DEVICE_GPU), ...) then gts_stencil_launch(gpu, s, ...), which queues
 * one kernel on the binding's stream. */
#ifndef GTSTORE_STENCILS_H
#define GTSTORE_STENCILS_H

#include "gtstore/binding.h"
#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gts_stencil {
    GTS_STENCIL_COPY = 0,
    GTS_STENCIL_LAPLACIAN = 1,
    GTS_STENCIL_HDIFF = 2,
    GTS_STENCIL_TRIDIAGONAL = 3
} gts_stencil;

/* The signature of a built-in stencil (static; NULL for an unknown one).
 * Its fields come in the order of the parameters above. */
const gts_signature *gts_stencil_signature(gts_stencil stencil);

/* The signature of a built-in stencil computing on `device`
 * (GTS_DEVICE_CPU: gts_stencil_signature's; GTS_DEVICE_GPU: the same
 * fields, bound to device memory). Static; NULL for an unknown stencil or
 * device kind. */
const gts_signature *gts_stencil_signature_on(gts_stencil stencil, gts_device device);

/* Runs the stencil on fields bound with its signature. GTS_EINVAL for an
 * unknown stencil, for a negative domain extent (a binding gts_bind did not
 * make), for a field whose origin address or strides are not
 * multiples of 8 bytes (float64 loads there would be undefined behaviour),
 * for an output sharing memory with an input, and for an output whose
 * points over the domain share memory (the threads writing them would
 * race). */
int gts_stencil_run(gts_stencil stencil, const gts_binding *binding,
                    const gts_bound_field *fields, gts_error *err);

/* Runs the stencil where its fields' memory is: `device` is the device
 * whose memory every bound field is in (the host device: gts_stencil_run).
 * A GPU queues one kernel on binding->stream (NULL: the default stream,
 * where it has completed on return) and returns; the caller orders the
 * fields there before and records them after (gtstore/access.h), as for
 * any kernel on the GPU. Each thread computes points with the same
 * formulas as the host (the GPU may fuse a multiply and an add, so results
 * may differ from the host's in the last bits). The tridiagonal solve takes
 * scratch memory of the domain's points from the device, freed in the
 * stream's order. Errors: those of gts_stencil_run, GTS_EINVAL for a NULL
 * device, GTS_ENOTSUP for a device without built-in stencils, the
 * device's errors. */
int gts_stencil_launch(const gts_device_ops *device, gts_stencil stencil,
                       const gts_binding *binding, const gts_bound_field *fields,
                       gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
