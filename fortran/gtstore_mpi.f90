! The Fortran module gtstore_mpi: halo exchange of gtstore fields from
! Fortran (docs/fortran.md, "Halo exchange"). The communicator is Fortran's
! integer handle: the value `use mpi` gives (MPI_COMM_WORLD), or an
! mpi_f08 communicator's comm%MPI_VAL; the C side converts it with
! MPI_Comm_f2c, so this module needs no Fortran MPI module of its own.
module gtstore_mpi
  use, intrinsic :: iso_c_binding
  use gtstore, only: gts_field, gts_error_c, gts_status_finish, gts_handle_of, gts_associated, &
                     GTS_OK, GTS_EINVAL
  implicit none
  private

  ! A domain split over the ranks of a communicator, and this rank's block.
  type, public :: gts_partition
    type(c_ptr), private :: p = c_null_ptr
  end type gts_partition
  ! The halo exchange of a fixed set of fields (made once, run many times).
  type, public :: gts_exchange
    type(c_ptr), private :: p = c_null_ptr
  end type gts_exchange

  public :: gts_partition_create, gts_partition_free, gts_subdomain
  ! From an integer handle here; gtstore_mpi_f08 adds type(MPI_Comm).
  interface gts_partition_create
    module procedure partition_create
  end interface gts_partition_create
  public :: gts_exchange_create, gts_exchange_start, gts_exchange_wait, gts_exchange_run
  public :: gts_exchange_destroy

  interface
    integer(c_int) function gtsf_partition_create(comm, ndim, global_shape, process_grid, &
                                                  periodic, labels, out, err) bind(c)
      import :: c_int, c_int32_t, c_int64_t, c_char, c_ptr, gts_error_c
      integer(c_int), value :: comm
      integer(c_int32_t), value :: ndim
      integer(c_int64_t), intent(in) :: global_shape(*)
      integer(c_int32_t), intent(in) :: process_grid(*), periodic(*)
      character(kind=c_char), intent(in) :: labels(*)
      type(c_ptr), intent(out) :: out
      type(gts_error_c), intent(inout) :: err
    end function gtsf_partition_create
    subroutine gtsf_partition_free(p) bind(c)
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine gtsf_partition_free
    subroutine gtsf_partition_subdomain(p, start, size, rank, nranks, ndim) bind(c)
      import :: c_ptr, c_int32_t, c_int64_t
      type(c_ptr), value :: p
      integer(c_int64_t), intent(out) :: start(*), size(*)
      integer(c_int32_t), intent(out) :: rank, nranks, ndim
    end subroutine gtsf_partition_subdomain
    integer(c_int) function gtsf_exchange_create(p, nfields, fields, out, err) bind(c)
      import :: c_int, c_int32_t, c_ptr, gts_error_c
      type(c_ptr), value :: p
      integer(c_int32_t), value :: nfields
      type(c_ptr), intent(in) :: fields(*)
      type(c_ptr), intent(out) :: out
      type(gts_error_c), intent(inout) :: err
    end function gtsf_exchange_create
    integer(c_int) function gtsf_exchange_start(exchange, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: exchange
      type(gts_error_c), intent(inout) :: err
    end function gtsf_exchange_start
    integer(c_int) function gtsf_exchange_wait(exchange, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: exchange
      type(gts_error_c), intent(inout) :: err
    end function gtsf_exchange_wait
    subroutine gtsf_exchange_destroy(exchange) bind(c)
      import :: c_ptr
      type(c_ptr), value :: exchange
    end subroutine gtsf_exchange_destroy
  end interface

contains

  subroutine fail(message, status, errmsg)
    character(*), intent(in) :: message
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    status = GTS_EINVAL
    if (present(errmsg)) errmsg = message
  end subroutine fail

  ! Whether `p`, the handle of a partition or an exchange (`what`), was
  ! created; else the status says it was not.
  logical function created(p, what, status, errmsg)
    type(c_ptr), intent(in) :: p
    character(*), intent(in) :: what
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    created = c_associated(p)
    if (.not. created) call fail(what // ': not created', status, errmsg)
  end function created

  ! Splits `global_shape` (domain points of the split dimensions, I and J
  ! unless labels says otherwise, e.g. 'IJK') over the ranks of `comm` (an
  ! integer handle). process_grid: ranks per dimension, 0 to let gtstore
  ! choose; periodic: per dimension. Every rank computes the same partition.
  subroutine partition_create(partition, comm, global_shape, status, process_grid, &
                              periodic, labels, errmsg)
    type(gts_partition), intent(inout) :: partition
    integer, intent(in) :: comm
    integer, intent(in) :: global_shape(:)
    integer, intent(out) :: status
    integer, intent(in), optional :: process_grid(:)
    logical, intent(in), optional :: periodic(:)
    character(*), intent(in), optional :: labels
    character(*), intent(out), optional :: errmsg
    integer(c_int32_t) :: grid(3), wrap(3)
    character(kind=c_char) :: c_labels(8)
    integer :: n, i
    type(gts_error_c) :: err
    type(c_ptr) :: out
    n = size(global_shape)
    grid = 0
    wrap = 0
    c_labels = c_null_char
    if (n < 1 .or. n > 3) then
      call fail('global_shape: 1 to 3 dimensions are split', status, errmsg)
      return
    end if
    if (present(process_grid)) then
      if (size(process_grid) /= n) then
        call fail('process_grid: sized unlike global_shape', status, errmsg)
        return
      end if
      grid(1:n) = process_grid
    end if
    if (present(periodic)) then
      if (size(periodic) /= n) then
        call fail('periodic: sized unlike global_shape', status, errmsg)
        return
      end if
      wrap(1:n) = merge(1, 0, periodic)
    end if
    if (present(labels)) then
      if (len_trim(labels) >= size(c_labels)) then
        call fail('labels: "' // trim(labels) // '" is too long', status, errmsg)
        return
      end if
      do i = 1, len_trim(labels)
        c_labels(i) = labels(i:i)
      end do
    end if
    call gts_status_finish(gtsf_partition_create(int(comm, c_int), int(n, c_int32_t), &
                                                 int(global_shape, c_int64_t), grid, wrap, &
                                                 c_labels, out, err), err, status, errmsg)
    if (status /= GTS_OK) return
    call gts_partition_free(partition)
    partition%p = out
  end subroutine partition_create

  subroutine gts_partition_free(partition)
    type(gts_partition), intent(inout) :: partition
    if (c_associated(partition%p)) call gtsf_partition_free(partition%p)
    partition%p = c_null_ptr
  end subroutine gts_partition_free

  ! This rank's block: per split dimension its first global index (from 1)
  ! and its number of points; the rank and the number of ranks.
  subroutine gts_subdomain(partition, start, size, status, rank, nranks, errmsg)
    type(gts_partition), intent(in) :: partition
    integer, intent(out) :: start(:), size(:)
    integer, intent(out) :: status
    integer, intent(out), optional :: rank, nranks
    character(*), intent(out), optional :: errmsg
    integer(c_int64_t) :: s(3), n(3)
    integer(c_int32_t) :: r, nr, ndim
    if (.not. created(partition%p, 'partition', status, errmsg)) return
    call gtsf_partition_subdomain(partition%p, s, n, r, nr, ndim)
    if (ubound(start, 1) /= ndim .or. ubound(size, 1) /= ndim) then
      call fail('start, size: sized unlike the partition''s split dimensions', status, errmsg)
      return
    end if
    start = int(s(1:ndim))
    size = int(n(1:ndim))
    if (present(rank)) rank = int(r)
    if (present(nranks)) nranks = int(nr)
    status = GTS_OK
    if (present(errmsg)) errmsg = ''
  end subroutine gts_subdomain

  ! The exchange of `fields`' halos over the partition (collective: every
  ! rank calls it with its own fields of the same dtypes, dims and halos).
  subroutine gts_exchange_create(exchange, partition, fields, status, errmsg)
    type(gts_exchange), intent(inout) :: exchange
    type(gts_partition), intent(in) :: partition
    type(gts_field), intent(in) :: fields(:)
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: handles(size(fields)), out
    type(gts_error_c) :: err
    integer :: f
    if (.not. created(partition%p, 'partition', status, errmsg)) return
    do f = 1, size(fields)
      handles(f) = gts_handle_of(fields(f))
    end do
    call gts_status_finish(gtsf_exchange_create(partition%p, int(size(fields), c_int32_t), &
                                                handles, out, err), err, status, errmsg)
    if (status /= GTS_OK) return
    call gts_exchange_destroy(exchange)
    exchange%p = out
  end subroutine gts_exchange_create

  ! Starts an exchange: the interior may be computed until gts_exchange_wait.
  subroutine gts_exchange_start(exchange, status, errmsg)
    type(gts_exchange), intent(in) :: exchange
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    call exchange_step(gtsf_exchange_start, exchange, status, errmsg)
  end subroutine gts_exchange_start

  ! Completes it: the halos then hold the neighbours' values.
  subroutine gts_exchange_wait(exchange, status, errmsg)
    type(gts_exchange), intent(in) :: exchange
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    call exchange_step(gtsf_exchange_wait, exchange, status, errmsg)
  end subroutine gts_exchange_wait

  ! One step of a created exchange: `step` is gtsf_exchange_start or
  ! gtsf_exchange_wait (the same interface).
  subroutine exchange_step(step, exchange, status, errmsg)
    procedure(gtsf_exchange_start) :: step
    type(gts_exchange), intent(in) :: exchange
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    if (.not. created(exchange%p, 'exchange', status, errmsg)) return
    call gts_status_finish(step(exchange%p, err), err, status, errmsg)
  end subroutine exchange_step

  ! Start, then wait.
  subroutine gts_exchange_run(exchange, status, errmsg)
    type(gts_exchange), intent(in) :: exchange
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    call gts_exchange_start(exchange, status, errmsg)
    if (status == GTS_OK) call gts_exchange_wait(exchange, status, errmsg)
  end subroutine gts_exchange_run

  ! Frees the exchange (collective). Its fields stay.
  subroutine gts_exchange_destroy(exchange)
    type(gts_exchange), intent(inout) :: exchange
    if (c_associated(exchange%p)) call gtsf_exchange_destroy(exchange%p)
    exchange%p = c_null_ptr
  end subroutine gts_exchange_destroy
end module gtstore_mpi
