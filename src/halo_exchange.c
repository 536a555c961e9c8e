/* Halo exchange over MPI (gtstore/halo_exchange.h): persistent requests on
 * a duplicated communicator, one message per neighbour and direction. */
#include "gtstore/halo_exchange.h"

#include <limits.h>
#include <stdlib.h>

struct gts_halo_exchange {
    gts_halo_plan *plan;
    MPI_Comm comm; /* a duplicate: its own tag space */
    int n;         /* neighbours */
    char *send_memory, *recv_memory;
    char **send_buffers, **recv_buffers;
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
    int n = ex->n;
    size_t slots = (size_t)(n ? n : 1);
    ex->send_buffers = calloc(slots, sizeof *ex->send_buffers);
    ex->recv_buffers = calloc(slots, sizeof *ex->recv_buffers);
    ex->sends = malloc(slots * sizeof *ex->sends);
    ex->recvs = malloc(slots * sizeof *ex->recvs);
    for (int i = 0; ex->sends && ex->recvs && i < n; ++i) /* before any way out: destroy frees */
        ex->sends[i] = ex->recvs[i] = MPI_REQUEST_NULL;
    int64_t send_total = gts_halo_plan_send_bytes(ex->plan);
    int64_t recv_total = gts_halo_plan_recv_bytes(ex->plan);
    ex->send_memory = malloc((size_t)send_total + 1);
    ex->recv_memory = malloc((size_t)recv_total + 1);
    if (!ex->send_buffers || !ex->recv_buffers || !ex->sends || !ex->recvs || !ex->send_memory ||
        !ex->recv_memory)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for halo messages");
    char *send = ex->send_memory, *recv = ex->recv_memory;
    for (int i = 0; i < n; ++i) {
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(ex->plan, i);
        ex->send_buffers[i] = send;
        ex->recv_buffers[i] = recv;
        send += nb->send_bytes;
        recv += nb->recv_bytes;
    }
    return 0;
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
        if (nb->recv_bytes > 0)
            rc = MPI_Recv_init(ex->recv_buffers[i], (int)nb->recv_bytes, MPI_BYTE, nb->rank,
                               nb->recv_tag, ex->comm, &ex->recvs[i]);
        if (rc == MPI_SUCCESS && nb->send_bytes > 0)
            rc = MPI_Send_init(ex->send_buffers[i], (int)nb->send_bytes, MPI_BYTE, nb->rank,
                               nb->send_tag, ex->comm, &ex->sends[i]);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Send_init/MPI_Recv_init");
    }
    return 0;
}

void gts_halo_exchange_destroy(gts_halo_exchange *ex)
{
    if (!ex)
        return;
    for (int i = 0; ex->sends && ex->recvs && i < ex->n; ++i) { /* both made, or none */
        if (ex->sends[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&ex->sends[i]);
        if (ex->recvs[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&ex->recvs[i]);
    }
    if (ex->comm != MPI_COMM_NULL)
        MPI_Comm_free(&ex->comm);
    gts_halo_plan_destroy(ex->plan);
    free(ex->send_buffers);
    free(ex->recv_buffers);
    free(ex->sends);
    free(ex->recvs);
    free(ex->send_memory);
    free(ex->recv_memory);
    free(ex);
}

int gts_halo_exchange_create(const gts_partition *partition, MPI_Comm comm, int nfields,
                             const gts_storage *fields, gts_halo_exchange **out, gts_error *err)
{
    int size, rank, rc;
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return mpi_error(err, rc, "MPI_Comm_size/MPI_Comm_rank");
    if (size != partition->nranks) /* the same answer on every rank: no need to agree */
        return gts_error_set(err, GTS_EINVAL,
                             "comm: has %d ranks, the partition %d", size, partition->nranks);
    gts_halo_exchange *ex = calloc(1, sizeof *ex);
    if (!ex)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a halo exchange");
    ex->comm = MPI_COMM_NULL;
    int failed = gts_halo_plan_create(partition, rank, nfields, fields, &ex->plan, err);
    rc = agree(comm, rank, ex->plan, failed, err);
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

int gts_halo_exchange_start(gts_halo_exchange *ex, gts_error *err)
{
    if (ex->started)
        return gts_error_set(err, GTS_EINVAL, "exchange: already started (call wait first)");
    ex->started = true;
    int first_error = 0;
    for (int i = 0; i < ex->n; ++i)
        if (ex->recvs[i] != MPI_REQUEST_NULL) {
            int rc = MPI_Start(&ex->recvs[i]);
            if (rc != MPI_SUCCESS && !first_error)
                first_error = mpi_error(err, rc, "MPI_Start");
        }
    /* Every send is started even after an error, so that no neighbour
       waits for ever; the error is returned, and wait completes them. */
    for (int i = 0; i < ex->n; ++i) {
        if (ex->sends[i] == MPI_REQUEST_NULL)
            continue;
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(ex->plan, i);
        gts_error pack_err;
        int rc = gts_halo_plan_pack(ex->plan, i, ex->send_buffers[i], nb->send_bytes, &pack_err);
        if (rc && !first_error)
            first_error = gts_error_set(err, rc, "%s", pack_err.message);
        rc = MPI_Start(&ex->sends[i]);
        if (rc != MPI_SUCCESS && !first_error)
            first_error = mpi_error(err, rc, "MPI_Start");
    }
    return first_error;
}

int gts_halo_exchange_wait(gts_halo_exchange *ex, gts_error *err)
{
    if (!ex->started)
        return gts_error_set(err, GTS_EINVAL, "exchange: not started");
    ex->started = false;
    int first_error = 0;
    for (;;) { /* unpack each message as it arrives */
        int index, rc = MPI_Waitany(ex->n, ex->recvs, &index, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            if (!first_error)
                first_error = mpi_error(err, rc, "MPI_Waitany");
            break;
        }
        if (index == MPI_UNDEFINED)
            break;
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(ex->plan, index);
        gts_error unpack_err;
        rc = gts_halo_plan_unpack(ex->plan, index, ex->recv_buffers[index], nb->recv_bytes,
                                  &unpack_err);
        if (rc && !first_error)
            first_error = gts_error_set(err, rc, "%s", unpack_err.message);
    }
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
