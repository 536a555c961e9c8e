/* Halo exchange over MPI (gtstore/halo_exchange.h): persistent requests on
 * a duplicated communicator, one message per neighbour and direction. */
#include "gtstore/halo_exchange.h"

#include <limits.h>
#include <stdlib.h>

#ifdef GTS_HAVE_MPI_EXT_H
#include <mpi-ext.h> /* Open MPI's extensions: MPIX_Query_cuda_support */
#endif

struct gts_halo_exchange {
    gts_halo_plan *plan;
    gts_halo_messages *messages; /* the buffers, in the memory chosen for the plan */
    MPI_Comm comm; /* a duplicate: its own tag space */
    int n;         /* neighbours */
    /* MPI_REQUEST_NULL where there is no message that way; persistent
       requests stay allocated between exchanges */
    MPI_Request *sends, *recvs;
    bool started;
};

static int mpi_error(gts_error *err, int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        length = 0;
    text[length] = '\0';
    return gts_error_set(err, GTS_EINVAL, "%s failed: %s", what, text);
}

/* Every rank learns whether all made their plan, and with equal fields. */
static int agree(MPI_Comm comm, int rank, const gts_halo_plan *plan, int failed_rc,
                 gts_error *err)
{
    /* max of (failed, signature, ~signature): equal signatures everywhere
       iff max(signature) == ~max(~signature) == min(signature) */
    uint64_t sig = plan ? gts_halo_plan_signature(plan) : 0;
    uint64_t mine[3] = {failed_rc ? 1u : 0u, sig, ~sig}, all[3];
    int first = failed_rc ? rank : INT_MAX, first_failed;
    int rc = MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_MAX, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&first, &first_failed, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS)
        return mpi_error(err, rc, "MPI_Allreduce");
    if (failed_rc)
        return failed_rc; /* its own message is in err */
    if (all[0])
        return gts_error_set(err, GTS_EINVAL,
                             "fields: rank %d could not make its halo plan (see its error)",
                             first_failed);
    if (all[1] != ~all[2])
        return gts_error_set(err, GTS_EINVAL,
                             "fields: differ between ranks (dtype, halo, layout or undivided "
                             "extents): messages would not match");
    return 0;
}

static int allocate(gts_halo_exchange *ex, gts_error *err)
{
    size_t slots = (size_t)(ex->n ? ex->n : 1);
    ex->sends = malloc(slots * sizeof *ex->sends);
    ex->recvs = malloc(slots * sizeof *ex->recvs);
    if (!ex->sends || !ex->recvs)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for halo requests");
    for (int i = 0; i < ex->n; ++i) /* before any way out: destroy frees */
        ex->sends[i] = ex->recvs[i] = MPI_REQUEST_NULL;
    return 0;
}

#if (defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA) ||                             \
    defined(GTS_HAVE_MPIX_GPU_QUERY_SUPPORT)
/* The DLPack type of CUDA device memory as the devices describe themselves
 * (GPU memory exported with the CUDA array interface); 0 where gtstore
 * reaches no CUDA GPU, whose memory no field can then be in. */
static int32_t cuda_memory_type(void)
{
    size_t n = gts_device_list(NULL, 0);
    const gts_device_ops **devices = malloc(n * sizeof *devices);
    int32_t type = 0;
    n = devices ? gts_device_list(devices, n) : 0;
    for (size_t i = 0; i < n && !type; ++i)
        if (devices[i]->kind == GTS_MEMORY_GPU && devices[i]->cuda_array_interface)
            type = devices[i]->id.type;
    free(devices);
    return type;
}
#endif

int32_t gts_halo_exchange_mpi_reads(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    if (MPIX_Query_cuda_support()) /* Open MPI: built with CUDA and running with it */
        return cuda_memory_type();
#elif defined(GTS_HAVE_MPIX_GPU_QUERY_SUPPORT)
    int supported = 0; /* MPICH 4 */
    if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS && supported)
        return cuda_memory_type();
