! The module gtstore_mpi on any number of ranks (meson runs it on 2 and 4):
! a partition from MPI_COMM_WORLD's integer handle, an exchange of two
! fields whose halos then hold the neighbours' values (and keep theirs
! past the non-periodic edge), and errors as status and message on every
! rank alike. Exits 1 where a check fails.
program test_gtstore_mpi
  use, intrinsic :: iso_c_binding
  use gtstore
  use gtstore_mpi
  implicit none
  interface
    integer(c_int) function example_mpi_init() bind(c)
      import :: c_int
    end function example_mpi_init
    integer(c_int) function example_comm_world() bind(c)
      import :: c_int
    end function example_comm_world
    integer(c_int) function example_mpi_finalize() bind(c)
      import :: c_int
    end function example_mpi_finalize
  end interface
  integer, parameter :: nx = 12, ny = 10, h = 2
  type(gts_partition) :: part, none
  type(gts_field) :: fields(2), wide
  type(gts_exchange) :: exchange, bad
  real(c_double), pointer :: u(:, :) => null(), w(:, :) => null()
  integer(c_int64_t), pointer :: v(:, :) => null()
  integer :: start(2), n(2), rank, nranks, st, i, j, gi, gj, failures
  integer :: three(3), three_n(3)
  character(GTS_ERRMSG_LEN) :: msg
  logical :: inside

  failures = 0
  if (example_mpi_init() /= 0) error stop 'MPI_Init'
  call gts_partition_create(part, example_comm_world(), [nx, ny, 1, 1], st, errmsg=msg)
  call check(st == GTS_EINVAL .and. index(msg, 'global_shape') > 0, 'four split dimensions')
  call gts_subdomain(part, start, n, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. msg == 'partition: not created', 'subdomain of no partition')
  ! periodic in I only
  call gts_partition_create(part, example_comm_world(), [nx, ny], st, &
                            periodic=[.true., .false.], errmsg=msg)
  call check(st == GTS_OK, 'partition: ' // trim(msg))
  call gts_subdomain(part, three, three_n, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. index(msg, 'sized') > 0, 'subdomain into 3 entries')
  call gts_subdomain(part, start, n, st, rank=rank, nranks=nranks)
  call check(st == GTS_OK .and. all(n >= 1) .and. all(start >= 1), 'subdomain')
  ! two fields of different types, exchanged together
  call gts_allocate(fields(1), u, n + 2 * h, st, halo=[h, h], errmsg=msg)
  call gts_allocate(fields(2), v, n + 2 * h, st, halo=[h, h], errmsg=msg)
  do j = 1 - h, n(2) + h
    do i = 1 - h, n(1) + h
      inside = i >= 1 .and. i <= n(1) .and. j >= 1 .and. j <= n(2)
      u(i, j) = merge(real(value(start(1) + i - 1, start(2) + j - 1), c_double), -1.0_c_double, &
                      inside)
      v(i, j) = merge(int(value(start(1) + i - 1, start(2) + j - 1), c_int64_t), -1_c_int64_t, &
                      inside)
    end do
  end do
  call gts_exchange_wait(exchange, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. msg == 'exchange: not created', 'wait of no exchange')
  call gts_exchange_start(exchange, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. msg == 'exchange: not created', 'start of no exchange')
  call gts_exchange_run(exchange, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. msg == 'exchange: not created', 'run of no exchange')
  call gts_exchange_create(exchange, none, fields, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. msg == 'partition: not created', 'exchange over no partition')
  call gts_exchange_create(exchange, part, fields, st, errmsg=msg)
  call check(st == GTS_OK, 'exchange: ' // trim(msg))
  call gts_exchange_wait(exchange, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. len_trim(msg) > 0, 'wait before start')
  call gts_exchange_start(exchange, st, errmsg=msg)
  call check(st == GTS_OK, 'start: ' // trim(msg))
  call gts_exchange_start(exchange, st, errmsg=msg)
  call check(st == GTS_EINVAL .and. len_trim(msg) > 0, 'start twice')
  call gts_exchange_wait(exchange, st, errmsg=msg)
  call check(st == GTS_OK, 'wait: ' // trim(msg))
  do j = 1 - h, n(2) + h
    do i = 1 - h, n(1) + h
      gi = modulo(start(1) + i - 2, nx) + 1
      gj = start(2) + j - 1
      if (gj < 1 .or. gj > ny) then
        call check(u(i, j) == -1 .and. v(i, j) == -1, 'past the edge: kept')
      else
        call check(u(i, j) == value(gi, gj) .and. v(i, j) == value(gi, gj), 'halo value')
      end if
    end do
  end do
  call gts_exchange_run(exchange, st, errmsg=msg)
  call check(st == GTS_OK, 'run: ' // trim(msg))
  ! a halo wider than the smallest block fails on every rank, no hang
  call gts_allocate(wide, w, [nx + 2, 3 * ny], st, halo=[1, ny + 1], errmsg=msg)
  call gts_exchange_create(bad, part, [wide], st, errmsg=msg)
  call check(st /= GTS_OK .and. len_trim(msg) > 0, 'halo wider than a block')
  call gts_exchange_destroy(exchange)
  call gts_release(fields(1))
  call gts_release(fields(2))
  call gts_release(wide)
  call gts_partition_free(part)
  if (example_mpi_finalize() /= 0) error stop 'MPI_Finalize'
  if (failures > 0) then
    print '(a, i0, a, i0, a)', 'rank ', rank, ': ', failures, ' checks failed'
    error stop 1
  end if
  if (rank == 0) print '(a, i0, a)', 'test_gtstore_mpi: all checks passed on ', nranks, ' ranks'

contains

  integer function value(i, j)
    integer, intent(in) :: i, j
    value = 100 * i + j
  end function value

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      if (failures <= 5) print '(a, i0, 2a)', 'rank ', rank, ' FAILED: ', what
    end if
  end subroutine check
end program test_gtstore_mpi
