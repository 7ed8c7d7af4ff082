# The Debian package (issue 41, item 2; `make deb`, docs/adr/0026-debian-package-with-cpack.md): CPack's
# DEB generator packs the install tree of cmake/install.cmake with prefix /usr, from the build tree
# already built (nothing is compiled again). Debian's dpkg-shlibdeps computes the library
# dependencies; the maintainer scripts, conffiles, changelog and copyright are in deploy/debian.
# Writes build/gpulse_VERSION_ARCH.deb.

set(GPULSE_DEB_DIR ${PROJECT_SOURCE_DIR}/deploy/debian)
install(FILES ${GPULSE_DEB_DIR}/copyright DESTINATION share/doc/gpulse)
# Debian's changelog, compressed as the policy asks (gzip -9n: no name, no time stamp).
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/changelog.gz
  COMMAND sh -c "gzip -9nc \"$1\" > \"$2\"" sh ${GPULSE_DEB_DIR}/changelog ${PROJECT_BINARY_DIR}/changelog.gz
  DEPENDS ${GPULSE_DEB_DIR}/changelog
  VERBATIM)
add_custom_target(gpulse_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/changelog.gz)
install(FILES ${PROJECT_BINARY_DIR}/changelog.gz DESTINATION share/doc/gpulse)

execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE GPULSE_DEB_ARCH
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpulse)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # /etc/gpulse is absolute: it lands in the package, not on this machine
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "gpulse developers <gpulse@users.noreply.github.com>")
set(CPACK_DEBIAN_FILE_NAME "gpulse_${PROJECT_VERSION}_${GPULSE_DEB_ARCH}.deb")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${GPULSE_DEB_ARCH})
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${GPULSE_DEB_DIR}/conffiles ${GPULSE_DEB_DIR}/postinst ${GPULSE_DEB_DIR}/postrm)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU telemetry: record, export, collect and manage")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "gpulse reads NVIDIA GPUs through NVML, loaded at run time, and AMD and Intel
GPUs through sysfs. It records a workload's GPU timeline and energy, serves
Prometheus metrics with dcgm-exporter's names and labels, collects power
across nodes for benchmark windows and runs a node agent with DCGM's groups,
watches and job statistics. An NVML simulator (gpulse --simulate) is
included, to try every command on a machine without a GPU.")
include(CPack)
