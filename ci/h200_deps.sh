# Sourced on the GPU test machine (no network, no RapidCheck): unpacks the Debian packages
# carried in .debs/ (fetched here with `apt-get download`) into /tmp/fcdeps and points CMake
# at them. Packages the machine already has are left alone by CMake's search order.
FCDEPS=/tmp/fcdeps
if [ -d .debs ]; then
  mkdir -p "$FCDEPS"
  for deb in .debs/*.deb; do dpkg -x "$deb" "$FCDEPS"; done
  export CMAKE_PREFIX_PATH="$FCDEPS/usr:$FCDEPS/usr/lib/x86_64-linux-gnu/cmake:$FCDEPS/usr/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$FCDEPS/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$FCDEPS/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$FCDEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0
