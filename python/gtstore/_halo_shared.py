"""Halo messages through shared memory: the receive buffers of a halo
exchange in an MPI-3 shared window (``MPI_Win_allocate_shared``) where every
rank's neighbours share its node, so that a sender packs each message
straight into its receiver's buffer and the receiver unpacks it from there.
An exchange then copies each halo byte twice (pack, unpack) instead of three
times (pack, MPI's copy between the ranks, unpack), and MPI carries only
empty messages, which say that a buffer is full ("ready") and, back, that
it is unpacked and free for the next exchange ("free").

Used by :class:`gtstore.distributed.HaloExchange` for fields with a host
side (messages in host memory) when every rank of the exchange qualifies
(decided collectively): its non-local neighbours on its own node, and the
environment variable ``GTSTORE_HALO_SHARED_MEMORY`` not ``"0"``. The plan's
own pack and unpack (libgtstore) fill and read the buffers, so the bytes
are those of a message. Made once with the exchange: the window, its views,
and persistent requests for the empty messages; nothing is allocated per
exchange.
"""

from __future__ import annotations

import os

import numpy as np

ENV = "GTSTORE_HALO_SHARED_MEMORY"


def _wanted():
    return os.environ.get(ENV, "1").strip() != "0"


class SharedMessages:
    """The shared receive buffers of one exchange, and the empty messages
    that order their use; ``None`` from :meth:`make` where a rank does not
    qualify."""

    @classmethod
    def make(cls, MPI, comm, plan, travel):
        """Collective over ``comm`` (the exchange's own communicator):
        ``travel`` are the indices of the plan's neighbours whose messages
        travel (not this rank itself)."""
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        ranks = [plan.neighbors[i].rank for i in travel]
        on_node = MPI.Group.Translate_ranks(comm.Get_group(), ranks, node.Get_group())
        fits = _wanted() and all(r != MPI.UNDEFINED for r in on_node)
        if not comm.allreduce(fits, op=MPI.LAND):
            node.Free()
            return None
        return cls(MPI, comm, node, plan, travel, on_node)

    def __init__(self, MPI, comm, node, plan, travel, on_node):
        self._MPI, self.plan, self._node = MPI, plan, node
        neighbors = plan.neighbors
        # my window: the receive block's travelling part, laid out by
        # libgtstore (the travelling messages first, in neighbour order)
        places, size = plan.message_layout("recv")
        self._window = MPI.Win.Allocate_shared(max(size, 1), 1, comm=node)
        self._window.Lock_all()  # a passive epoch for Sync, the whole exchange's life
        mine = self._memory(node.Get_rank())
        self._recvs = [i for i in travel if neighbors[i].recv_bytes]
        self._sends = [i for i in travel if neighbors[i].send_bytes]
        self._recv_views = [mine[places[i]] for i in self._recvs]
        # each receiver tells its sender where in its window the message
        # goes (its slice), matched as the messages would be (rank and tag)
        told = [comm.isend(places[i], dest=neighbors[i].rank, tag=neighbors[i].recv_tag)
                for i in self._recvs]
        self._send_views = []
        for i in self._sends:
            place = comm.recv(source=neighbors[i].rank, tag=neighbors[i].send_tag)
            owner = on_node[travel.index(i)]
            self._send_views.append(self._memory(owner)[place])
        MPI.Request.Waitall(told)
        self._ready_comm, self._free_comm = comm.Dup(), comm.Dup()
        empty = [None, 0, MPI.BYTE]
        self._ready_send = [self._ready_comm.Send_init(empty, dest=neighbors[i].rank,
                                                       tag=neighbors[i].send_tag)
                            for i in self._sends]
        self._ready_recv = [self._ready_comm.Recv_init(empty, source=neighbors[i].rank,
                                                       tag=neighbors[i].recv_tag)
                            for i in self._recvs]
        self._free_send = [self._free_comm.Send_init(empty, dest=neighbors[i].rank,
                                                     tag=neighbors[i].recv_tag)
                           for i in self._recvs]
        self._free_recv = [self._free_comm.Recv_init(empty, source=neighbors[i].rank,
                                                     tag=neighbors[i].send_tag)
                           for i in self._sends]
        self._free_posted = False  # whether the free messages of a last exchange are awaited

    def _memory(self, node_rank):
        buffer, _ = self._window.Shared_query(node_rank)
        return np.frombuffer(buffer, np.uint8)

    def start(self):
        """Posts the ready messages' receives, then packs each message into
        its receiver's buffer once the receiver has freed it, and says so.
        Every ready message is sent even after a failed pack (the error is
        raised after), so that no neighbour waits for ever."""
        MPI = self._MPI
        MPI.Prequest.Startall(self._ready_recv)
        error = None
        for k, i in enumerate(self._sends):
            if self._free_posted:
                self._free_recv[k].Wait()
            try:
                self.plan.pack(i, self._send_views[k])
            except Exception as e:  # noqa: BLE001 (raised below, once every message is sent)
                error = error or e
            self._window.Sync()  # the packed bytes visible before the message says so
            self._ready_send[k].Start()
        MPI.Prequest.Startall(self._free_recv)
        self._free_posted = True
        if error is not None:
            raise error

    def wait(self, unpack=True):
        """Unpacks each message as it is ready and frees its buffer for the
        sender's next exchange; ``unpack=False`` only completes the
        messages (an exchange dropped between start and wait)."""
        MPI = self._MPI
        error = None
        for _ in self._recvs:
            k = MPI.Request.Waitany(self._ready_recv)
            self._window.Sync()
            try:
                if unpack:
                    self.plan.unpack(self._recvs[k], self._recv_views[k])
            except Exception as e:  # noqa: BLE001 (every buffer is freed first)
                error = error or e
            self._free_send[k].Start()
        MPI.Request.Waitall(self._ready_send)
        MPI.Request.Waitall(self._free_send)
        if error is not None:
            raise error

    def free(self, collective=True):
        """Completes the last exchange's free messages, then frees the
        requests, the communicators and (``collective``: every rank of the
        node frees it at this point) the window. Without ``collective`` (an
        exchange dropped without close(), on each rank when its garbage
        collector decides) the window is left to MPI_Finalize: freeing it
        synchronises the node's ranks, which would then wait for each
        other."""
        MPI = self._MPI
        if self._free_posted:
            MPI.Request.Waitall(self._free_recv)
        for request in self._ready_send + self._ready_recv + self._free_send + self._free_recv:
            request.Free()
        self._recv_views = self._send_views = []  # no view outlives the window
        if collective:
            self._window.Unlock_all()
            self._window.Free()
        for comm in (self._ready_comm, self._free_comm, self._node):
            comm.Free()
