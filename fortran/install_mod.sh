#!/bin/sh
# Installs the Fortran module files (gtstore.mod, gtstore_mpi.mod) that
# Meson left in the build directory into DESTDIR/PREFIX/$1: meson install
# runs this with the module directory and fortran/'s build directory.
set -eu
dest="${MESON_INSTALL_DESTDIR_PREFIX}/$1"
mkdir -p "$dest"
find "$2" -name 'gtstore*.mod' -exec install -m 644 {} "$dest" \;
