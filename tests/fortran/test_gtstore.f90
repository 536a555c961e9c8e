! Unit tests of the Fortran module gtstore: allocation bounds and layout,
! wrapping of sections (no copy), views, errors (status and message, never
! a stop), GPU fields on the device that plays the GPU, and round trips
! through the C API (roundtrip.c). Exits 1 on the first failed check.
program test_gtstore
  use, intrinsic :: iso_c_binding
  use gtstore
  implicit none

  interface
    integer(c_int64_t) function roundtrip_count_wrong(s) bind(c)
      import :: c_int64_t, c_ptr
      type(c_ptr), value :: s
    end function roundtrip_count_wrong
    integer(c_int) function roundtrip_make(out, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: out
      type(gts_error_c), intent(inout) :: err
    end function roundtrip_make
    subroutine roundtrip_release(s) bind(c)
      import :: c_ptr
      type(c_ptr), value :: s
    end subroutine roundtrip_release
    integer(c_int) function roundtrip_dlpack(s, out, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: s, out
      type(gts_error_c), intent(inout) :: err
    end function roundtrip_dlpack
    integer(c_int64_t) function roundtrip_storage_size() bind(c)
      import :: c_int64_t
    end function roundtrip_storage_size
  end interface

  integer :: failures = 0
  character(GTS_ERRMSG_LEN) :: msg
  integer :: st

  call test_allocation_bounds()
  call test_allocation_types_and_presets()
  call test_wrap_section()
  call test_views()
  call test_errors()
  call test_roundtrip_c()
  call test_gpu()
  if (failures > 0) then
    print '(i0, a)', failures, ' checks failed'
    stop 1
  end if
  print '(a)', 'test_gtstore: all checks passed'

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(2a)', 'FAILED: ', what
    end if
  end subroutine check

  subroutine check_ok(what)
    character(*), intent(in) :: what
    if (st /= GTS_OK) then
      failures = failures + 1
      print '(4a)', 'FAILED: ', what, ': ', trim(msg)
    end if
  end subroutine check_ok

  ! A (10, 8, 5) field with halo (2, 1, 0): bounds -1:8, 0:7, 1:5, first
  ! domain point 1, zeroed, first index contiguous (Fortran order).
  subroutine test_allocation_bounds()
    type(gts_field) :: f
    real(c_double), pointer :: u(:, :, :) => null(), d(:, :, :) => null()
    integer :: lo(3), hi(3)
    call gts_allocate(f, u, [10, 8, 5], st, halo=[2, 1, 0], errmsg=msg)
    call check_ok('allocate')
    call check(all(lbound(u) == [-1, 0, 1]), 'lbound = 1 - halo')
    call check(all(ubound(u) == [8, 7, 5]), 'ubound = shape - halo')
    call check(all(u == 0), 'zeroed')
    call check(is_contiguous(u), 'Fortran order: contiguous')
    call gts_bounds(f, lo, hi, st, errmsg=msg)
    call check_ok('bounds')
    call check(all(lo == lbound(u)) .and. all(hi == ubound(u)), 'gts_bounds')
    ! the domain: its first point is index 1 and u(1, 1, 1)
    call gts_pointer(f, d, st, domain=.true., errmsg=msg)
    call check_ok('domain pointer')
    call check(all(lbound(d) == 1) .and. all(ubound(d) == [6, 6, 5]), 'domain bounds')
    call check(c_associated(c_loc(d(1, 1, 1)), c_loc(u(1, 1, 1))), 'domain shares memory')
    d(6, 6, 5) = 3
    call check(u(6, 6, 5) == 3, 'write through the domain')
    ! an upper halo of its own
    call gts_allocate(f, u, [10, 8, 5], st, halo=[2, 1, 0], halo_upper=[0, 3, 1], errmsg=msg)
    call check_ok('allocate halo_upper')
    call gts_pointer(f, d, st, domain=.true.)
    call check(all(ubound(d) == [8, 4, 4]), 'domain of an asymmetric halo')
    call gts_release(f)
    call check(.not. gts_associated(f), 'released')
  end subroutine test_allocation_bounds

  subroutine test_allocation_types_and_presets()
    type(gts_field) :: f
    real(c_float), pointer :: r4(:, :) => null()
    integer(c_int32_t), pointer :: i4(:) => null()
    integer(c_int64_t), pointer :: i8(:, :, :, :) => null()
    logical(c_bool), pointer :: l1(:, :) => null()
    real(c_double), pointer :: u(:, :, :) => null()
    integer(c_intptr_t) :: address
    call gts_allocate(f, r4, [3, 4], st, errmsg=msg)
    call check_ok('real32')
    call check(all(shape(r4) == [3, 4]) .and. all(lbound(r4) == 1), 'real32 shape')
    call gts_allocate(f, i4, [7], st, halo=[3], errmsg=msg)
    call check_ok('int32')
    call check(lbound(i4, 1) == -2 .and. ubound(i4, 1) == 4, 'int32 bounds')
    call gts_allocate(f, i8, [2, 3, 4, 5], st, dims='IJK0', errmsg=msg)
    call check_ok('int64 with a data dimension')
    call gts_allocate(f, l1, [4, 4], st, errmsg=msg)
    call check_ok('logical(c_bool)')
    call check(.not. logical(any(l1)), 'logical zeroed: .false.')
    ! gt:cpu_kfirst: K contiguous; its aligned point (the first domain point)
    ! on a multiple of 64 bytes
    call gts_allocate(f, u, [9, 7, 6], st, halo=[3, 3, 0], dims='IJK', preset='gt:cpu_kfirst', &
                      alignment=64, errmsg=msg)
    call check_ok('preset gt:cpu_kfirst')
    call check(all(lbound(u) == [-2, -2, 1]), 'preset bounds')
    call check(.not. is_contiguous(u(:, 1, 1)) .and. is_contiguous(u(1, 1, :)), &
               'gt:cpu_kfirst: K contiguous')
    address = transfer(c_loc(u(1, 1, 1)), address)
    call check(modulo(address, 64_c_intptr_t) == 0, 'first domain point aligned')
    ! an aligned index given in Fortran indices
    call gts_allocate(f, u, [9, 7, 6], st, halo=[3, 3, 0], dims='IJK', preset='gt:cpu_kfirst', &
                      alignment=64, aligned_index=[1, 1, 3], errmsg=msg)
    call check_ok('aligned_index')
    address = transfer(c_loc(u(1, 1, 3)), address)
    call check(modulo(address, 64_c_intptr_t) == 0, 'aligned_index point aligned')
    call gts_release(f)
  end subroutine test_allocation_types_and_presets

  ! A strided section of an array with lower bounds 0 wraps without a copy.
  subroutine test_wrap_section()
    real(c_double), target :: a(0:9, 5, 4)
    integer(c_int32_t), target :: b(3, 4)
    type(gts_field) :: f, g
    real(c_double), pointer :: p(:, :, :) => null(), d(:, :, :) => null(), p2(:, :) => null()
    integer(c_int32_t), pointer :: q(:, :) => null()
    integer :: i, j, k
    do k = 1, 4
      do j = 1, 5
        do i = 0, 9
          a(i, j, k) = 100 * i + 10 * j + k
        end do
      end do
    end do
    call gts_wrap(f, a(1:9:2, :, 2:3), st, halo=[1, 0, 0], errmsg=msg)
    call check_ok('wrap a(1:9:2, :, 2:3)')
    call gts_pointer(f, p, st, errmsg=msg)
    call check_ok('pointer of the wrapped section')
    call check(all(lbound(p) == [0, 1, 1]) .and. all(ubound(p) == [4, 5, 2]), 'wrapped bounds')
    call check(c_associated(c_loc(p(0, 1, 1)), c_loc(a(1, 1, 2))), 'no copy: same address')
    call check(all(p == a(1:9:2, :, 2:3)), 'wrapped values')
    p(3, 5, 2) = -1
    call check(a(7, 5, 3) == -1, 'a write through the storage reaches the array')
    call gts_pointer(f, d, st, domain=.true., errmsg=msg)
    call check(all(shape(d) == [3, 5, 2]) .and. d(1, 1, 1) == a(3, 1, 2), 'wrapped domain')
    ! the C API sees the same elements and strides
    call gts_wrap(g, b(3:1:-1, 2:), st, errmsg=msg)
    call check_ok('wrap a reversed section')
    call gts_pointer(g, q, st, errmsg=msg)
    call check_ok('pointer of a reversed section')
    b = reshape([(i, i = 1, 12)], [3, 4])
    call check(all(q == b(3:1:-1, 2:)), 'negative strides')
    ! a GPU preset lends its layout (I contiguous, as here) and alignment to
    ! host memory, which stays host memory
    call gts_wrap(g, a(1:2, 1:2, 1:2), st, preset='gt:gpu', errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'multiple of 256') > 0, &
               'the preset''s alignment is checked: ' // trim(msg))
    call gts_wrap(g, a(1:2, 1:2, 1:2), st, preset='gt:gpu', alignment=8, errmsg=msg)
    call check_ok('wrap with a GPU preset')
    call gts_pointer(g, p, st, errmsg=msg)
    call check(st == GTS_OK .and. c_associated(c_loc(p(1, 1, 1)), c_loc(a(1, 1, 1))), &
               'a GPU preset wraps host memory as host memory')
    call gts_wrap(g, a(1:2, 1:2, 1:2), st, preset='gt:cpu_kfirst', dims='IJK', errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'layout') > 0, &
               'K contiguous asked of an I-contiguous array: ' // trim(msg))
    ! an empty section is an empty storage, not an error
    call gts_wrap(g, a(5:4, :, 1), st, errmsg=msg)
    call check_ok('wrap an empty section')
    call gts_pointer(g, p2, st, errmsg=msg)
    call check(st == GTS_OK .and. all(shape(p2) == [0, 5]), 'empty section: shape (0, 5)')
    call gts_release(f)
    call gts_release(g)
    call check(a(7, 5, 3) == -1, 'the array outlives its field')
  end subroutine test_wrap_section

  subroutine test_views()
    type(gts_field) :: f, v
    real(c_double), pointer :: u(:, :) => null(), s(:, :) => null()
    integer :: i, j
    call gts_allocate(f, u, [8, 6], st, halo=[2, 1], errmsg=msg)
    do j = lbound(u, 2), ubound(u, 2)
      do i = lbound(u, 1), ubound(u, 1)
        u(i, j) = 10 * i + j
      end do
    end do
    call gts_view(f, v, st, errmsg=msg)
    call check_ok('view')
    call gts_view_slice(v, 1, 0, 5, st, step=2, errmsg=msg)
    call check_ok('slice 0:5:2')
    call gts_pointer(v, s, st, errmsg=msg)
    ! 0, 2, 4: index 0 is halo, so the slice keeps a lower halo of 1 (bounds 0:2)
    call check(all(lbound(s) == [0, 0]) .and. all(ubound(s) == [2, 5]), 'slice bounds')
    call check(all(s == u(0:5:2, :)), 'slice values')
    call gts_view_domain(v, st, errmsg=msg)
    call gts_pointer(v, s, st, errmsg=msg)
    call check(all(lbound(s) == 1) .and. all(s == u(2:5:2, 1:4)), 'domain of the slice')
    call gts_release(f)
    ! the view keeps the memory
    call check(s(1, 1) == 21, 'a view keeps the memory after its field is released')
    call gts_release(v)
  end subroutine test_views

  subroutine test_errors()
    type(gts_field) :: f, empty
    real(c_double), pointer :: u(:, :) => null()
    real(c_float), pointer :: r(:, :) => null()
    real(c_double), pointer :: u3(:, :, :) => null()
    call gts_allocate(f, u, [4, 4], st, preset='no such preset', errmsg=msg)
    call check(st == GTS_ENOTFOUND .and. index(msg, 'no such preset') > 0, 'unknown preset')
    call check(.not. associated(u) .and. .not. gts_associated(f), 'nothing on failure')
    call gts_allocate(f, u, [4, 4], st, halo=[3, 3], errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'halo') > 0, 'halo wider than the shape')
    call gts_allocate(f, u, [4, 4, 4], st, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'shape') > 0, 'shape of another rank')
    call gts_allocate(f, u, [4, -1], st, errmsg=msg)
    call check(st < 0 .and. len_trim(msg) > 0, 'negative extent')
    call gts_allocate(f, u, [4, 4], st, halo=[1, 1, 1], errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'halo') > 0, 'halo of another rank')
    call gts_allocate(f, u, [4, 4], st, dims='IJK', errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'dims') > 0, 'dims of another rank')
    call gts_allocate(f, u, [4, 4], st, halo=[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], &
                      errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'halo: 16') > 0, 'more halo entries than a rank')
    call gts_allocate(f, u, [4, 4], st, preset=repeat('x', 100), errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'too long') > 0, 'preset name too long')
    call gts_allocate(f, u, [4, 4], st, alignment=-8, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'alignment') > 0, 'negative alignment: ' // &
               trim(msg))
    ! said in the caller's terms: Fortran indices, dimensions from 1
    call gts_allocate(f, u, [4, 4], st, halo=[1, 0], aligned_index=[1, 5], errmsg=msg)
    call check(st == GTS_EINVAL .and. &
               index(msg, 'aligned_index: 5 in dimension 2 is outside the field''s bounds 1:4') > 0, &
               'aligned index past the end: ' // trim(msg))
    call gts_allocate(f, u, [4, 4], st, halo=[1, 0], aligned_index=[-1, 1], errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'aligned_index: -1 in dimension 1') > 0 .and. &
               index(msg, 'bounds 0:3') > 0, 'aligned index before the halo: ' // trim(msg))
    call gts_allocate(f, u, [4, 4], st, halo=[1, 0], aligned_index=[0, 4], errmsg=msg)
    call check_ok('aligned index at the first halo point and the last point')
    call gts_allocate(f, u, [4, 4], st, halo=[-1, 0], aligned_index=[1, 1], errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'halo') > 0, &
               'a bad halo is named, not the aligned index it shifts: ' // trim(msg))
    call gts_allocate(f, u, [4, 4], st, device=7, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'device: 7 is neither GTS_CPU (0) nor GTS_GPU (1)') &
               > 0, 'device of no kind: ' // trim(msg))
    call gts_allocate(f, u, [4, 4], st, errmsg=msg)
    call check_ok('allocate')
    call gts_pointer(f, r, st, errmsg=msg)
    call check(st == GTS_ETYPE .and. index(msg, 'float32') > 0 .and. .not. associated(r), &
               'pointer of another type')
    call gts_pointer(f, u3, st, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'rank') > 0, 'pointer of another rank')
    call gts_pointer(empty, u, st, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'not allocated') > 0, 'empty field')
    call gts_view_slice(f, 3, 1, 2, st, errmsg=msg)
    call check(st == GTS_EBOUNDS .and. index(msg, 'dim') > 0, 'slice of a dimension too far')
    call gts_view_slice(f, 1, 1, 9, st, errmsg=msg)
    call check(st == GTS_EBOUNDS, 'slice past the end')
    call gts_view_slice(f, 1, 0, 2, st, errmsg=msg)
    call check(st == GTS_EBOUNDS .and. index(msg, 'first: 0') > 0, 'slice before the start')
    call gts_sync(f, 7, st, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'side') > 0, 'sync to no side')
    call gts_sync(empty, GTS_HOST, st)
    call check(st == GTS_EINVAL, 'status without errmsg')
    call gts_release(f)
    call gts_release(empty)
  end subroutine test_errors

  ! Fortran writes, C reads through the C API; C writes, Fortran reads.
  subroutine test_roundtrip_c()
    type(gts_field) :: f, v
    real(c_double), pointer :: u(:, :, :) => null(), w(:, :, :) => null()
    integer(c_int8_t), allocatable, target :: storage(:)
    type(gts_error_c) :: err
    integer :: i, j, k
    call gts_allocate(f, u, [7, 6, 3], st, halo=[2, 1, 0], preset='gt:cpu_kfirst', errmsg=msg)
    call check_ok('allocate for C')
    do k = lbound(u, 3), ubound(u, 3)
      do j = lbound(u, 2), ubound(u, 2)
        do i = lbound(u, 1), ubound(u, 1)
          u(i, j, k) = 10000 * i + 100 * j + k
        end do
      end do
    end do
    call check(roundtrip_count_wrong(gts_storage_of(f)) == 0, 'C reads what Fortran wrote')
    ! through DLPack: exported, imported as a consumer would, seen again in Fortran
    allocate (storage(roundtrip_storage_size()))
    call check(roundtrip_dlpack(gts_storage_of(f), c_loc(storage), err) == 0, 'DLPack round trip')
    call check(roundtrip_count_wrong(c_loc(storage)) == 0, 'C reads the DLPack import')
    call gts_view_storage(c_loc(storage), v, st, errmsg=msg)
    call check_ok('view of the DLPack import')
    call roundtrip_release(c_loc(storage))
    call gts_pointer(v, w, st, errmsg=msg)
    call check(all(lbound(w) == lbound(u)) .and. all(ubound(w) == ubound(u)), 'DLPack bounds')
    call check(c_associated(c_loc(w(1, 1, 1)), c_loc(u(1, 1, 1))), 'DLPack: the same memory')
    call gts_release(v)
    u(1, 1, 1) = 0
    call check(roundtrip_count_wrong(gts_storage_of(f)) == 1, 'C sees one wrong value')
    call gts_release(f)
    call check(roundtrip_make(c_loc(storage), err) == 0, 'C makes a storage')
    call gts_view_storage(c_loc(storage), v, st, errmsg=msg)
    call check_ok('view of a C storage')
    call roundtrip_release(c_loc(storage)) ! the view holds its own reference
    call gts_pointer(v, u, st, errmsg=msg)
    call check_ok('pointer of a C storage')
    call check(all(lbound(u) == [0, 0, 1]) .and. all(ubound(u) == [5, 4, 4]), 'C storage bounds')
    call check(u(0, 0, 1) == 1 .and. u(5, 4, 4) == 50404, 'C storage values')
    call gts_release(v)
  end subroutine test_roundtrip_c

  ! A GPU field (GTSTORE_GPU=emulated or the fake CUDA driver play the GPU,
  ! as the test's environment chooses): host pointer, sync, device address;
  ! then that device address wrapped as device memory.
  subroutine test_gpu()
    type(gts_field) :: f, g
    real(c_double), pointer :: u(:, :) => null(), dev(:, :) => null(), p(:, :) => null()
    type(c_ptr) :: address, wrapped
    integer :: state
    call gts_allocate(f, u, [16, 8], st, halo=[1, 1], device=GTS_GPU, errmsg=msg)
    if (st /= GTS_OK) then
      print '(2a)', 'no GPU field (skipping the GPU checks): ', trim(msg)
      return
    end if
    call check(associated(u) .and. all(lbound(u) == 0), 'GPU field: host side with bounds')
    call gts_prepare_write(f, GTS_HOST, st, errmsg=msg)
    call check_ok('prepare_write host')
    u = 7
    call gts_sync_state(f, state, st)
    call check(state == GTS_SYNC_HOST_DIRTY, 'host ahead after a host write')
    call gts_sync(f, GTS_DEVICE, st, errmsg=msg)
    call check_ok('sync to the device')
    call gts_sync_state(f, state, st)
    call check(state == GTS_SYNC_CLEAN, 'clean after the sync')
    call gts_device_pointer(f, address, st, errmsg=msg)
    call check_ok('device pointer')
    call check(c_associated(address) .and. .not. c_associated(address, c_loc(u(0, 0))), &
               'device address is not the host side')
    ! a device array as OpenACC's host_data hands it: the address is never
    ! dereferenced on the host
    call c_f_pointer(address, dev, [16, 8])
    call gts_wrap(g, dev, st, halo=[1, 1], device=GTS_GPU, errmsg=msg)
    call check_ok('wrap device memory')
    call gts_device_pointer(g, wrapped, st, errmsg=msg)
    call check(c_associated(wrapped, address), 'wrapped device memory keeps its address')
    call gts_pointer(g, p, st, errmsg=msg)
    call check(st == GTS_EINVAL .and. index(msg, 'device only') > 0 .and. .not. associated(p), &
               'no host pointer to device memory')
    call gts_release(g)
    call gts_release(f)
  end subroutine test_gpu
end program test_gtstore