#endif
    return 0;
}

/* This rank's message buffers for its plan, before the ranks agree. */
static int make_messages(gts_halo_exchange *ex, gts_halo_device_aware aware, gts_error *err)
{
    gts_halo_memory memory;
    int rc = gts_halo_memory_choose(ex->plan, aware, gts_halo_exchange_mpi_reads(), &memory,
                                    err);
    return rc ? rc : gts_halo_messages_create(ex->plan, memory, &ex->messages, err);
}

static int make_requests(gts_halo_exchange *ex, gts_error *err)
{
    for (int i = 0; i < ex->n; ++i) {
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(ex->plan, i);
        if (nb->send_bytes > INT_MAX || nb->recv_bytes > INT_MAX)
            return gts_error_set(err, GTS_EOVERFLOW,
                                 "fields: a message of %lld bytes is over MPI's count limit",
                                 (long long)(nb->send_bytes > nb->recv_bytes ? nb->send_bytes
                                                                             : nb->recv_bytes));
        int rc = MPI_SUCCESS;
        if (gts_halo_messages_local(ex->messages, i))
            continue; /* this rank itself: packing fills those halos */
        /* host memory, or device memory for an MPI that reads it */
        void *recv = gts_halo_messages_recv(ex->messages, i)->mpi;
        void *send = gts_halo_messages_send(ex->messages, i)->mpi;
        if (nb->recv_bytes > 0)
            rc = MPI_Recv_init(recv, (int)nb->recv_bytes, MPI_BYTE, nb->rank, nb->recv_tag,
                               ex->comm, &ex->recvs[i]);
        if (rc == MPI_SUCCESS && nb->send_bytes > 0)
            rc = MPI_Send_init(send, (int)nb->send_bytes, MPI_BYTE, nb->rank, nb->send_tag,
                               ex->comm, &ex->sends[i]);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Send_init/MPI_Recv_init");
    }
    return 0;
}

void gts_halo_exchange_destroy(gts_halo_exchange *ex)
{
    if (!ex)
        return;
    /* Started and not waited for: MPI writes into the receive buffers (and
     * reads the send buffers) until the requests complete, so they complete
     * before the buffers go. Cancelling instead would strand the
     * neighbours' matching messages, and their wait with them. */
    if (ex->started) {
        MPI_Waitall(ex->n, ex->recvs, MPI_STATUSES_IGNORE);
        MPI_Waitall(ex->n, ex->sends, MPI_STATUSES_IGNORE);
        ex->started = false;
    }
    for (int i = 0; ex->sends && ex->recvs && i < ex->n; ++i) { /* both made, or none */
        if (ex->sends[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&ex->sends[i]);
        if (ex->recvs[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&ex->recvs[i]);
    }
    if (ex->comm != MPI_COMM_NULL)
        MPI_Comm_free(&ex->comm);
    gts_halo_messages_destroy(ex->messages);
    gts_halo_plan_destroy(ex->plan);
    free(ex->sends);
    free(ex->recvs);
    free(ex);
}

int gts_halo_exchange_create(const gts_partition *partition, MPI_Comm comm, int nfields,
                             const gts_storage *fields, gts_halo_exchange **out, gts_error *err)
{
    return gts_halo_exchange_create_aware(partition, comm, nfields, fields, GTS_HALO_AWARE_AUTO,
                                          out, err);
}

/* The communicator's size must be the decomposition's: the same answer on
 * every rank, so no need to agree. */
static int begin(MPI_Comm comm, int nranks, int *rank, gts_halo_exchange **out,
                 gts_halo_exchange **ex, gts_error *err)
{
    int size, rc;
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(comm, rank)) != MPI_SUCCESS)
        return mpi_error(err, rc, "MPI_Comm_size/MPI_Comm_rank");
    if (size != nranks)
        return gts_error_set(err, GTS_EINVAL, "comm: has %d ranks, the partition %d", size,
                             nranks);
    *ex = calloc(1, sizeof **ex);
    if (!*ex)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo exchange");
    (*ex)->comm = MPI_COMM_NULL;
    return 0;
}

