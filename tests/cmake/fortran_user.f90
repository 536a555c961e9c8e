! A Fortran program built by CMake against the installed module gtstore.
program fortran_user
  use, intrinsic :: iso_c_binding
  use gtstore
  implicit none
  type(gts_field) :: f
  real(c_double), pointer :: u(:, :) => null()
  integer :: st
  character(GTS_ERRMSG_LEN) :: msg
  call gts_allocate(f, u, [6, 5], st, halo=[1, 1], errmsg=msg)
  if (st /= GTS_OK) then
    print '(2a)', 'gts_allocate: ', trim(msg)
    stop 1
  end if
  u = 1
  if (any(lbound(u) /= 0) .or. any(ubound(u) /= [5, 4])) stop 2
  print '(a, 2i3)', 'fortran_user: ok, bounds from', lbound(u)
  call gts_release(f)
end program fortran_user
