! The module gtstore_mpi_f08: gts_partition_create for an mpi_f08
! communicator (type(MPI_Comm)), beside gtstore_mpi's integer handle. Built
! where Meson finds an MPI whose Fortran side has mpi_f08 (docs/fortran.md,
! "MPI"); `use gtstore_mpi_f08` gives all of gtstore_mpi as well.
module gtstore_mpi_f08
  use mpi_f08, only: MPI_Comm
  use gtstore_mpi
  implicit none
  private
  public :: gts_partition, gts_exchange, gts_partition_create, gts_partition_free, gts_subdomain
  public :: gts_exchange_create, gts_exchange_start, gts_exchange_wait, gts_exchange_run
  public :: gts_exchange_destroy
  interface gts_partition_create
    module procedure partition_create_f08
  end interface gts_partition_create
contains
  ! The partition over the ranks of `comm`: its handle is comm%MPI_VAL.
  subroutine partition_create_f08(partition, comm, global_shape, status, process_grid, &
                                  periodic, labels, errmsg)
    type(gts_partition), intent(inout) :: partition
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: global_shape(:)
    integer, intent(out) :: status
    integer, intent(in), optional :: process_grid(:)
    logical, intent(in), optional :: periodic(:)
    character(*), intent(in), optional :: labels
    character(*), intent(out), optional :: errmsg
    call gts_partition_create(partition, comm%MPI_VAL, global_shape, status, &
                              process_grid=process_grid, periodic=periodic, labels=labels, &
                              errmsg=errmsg)
  end subroutine partition_create_f08
end module gtstore_mpi_f08
