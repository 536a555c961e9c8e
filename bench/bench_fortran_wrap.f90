! The cost of wrapping a Fortran array section as a gtstore storage and
! getting the storage (gts_wrap, gts_storage_of, gts_release) from Fortran,
! per array: docs/performance.md, "Fortran". Target: at most 1 us.
!   build/release/bench/bench_fortran_wrap [repeats]
program bench_fortran_wrap
  use, intrinsic :: iso_c_binding
  use gtstore
  implicit none
  real(c_double), target :: a(0:65, 0:65, 80)
  type(gts_field) :: f
  type(c_ptr) :: storage
  integer :: st, r, n, k
  integer(8) :: t0, t1, rate
  character(32) :: arg
  real(8) :: best, per
  n = 200000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  a = 0
  best = huge(best)
  do k = 1, 5
    call system_clock(t0, rate)
    do r = 1, n
      call gts_wrap(f, a(1:64:1, 1:64, 2:79), st, halo=[1, 1, 0], dims='IJK')
      storage = gts_storage_of(f)
      if (st /= GTS_OK .or. .not. c_associated(storage)) error stop 'gts_wrap failed'
      call gts_release(f)
    end do
    call system_clock(t1)
    per = real(t1 - t0, 8) / real(rate, 8) / n
    best = min(best, per)
  end do
  print '(a, f8.3, a)', 'wrap a 3-d section + get its storage + release: ', best * 1e6, ' us per array'
end program bench_fortran_wrap
