! A diffusion model in Fortran over a partitioned domain (docs/fortran.md):
!
!   tests/mpi/mpirun.sh 4 60 build/release/examples/fortran/diffusion_fortran
!
!   1. split a periodic 48 x 40 domain over the ranks (gtstore_mpi);
!   2. allocate this rank's two fields, temperature t and tracer q, with a
!      halo of 1: indices 0 .. n+1, the domain 1 .. n (gtstore);
!   3. each step: exchange both fields' halos at once (start, wait), then
!      apply the 5-point diffusion stencil to the domain;
!   4. compare the rank's block with a serial Fortran reference of the
!      whole domain (plain arrays, periodic by index arithmetic), and stop
!      with an error code where any point differs.
program diffusion
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
  integer, parameter :: nx = 48, ny = 40, steps = 20
  real(c_double), parameter :: alpha = 0.1_c_double
  type(gts_partition) :: part
  type(gts_field) :: fields(2)
  type(gts_exchange) :: exchange
  real(c_double), pointer :: t(:, :) => null(), q(:, :) => null()
  real(c_double), allocatable :: t_ref(:, :), q_ref(:, :)
  integer :: start(2), n(2), rank, nranks, st, step, i, j
  character(GTS_ERRMSG_LEN) :: msg
  real(c_double) :: error

  if (example_mpi_init() /= 0) error stop 'MPI_Init failed'
  ! 1. the partition of the ranks of MPI_COMM_WORLD
  call gts_partition_create(part, example_comm_world(), [nx, ny], st, &
                            periodic=[.true., .true.], errmsg=msg)
  call check('gts_partition_create')
  call gts_subdomain(part, start, n, st, rank=rank, nranks=nranks)
  ! 2. the fields: the subdomain plus a halo of 1 on every side
  call gts_allocate(fields(1), t, n + 2, st, halo=[1, 1], errmsg=msg)
  call check('gts_allocate t')
  call gts_allocate(fields(2), q, n + 2, st, halo=[1, 1], errmsg=msg)
  call check('gts_allocate q')
  do j = 1, n(2)
    do i = 1, n(1)
      t(i, j) = initial_t(start(1) + i - 1, start(2) + j - 1)
      q(i, j) = initial_q(start(1) + i - 1, start(2) + j - 1)
    end do
  end do
  call gts_exchange_create(exchange, part, fields, st, errmsg=msg)
  call check('gts_exchange_create')
  ! 3. the time steps
  do step = 1, steps
    call gts_exchange_start(exchange, st, errmsg=msg)
    call check('gts_exchange_start')
    call gts_exchange_wait(exchange, st, errmsg=msg)
    call check('gts_exchange_wait')
    call diffuse(t)
    call diffuse(q)
  end do
  ! 4. the serial reference
  allocate (t_ref(nx, ny), q_ref(nx, ny))
  do j = 1, ny
    do i = 1, nx
      t_ref(i, j) = initial_t(i, j)
      q_ref(i, j) = initial_q(i, j)
    end do
  end do
  do step = 1, steps
    call diffuse_serial(t_ref)
    call diffuse_serial(q_ref)
  end do
  error = max(maxval(abs(t(1:n(1), 1:n(2)) - t_ref(start(1):start(1) + n(1) - 1, &
                                                     start(2):start(2) + n(2) - 1))), &
              maxval(abs(q(1:n(1), 1:n(2)) - q_ref(start(1):start(1) + n(1) - 1, &
                                                     start(2):start(2) + n(2) - 1))))
  if (rank == 0) print '(a, i0, a, i0, a, i0, a, i0, a, es9.2)', 'diffusion on ', nranks, &
    ' ranks, ', steps, ' steps, rank 0 block ', n(1), ' x ', n(2), ': max error ', error
  if (error > 1e-12_c_double) then
    print '(a, i0, a, es9.2)', 'rank ', rank, ' differs from the serial reference by ', error
    error stop 1
  end if
  deallocate (t_ref, q_ref)
  call gts_exchange_destroy(exchange)
  call gts_release(fields(1))
  call gts_release(fields(2))
  call gts_partition_free(part)
  if (example_mpi_finalize() /= 0) error stop 'MPI_Finalize failed'

contains

  subroutine check(what)
    character(*), intent(in) :: what
    if (st /= GTS_OK) then
      print '(4a)', what, ' failed: ', trim(msg)
      error stop 1
    end if
  end subroutine check

  pure real(c_double) function initial_t(i, j)
    integer, intent(in) :: i, j
    initial_t = merge(1.0_c_double, 0.0_c_double, abs(i - nx / 2) < 6 .and. abs(j - ny / 2) < 5)
  end function initial_t

  pure real(c_double) function initial_q(i, j)
    integer, intent(in) :: i, j
    initial_q = real(modulo(7 * i + 3 * j, 11), c_double)
  end function initial_q

  ! One step on the domain 1..n of a field whose halo holds the neighbours'.
  subroutine diffuse(u)
    real(c_double), intent(inout) :: u(0:, 0:)
    real(c_double) :: new(n(1), n(2))
    do j = 1, n(2)
      do i = 1, n(1)
        new(i, j) = u(i, j) + alpha * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) &
                                       - 4 * u(i, j))
      end do
    end do
    u(1:n(1), 1:n(2)) = new
  end subroutine diffuse

  ! The same step on the whole periodic domain, in the same order.
  subroutine diffuse_serial(u)
    real(c_double), intent(inout) :: u(:, :)
    real(c_double) :: new(nx, ny)
    do j = 1, ny
      do i = 1, nx
        new(i, j) = u(i, j) + alpha * (u(modulo(i - 2, nx) + 1, j) + u(modulo(i, nx) + 1, j) &
                                       + u(i, modulo(j - 2, ny) + 1) + u(i, modulo(j, ny) + 1) &
                                       - 4 * u(i, j))
      end do
    end do
    u = new
  end subroutine diffuse_serial
end program diffusion
