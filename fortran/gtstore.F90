! The Fortran module gtstore: gtstore's storages from Fortran (docs/fortran.md).
!
! Fields are allocated with the bounds Fortran models index them with (the
! first domain point is index 1, the halo 1-h .. 0), any Fortran array is
! wrapped without a copy through its C descriptor (ISO_Fortran_binding.h),
! and views come back as Fortran pointers. Every procedure returns a status
! (GTS_OK = 0, else a negative gtstore code) and, where errmsg is given, the
! library's message; none stops the program.
!
! The C side (gtsf.h) only converts; libgtstore decides every number.
module gtstore
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! Status codes (gtstore/error.h).
  integer, parameter, public :: GTS_OK = 0, GTS_EINVAL = -1, GTS_ETYPE = -2, &
       GTS_ENOTFOUND = -3, GTS_EOVERFLOW = -4, GTS_ENOMEM = -5, GTS_ERANGE = -6, &
       GTS_EEXIST = -7, GTS_EBOUNDS = -8, GTS_EREADONLY = -9, GTS_ENOTSUP = -10
  ! Devices (gtstore/preset.h), sides of a GPU field and its sync states
  ! (gtstore/sync.h).
  integer, parameter, public :: GTS_CPU = 0, GTS_GPU = 1
  integer, parameter, public :: GTS_HOST = 0, GTS_DEVICE = 1
  integer, parameter, public :: GTS_SYNC_CLEAN = 0, GTS_SYNC_HOST_DIRTY = 1, &
       GTS_SYNC_DEVICE_DIRTY = 2
  integer, parameter, public :: GTS_ERRMSG_LEN = 256

  ! A field: a handle that owns a storage (one reference to its memory)
  ! until gts_release. Fortran pointers set by gts_allocate or gts_pointer
  ! stay valid while any field of the same memory is held.
  type, public :: gts_field
    type(c_ptr), private :: p = c_null_ptr
  end type gts_field

  ! gtsf_options and gts_error of the C side (keep in step with gtsf.h).
  integer, parameter :: NAME_SIZE = 64, MAX_RANK = 15
  type, bind(c) :: gtsf_options
    character(kind=c_char) :: preset(NAME_SIZE) = c_null_char
    character(kind=c_char) :: dims(NAME_SIZE) = c_null_char
    integer(c_int32_t) :: nhalo_lower = 0, nhalo_upper = 0, naligned_index = 0
    integer(c_int32_t) :: device = -1, readonly = 0
    integer(c_int64_t) :: alignment = 0
    ! read only as far as the counts say: not initialized (a wrap costs less)
    integer(c_int64_t) :: halo_lower(MAX_RANK), halo_upper(MAX_RANK)
    integer(c_int64_t) :: aligned_index(MAX_RANK)
    character(kind=c_char) :: invalid(NAME_SIZE * 2) = c_null_char
  end type gtsf_options
  ! The C side writes the message on failure only, and only then is it read.
  type, bind(c), public :: gts_error_c
    integer(c_int) :: code = 0
    character(kind=c_char) :: message(GTS_ERRMSG_LEN)
  end type gts_error_c

  public :: gts_allocate, gts_wrap, gts_release, gts_associated
  public :: gts_pointer, gts_view, gts_view_domain, gts_view_slice, gts_bounds
  public :: gts_sync, gts_prepare_write, gts_sync_state, gts_device_pointer
  public :: gts_storage_of, gts_view_storage, gts_handle_of, gts_from_handle
  public :: gts_status_finish

  ! Allocates a field and points a Fortran pointer of its type and rank at it.
  interface gts_allocate
    module procedure allocate_r4, allocate_r8, allocate_i4, allocate_i8, allocate_l1
  end interface gts_allocate
  ! Points a Fortran pointer at a field (all of it, or its domain).
  interface gts_pointer
    module procedure pointer_r4, pointer_r8, pointer_i4, pointer_i8, pointer_l1
  end interface gts_pointer

  interface
    integer(c_int) function gtsf_wrap(array, options, out, err) bind(c)
      import :: c_int, c_ptr, gtsf_options, gts_error_c
      type(*), intent(in) :: array(..)
      type(gtsf_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      type(gts_error_c), intent(inout) :: err
    end function gtsf_wrap
    subroutine gtsf_release(field) bind(c)
      import :: c_ptr
      type(c_ptr), value :: field
    end subroutine gtsf_release
    integer(c_int) function gtsf_view(field, out, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: field
      type(c_ptr), intent(out) :: out
      type(gts_error_c), intent(inout) :: err
    end function gtsf_view
    integer(c_int) function gtsf_domain(field, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: field
      type(gts_error_c), intent(inout) :: err
    end function gtsf_domain
    integer(c_int) function gtsf_slice(field, dim, first, last, step, err) bind(c)
      import :: c_int, c_int32_t, c_int64_t, c_ptr, gts_error_c
      type(c_ptr), value :: field
      integer(c_int32_t), value :: dim
      integer(c_int64_t), value :: first, last, step
      type(gts_error_c), intent(inout) :: err
    end function gtsf_slice
    integer(c_int) function gtsf_shape(field, shape, halo_lower, halo_upper, ndim, err) bind(c)
      import :: c_int, c_int32_t, c_int64_t, c_ptr, gts_error_c
      type(c_ptr), value :: field
      integer(c_int64_t), intent(out) :: shape(*), halo_lower(*), halo_upper(*)
      integer(c_int32_t), intent(out) :: ndim
      type(gts_error_c), intent(inout) :: err
    end function gtsf_shape
    integer(c_int) function gtsf_sync(field, side, err) bind(c)
      import :: c_int, c_int32_t, c_ptr, gts_error_c
      type(c_ptr), value :: field
      integer(c_int32_t), value :: side
      type(gts_error_c), intent(inout) :: err
    end function gtsf_sync
    integer(c_int) function gtsf_prepare_write(field, side, err) bind(c)
      import :: c_int, c_int32_t, c_ptr, gts_error_c
      type(c_ptr), value :: field
      integer(c_int32_t), value :: side
      type(gts_error_c), intent(inout) :: err
    end function gtsf_prepare_write
    integer(c_int) function gtsf_sync_state(field, state, err) bind(c)
      import :: c_int, c_int32_t, c_ptr, gts_error_c
      type(c_ptr), value :: field
      integer(c_int32_t), intent(out) :: state
      type(gts_error_c), intent(inout) :: err
    end function gtsf_sync_state
    integer(c_int) function gtsf_device_pointer(field, out, err) bind(c)
      import :: c_int, c_ptr, gts_error_c
      type(c_ptr), value :: field
      type(c_ptr), intent(out) :: out
      type(gts_error_c), intent(inout) :: err
    end function gtsf_device_pointer
  end interface

contains

  ! The status of a call, and its message where the caller asked for it
  ! (blank on success). Public for the module gtstore_mpi.
  subroutine gts_status_finish(rc, err, status, errmsg)
    integer(c_int), intent(in) :: rc
    type(gts_error_c), intent(in) :: err
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    integer :: i
    status = int(rc)
    if (.not. present(errmsg)) return
    errmsg = ''
    if (rc == 0) return
    do i = 1, min(len(errmsg), GTS_ERRMSG_LEN)
      if (err%message(i) == c_null_char) exit
      errmsg(i:i) = err%message(i)
    end do
  end subroutine gts_status_finish

  ! A Fortran-side failure (a field not allocated, an argument too long).
  subroutine fail(code, message, status, errmsg)
    integer, intent(in) :: code
    character(*), intent(in) :: message
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    status = code
    if (present(errmsg)) errmsg = message
  end subroutine fail

  ! A name into a NUL-terminated C string; .false. if it does not fit.
  logical function to_c(name, out)
    character(*), intent(in) :: name
    character(kind=c_char), intent(out) :: out(NAME_SIZE)
    integer :: i, n
    n = len_trim(name)
    to_c = n < NAME_SIZE
    out = c_null_char
    if (.not. to_c) return
    do i = 1, n
      out(i) = name(i:i)
    end do
  end function to_c

  ! The optional arguments of gts_allocate and gts_wrap into gtsf_options.
  ! An argument that does not fit is described in o%invalid, which the C
  ! side returns as GTS_EINVAL (after nullifying the caller's pointer).
  subroutine make_options(o, preset, dims, halo, halo_upper, aligned_index, device, readonly, &
                          alignment)
    type(gtsf_options), intent(out) :: o
    character(*), intent(in), optional :: preset, dims
    integer, intent(in), optional :: halo(:), halo_upper(:), aligned_index(:)
    integer, intent(in), optional :: device, alignment
    logical, intent(in), optional :: readonly
    if (present(preset)) then
      if (.not. to_c(preset, o%preset)) call invalid('preset: "' // trim(preset) // '" is too long')
    end if
    if (present(dims)) then
      if (.not. to_c(dims, o%dims)) call invalid('dims: "' // trim(dims) // '" is too long')
    end if
    if (present(halo)) call copy('halo', halo, o%nhalo_lower, o%halo_lower)
    if (present(halo_upper)) call copy('halo_upper', halo_upper, o%nhalo_upper, o%halo_upper)
    if (present(aligned_index)) &
      call copy('aligned_index', aligned_index, o%naligned_index, o%aligned_index)
    if (present(device)) o%device = device
    if (present(alignment)) o%alignment = alignment
    if (present(readonly)) then
      if (readonly) o%readonly = 1
    end if
  contains
    subroutine copy(name, values, n, out)
      character(*), intent(in) :: name
      integer, intent(in) :: values(:)
      integer(c_int32_t), intent(out) :: n
      integer(c_int64_t), intent(inout) :: out(MAX_RANK)
      character(12) :: count
      n = size(values)
      if (n > MAX_RANK) then
        write (count, '(i0)') n
        call invalid(name // ': ' // trim(count) // ' entries, more than any Fortran rank')
        n = 0
        return
      end if
      out(1:n) = values
    end subroutine copy
    subroutine invalid(message)
      character(*), intent(in) :: message
      integer :: i
      if (o%invalid(1) /= c_null_char) return
      do i = 1, min(len(message), size(o%invalid) - 1)
        o%invalid(i) = message(i:i)
      end do
    end subroutine invalid
  end subroutine make_options

  logical function gts_associated(field)
    type(gts_field), intent(in) :: field
    gts_associated = c_associated(field%p)
  end function gts_associated

  ! Whether `field` holds a storage; else the status says so.
  logical function held(field, status, errmsg)
    type(gts_field), intent(in) :: field
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    held = c_associated(field%p)
    if (.not. held) call fail(GTS_EINVAL, 'field: not allocated (no gts_allocate, gts_wrap or ' // &
                              'gts_view made it, or it was released)', status, errmsg)
  end function held

  ! Wraps `array` (any type gtstore stores, any rank, any section, any
  ! bounds) without a copy: `field`'s index 0 is the array's first element.
  ! The array must be a target or a pointer, and outlive the field. It is
  ! host memory unless device=GTS_GPU: then its address is a device address
  ! (inside !$acc host_data use_device(array), or a CUDA Fortran device
  ! array). A preset lends its layout and alignment, which are checked.
  subroutine gts_wrap(field, array, status, dims, halo, halo_upper, preset, alignment, device, &
                      readonly, errmsg)
    type(gts_field), intent(inout) :: field
    type(*), target, intent(in) :: array(..)
    integer, intent(out) :: status
    character(*), intent(in), optional :: dims, preset
    integer, intent(in), optional :: halo(:), halo_upper(:), alignment, device
    logical, intent(in), optional :: readonly
    character(*), intent(out), optional :: errmsg
    type(gtsf_options) :: o
    type(gts_error_c) :: err
    type(c_ptr) :: out
    call make_options(o, preset=preset, dims=dims, halo=halo, halo_upper=halo_upper, &
                      alignment=alignment, device=device, readonly=readonly)
    call gts_status_finish(gtsf_wrap(array, o, out, err), err, status, errmsg)
    if (status == GTS_OK) call replace(field, out)
  end subroutine gts_wrap

  ! A field now holding `p`: the storage it held before is released.
  subroutine replace(field, p)
    type(gts_field), intent(inout) :: field
    type(c_ptr), intent(in) :: p
    if (c_associated(field%p)) call gtsf_release(field%p)
    field%p = p
  end subroutine replace

  ! Drops the field's storage (its memory is freed with the last field or
  ! view of it); the field is then empty. An empty field is left as it is.
  subroutine gts_release(field)
    type(gts_field), intent(inout) :: field
    call replace(field, c_null_ptr)
  end subroutine gts_release

  ! A new field viewing all of `field`'s memory (views never copy).
  subroutine gts_view(field, view, status, errmsg)
    type(gts_field), intent(in) :: field
    type(gts_field), intent(inout) :: view
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    type(c_ptr) :: out
    if (.not. held(field, status, errmsg)) return
    call gts_status_finish(gtsf_view(field%p, out, err), err, status, errmsg)
    if (status == GTS_OK) call replace(view, out)
  end subroutine gts_view

  ! The view becomes its domain (no halo): its first point is index 1.
  subroutine gts_view_domain(view, status, errmsg)
    type(gts_field), intent(inout) :: view
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    if (.not. held(view, status, errmsg)) return
    call gts_status_finish(gtsf_domain(view%p, err), err, status, errmsg)
  end subroutine gts_view_domain

  ! The view keeps first:last:step of dimension `dim`, in its Fortran
  ! indices, as the section a(first:last:step) would; halo points selected
  ! stay halo (index 1-h .. 0 of the view).
  subroutine gts_view_slice(view, dim, first, last, status, step, errmsg)
    type(gts_field), intent(inout) :: view
    integer, intent(in) :: dim, first, last
    integer, intent(out) :: status
    integer, intent(in), optional :: step
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    integer(c_int64_t) :: s
    if (.not. held(view, status, errmsg)) return
    s = 1
    if (present(step)) s = step
    call gts_status_finish(gtsf_slice(view%p, int(dim, c_int32_t), int(first, c_int64_t), &
                                      int(last, c_int64_t), s, err), err, status, errmsg)
  end subroutine gts_view_slice

  ! The Fortran bounds of `field`: lower = 1 - lower halo, upper = lower +
  ! extent - 1 (what lbound and ubound of its pointer give).
  subroutine gts_bounds(field, lower, upper, status, errmsg)
    type(gts_field), intent(in) :: field
    integer, intent(out) :: lower(:), upper(:)
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    integer(c_int64_t) :: shape(MAX_RANK), hl(MAX_RANK), hu(MAX_RANK)
    integer(c_int32_t) :: ndim
    if (.not. held(field, status, errmsg)) return
    call gts_status_finish(gtsf_shape(field%p, shape, hl, hu, ndim, err), err, status, errmsg)
    if (status /= GTS_OK) return
    if (size(lower) /= ndim .or. size(upper) /= ndim) then
      call fail(GTS_EINVAL, 'lower, upper: sized unlike the field''s dimensions', status, errmsg)
      return
    end if
    lower = int(1 - hl(1:ndim))
    upper = int(1 - hl(1:ndim) + shape(1:ndim) - 1)
  end subroutine gts_bounds

  ! Brings side `side` (GTS_HOST or GTS_DEVICE) of a GPU field up to date:
  ! read a side after syncing to it. Nothing to do for a field with one side.
  subroutine gts_sync(field, side, status, errmsg)
    type(gts_field), intent(in) :: field
    integer, intent(in) :: side
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    if (.not. held(field, status, errmsg)) return
    call gts_status_finish(gtsf_sync(field%p, int(side, c_int32_t), err), err, status, errmsg)
  end subroutine gts_sync

  ! Before writing side `side`: brings it up to date, marks it modified.
  subroutine gts_prepare_write(field, side, status, errmsg)
    type(gts_field), intent(in) :: field
    integer, intent(in) :: side
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    if (.not. held(field, status, errmsg)) return
    call gts_status_finish(gtsf_prepare_write(field%p, int(side, c_int32_t), err), err, &
                           status, errmsg)
  end subroutine gts_prepare_write

  ! GTS_SYNC_CLEAN, GTS_SYNC_HOST_DIRTY or GTS_SYNC_DEVICE_DIRTY.
  subroutine gts_sync_state(field, state, status, errmsg)
    type(gts_field), intent(in) :: field
    integer, intent(out) :: state
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    integer(c_int32_t) :: s
    state = -1
    if (.not. held(field, status, errmsg)) return
    call gts_status_finish(gtsf_sync_state(field%p, s, err), err, status, errmsg)
    if (status == GTS_OK) state = int(s)
  end subroutine gts_sync_state

  ! The address of the field's element 0 on its device (for host memory,
  ! its host address): for CUDA Fortran or OpenACC's deviceptr.
  subroutine gts_device_pointer(field, address, status, errmsg)
    type(gts_field), intent(in) :: field
    type(c_ptr), intent(out) :: address
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    address = c_null_ptr
    if (.not. held(field, status, errmsg)) return
    call gts_status_finish(gtsf_device_pointer(field%p, address, err), err, status, errmsg)
  end subroutine gts_device_pointer

  ! The field's gts_storage, for the C API (const gts_storage *): valid
  ! while the field holds it.
  type(c_ptr) function gts_storage_of(field)
    type(gts_field), intent(in) :: field
    gts_storage_of = field%p
  end function gts_storage_of

  ! A field viewing the C API's storage at `storage` (a gts_storage *): a
  ! new reference to its memory, independent of the C side's.
  subroutine gts_view_storage(storage, view, status, errmsg)
    type(c_ptr), intent(in) :: storage
    type(gts_field), intent(inout) :: view
    integer, intent(out) :: status
    character(*), intent(out), optional :: errmsg
    type(gts_error_c) :: err
    type(c_ptr) :: out
    if (.not. c_associated(storage)) then
      call fail(GTS_EINVAL, 'storage: NULL', status, errmsg)
      return
    end if
    call gts_status_finish(gtsf_view(storage, out, err), err, status, errmsg)
    if (status == GTS_OK) call replace(view, out)
  end subroutine gts_view_storage

  ! The handle itself, for companion modules (gtstore_mpi).
  type(c_ptr) function gts_handle_of(field)
    type(gts_field), intent(in) :: field
    gts_handle_of = field%p
  end function gts_handle_of
  type(gts_field) function gts_from_handle(p)
    type(c_ptr), intent(in) :: p
    gts_from_handle%p = p
  end function gts_from_handle

  ! gts_allocate and gts_pointer (allocate_<k>, pointer_<k>) per type gtstore
  ! stores: one template, gtstore_typed.inc, included once per type.
#define GTSF_TYPE real(c_float)
#define GTSF_ALLOCATE allocate_r4
#define GTSF_POINTER pointer_r4
#include "gtstore_typed.inc"
#define GTSF_TYPE real(c_double)
#define GTSF_ALLOCATE allocate_r8
#define GTSF_POINTER pointer_r8
#include "gtstore_typed.inc"
#define GTSF_TYPE integer(c_int32_t)
#define GTSF_ALLOCATE allocate_i4
#define GTSF_POINTER pointer_i4
#include "gtstore_typed.inc"
#define GTSF_TYPE integer(c_int64_t)
#define GTSF_ALLOCATE allocate_i8
#define GTSF_POINTER pointer_i8
#include "gtstore_typed.inc"
#define GTSF_TYPE logical(c_bool)
#define GTSF_ALLOCATE allocate_l1
#define GTSF_POINTER pointer_l1
#include "gtstore_typed.inc"

end module gtstore
