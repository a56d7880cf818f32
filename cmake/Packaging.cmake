# Packaging: install() rules and CPack settings for the memkv Debian package
# (docs/packaging.md). `cmake --build build && (cd build && cpack -G DEB)`
# writes memkv_<version>_<arch>.deb and memkv-dbgsym_<version>_<arch>.ddeb.
#
# Only the memkv binary, its systemd unit, the default config and the docs are
# installed: tests, benchmarks and fuzzers have no install() rules, and none
# may gain one (tests/package/package_test.sh checks the package's contents).
#
# Paths are those of the package, for CPack: `cmake --install` elsewhere than
# into a staging root still writes the unit and config to absolute paths.

set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

install(TARGETS memkv RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/memkv.service DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/config.yaml DESTINATION /etc/memkv)
file(GLOB MEMKV_DOC_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${MEMKV_DOC_FILES} DESTINATION share/doc/memkv)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memkv)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "MemKV developers")
set(CPACK_PACKAGE_CONTACT "MemKV developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "store for LLM KV-cache blocks")
set(CPACK_PACKAGE_DESCRIPTION
    "MemKV keeps the KV-cache blocks of LLM inference servers in a DRAM tier\n"
    "backed by drives, and serves them to clients over RDMA or TCP. This\n"
    "package installs the memkv server and command-line client, a systemd\n"
    "unit (not enabled on install) and a default /etc/memkv/config.yaml.")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})

set(CPACK_DEBIAN_PACKAGE_NAME memkv)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "MemKV developers")
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies come from dpkg-shlibdeps (dpkg-dev; it needs `file`).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libibverbs finds NICs through provider plugins it dlopens (mlx5, rxe, ...),
# which dpkg-shlibdeps cannot see.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS ibverbs-providers)
# The RelWithDebInfo binary is ~60 MB, nearly all of it DWARF. CPack strips it
# for the package and keeps the debug info, keyed by build ID, in
# memkv-dbgsym_<version>_<arch>.ddeb (/usr/lib/debug/.build-id/...), which gdb
# and debuginfod find on a host where it is installed.
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
# conffiles: dpkg keeps an operator's edits of /etc/memkv/config.yaml on
# upgrade. The maintainer scripts only talk to systemd (daemon-reload, stop on
# remove, restart on upgrade); the unit's DynamicUser=yes needs no account.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
