/* The three MPI calls examples/fortran/diffusion.f90 needs beside gtstore:
 * the Open MPI that this repository's tests use (a PyPI wheel) has no
 * Fortran bindings (no `use mpi`, no mpi_f08), so the example reaches
 * MPI_Init, MPI_COMM_WORLD's Fortran handle and MPI_Finalize through C. A
 * model built with an MPI's Fortran bindings calls them itself and passes
 * MPI_COMM_WORLD (or comm%MPI_VAL of mpi_f08) to gtstore_mpi. */
#include <mpi.h>

int example_mpi_init(void)
{
    return MPI_Init(NULL, NULL);
}

int example_comm_world(void)
{
    return (int)MPI_Comm_c2f(MPI_COMM_WORLD);
}

int example_mpi_finalize(void)
{
    return MPI_Finalize();
}