/* Collective, once this rank made its plan (or failed to: `failed`, its
 * error in err): its buffers, the agreement of all ranks, the duplicate
 * communicator and the persistent requests. */
static int finish(gts_halo_exchange *ex, MPI_Comm comm, int rank, int failed,
                  gts_halo_device_aware aware, gts_halo_exchange **out, gts_error *err)
{
    if (!failed)
        failed = make_messages(ex, aware, err);
    int rc = agree(comm, rank, ex->plan, failed, err);
    if (!rc && (rc = MPI_Comm_dup(comm, &ex->comm)) != MPI_SUCCESS) {
        ex->comm = MPI_COMM_NULL;
        rc = mpi_error(err, rc, "MPI_Comm_dup");
    }
    if (!rc && (rc = MPI_Comm_set_errhandler(ex->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS)
        rc = mpi_error(err, rc, "MPI_Comm_set_errhandler");
    if (!rc) {
        ex->n = gts_halo_plan_neighbor_count(ex->plan);
        if (!(rc = allocate(ex, err)))
            rc = make_requests(ex, err);
    }
    if (rc) {
        gts_halo_exchange_destroy(ex);
        return rc;
    }
    *out = ex;
    return 0;
}

int gts_halo_exchange_create_aware(const gts_partition *partition, MPI_Comm comm, int nfields,
                                   const gts_storage *fields, gts_halo_device_aware aware,
                                   gts_halo_exchange **out, gts_error *err)
{
    int rank, rc = gts_partition_check(partition, err); /* alike on every rank */
    gts_halo_exchange *ex = NULL;
    if (rc || (rc = begin(comm, partition->nranks, &rank, out, &ex, err)))
        return rc;
    int failed = gts_halo_plan_create(partition, rank, nfields, fields, &ex->plan, err);
    return finish(ex, comm, rank, failed, aware, out, err);
}

int gts_cube_halo_exchange_create(const gts_cube_partition *partition, MPI_Comm comm,
                                  int nfields, const gts_storage *fields,
                                  const gts_cube_component *components,
                                  gts_halo_device_aware aware, gts_halo_exchange **out,
                                  gts_error *err)
{
    int rank, rc = gts_cube_partition_check(partition, err); /* alike on every rank */
    gts_halo_exchange *ex = NULL;
    if (rc || (rc = begin(comm, partition->nranks, &rank, out, &ex, err)))
        return rc;
    int failed = gts_cube_halo_plan_create(partition, rank, nfields, fields, components,
                                           &ex->plan, err);
    return finish(ex, comm, rank, failed, aware, out, err);
}

int gts_halo_exchange_start(gts_halo_exchange *ex, gts_error *err)
{
    return gts_halo_exchange_start_on(ex, NULL, err);
}

int gts_halo_exchange_start_on(gts_halo_exchange *ex, gts_stream stream, gts_error *err)
{
    if (ex->started)
        return gts_error_set(err, GTS_EINVAL, "exchange: already started (call wait first)");
    bool at_once = gts_halo_messages_at_once(ex->messages);
    /* MPI writes the receive buffers from here on: once the previous
     * unpacking out of them (queued on a stream) is done */
    int first_error = at_once ? gts_halo_messages_host_wait(ex->messages, false, err) : 0;
    if (first_error)
        return first_error;
    ex->started = true;
    for (int i = 0; i < ex->n; ++i)
        if (ex->recvs[i] != MPI_REQUEST_NULL) {
            int rc = MPI_Start(&ex->recvs[i]);
            if (rc != MPI_SUCCESS && !first_error)
                first_error = mpi_error(err, rc, "MPI_Start");
        }
    /* Fields in device memory only: every message packed at once (one
       launch per GPU), then sent. Host work: each message sent as soon as
       it is packed, so that a neighbour can receive while the next is
       packed. Either way this rank's own halos are filled, and every send
       is started even after an error, so that no neighbour waits for ever;
       the error is returned, and wait completes them. The packing on
       `stream` follows the fields' device work on the device; the host
       waits for it before MPI reads the send buffers. */
    gts_error pack_err;
    int rc = at_once ? gts_halo_messages_pack_all_on(ex->messages, stream, &pack_err)
                     : gts_halo_messages_pack_local(ex->messages, &pack_err);
    if (at_once) { /* also after a failed pack: what it queued is done before MPI reads */
        gts_error wait_err;
        int wait_rc = gts_halo_messages_host_wait(ex->messages, true, &wait_err);
        if (wait_rc && !rc) {
            rc = wait_rc;
            pack_err = wait_err;
        }
    }
    if (rc && !first_error)
        first_error = gts_error_set(err, rc, "%s", pack_err.message);
    for (int i = 0; i < ex->n; ++i) {
        if (ex->sends[i] == MPI_REQUEST_NULL)
            continue;
        if (!at_once && (rc = gts_halo_messages_pack(ex->messages, i, &pack_err)) &&
            !first_error)
            first_error = gts_error_set(err, rc, "%s", pack_err.message);
        rc = MPI_Start(&ex->sends[i]);
        if (rc != MPI_SUCCESS && !first_error)
            first_error = mpi_error(err, rc, "MPI_Start");
    }
    return first_error;
}

/* Every message once all have arrived (one launch per GPU, queued on
 * `stream`). */
static int unpack_at_once(gts_halo_exchange *ex, gts_stream stream, gts_error *err)
{
    int rc = MPI_Waitall(ex->n, ex->recvs, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_error(err, rc, "MPI_Waitall");
    return gts_halo_messages_unpack_all_on(ex->messages, stream, err);
}

/* Each message as it arrives, so that host work overlaps the rest. */
static int unpack_each(gts_halo_exchange *ex, gts_error *err)
{
    int first_error = 0;
    for (;;) {
        int index, rc = MPI_Waitany(ex->n, ex->recvs, &index, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            if (!first_error)
                first_error = mpi_error(err, rc, "MPI_Waitany");
            break;
        }
        if (index == MPI_UNDEFINED)
            break;
        gts_error unpack_err;
        rc = gts_halo_messages_unpack(ex->messages, index, &unpack_err);
        if (rc && !first_error)
            first_error = gts_error_set(err, rc, "%s", unpack_err.message);
    }
    return first_error;
}

int gts_halo_exchange_wait(gts_halo_exchange *ex, gts_error *err)
{
    return gts_halo_exchange_wait_on(ex, NULL, err);
}

int gts_halo_exchange_wait_on(gts_halo_exchange *ex, gts_stream stream, gts_error *err)
{
    if (!ex->started)
        return gts_error_set(err, GTS_EINVAL, "exchange: not started");
    ex->started = false;
    int first_error = gts_halo_messages_at_once(ex->messages)
                          ? unpack_at_once(ex, stream, err)
                          : unpack_each(ex, err);
    int rc = MPI_Waitall(ex->n, ex->sends, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS && !first_error)
        first_error = mpi_error(err, rc, "MPI_Waitall");
    return first_error;
}

int gts_halo_exchange_run(gts_halo_exchange *ex, gts_error *err)
{
    if (ex->started) /* not this call's exchange to complete */
        return gts_error_set(err, GTS_EINVAL, "exchange: already started (call wait first)");
    int rc = gts_halo_exchange_start(ex, err);
    int wait_rc = gts_halo_exchange_wait(ex, rc ? NULL : err);
    return rc ? rc : wait_rc;
}

const gts_halo_plan *gts_halo_exchange_plan(const gts_halo_exchange *ex)
{
    return ex->plan;
}

const gts_halo_messages *gts_halo_exchange_messages(const gts_halo_exchange *ex)
{
    return ex->messages;
}
