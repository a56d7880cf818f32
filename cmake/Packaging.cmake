# Packaging: install() rules and CPack settings (docs/packaging.md).
#
# `cmake --install build --prefix P` installs everything under P and nothing
# outside it:
#   P/bin/memkv                          the server and CLI       (component server)
#   P/lib/systemd/system/memkv.service   its unit                 (server)
#   P/etc/memkv/config.yaml              its config               (server)
#   P/share/doc/memkv/                   README and docs          (server)
#   P/LIBDIR/libmemkv.so.0*              the client library       (runtime)
#   P/LIBDIR/libkv_store_memkv.so        the kv_store plugin      (runtime; src/kvstore)
#   P/LIBDIR/libmemkv_preload.so         the LD_PRELOAD shim      (runtime; src/preload)
#   P/include/memkv/*.h, P/LIBDIR/libmemkv.so, P/LIBDIR/pkgconfig/memkv.pc,
#   P/LIBDIR/cmake/memkv/                for building against it  (dev)
#   P/lib/python3/dist-packages/memkv/   the Python package       (python; python/CMakeLists.txt)
# With the prefix /usr (what CPack uses for the .deb) the unit and config go
# to /lib/systemd/system and /etc, as Debian has them; the choice is made at
# install time, so `--prefix` is honoured.
#
# `cpack -G DEB` makes one package per component: memkv, libmemkv0,
# libmemkv-dev and python3-memkv, each with a -dbgsym .ddeb where it has ELF
# files (tests/package/package_test.sh checks their contents). Tests,
# benchmarks and fuzzers have no install() rules, and none may gain one.

include(CMakePackageConfigHelpers)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

# Where the system files go, decided when installing: /etc and
# /lib/systemd/system for the prefix /usr, PREFIX/etc and
# PREFIX/lib/systemd/system for any other.
install(CODE [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(memkv_root "")
  else()
    set(memkv_root "${CMAKE_INSTALL_PREFIX}")
  endif()
]] COMPONENT server)
install(CODE "
  file(INSTALL DESTINATION \"\${memkv_root}/lib/systemd/system\" TYPE FILE
       FILES \"${PROJECT_SOURCE_DIR}/packaging/memkv.service\")
  file(INSTALL DESTINATION \"\${memkv_root}/etc/memkv\" TYPE FILE
       FILES \"${PROJECT_SOURCE_DIR}/packaging/config.yaml\")
" COMPONENT server)

install(TARGETS memkv RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
file(GLOB MEMKV_DOC_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${MEMKV_DOC_FILES} DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT server)

# The library: libmemkv.so.0 (runtime); headers, the .so link, pkg-config and
# the CMake package (dev).
set(MEMKV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/memkv)
install(TARGETS memkv_shared EXPORT memkvTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
# libmemkv_preload.so, the LD_PRELOAD shim (docs/preload.md): runtime.
if(TARGET memkv_preload)
  install(TARGETS memkv_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/memkv/client.h ${PROJECT_SOURCE_DIR}/include/memkv/memkv.h
              ${PROJECT_SOURCE_DIR}/include/memkv/status.h ${PROJECT_SOURCE_DIR}/include/memkv/async.h
              ${PROJECT_SOURCE_DIR}/include/memkv/put_options.h ${PROJECT_SOURCE_DIR}/include/memkv/identity.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/memkv COMPONENT dev)
install(EXPORT memkvTargets NAMESPACE memkv:: DESTINATION ${MEMKV_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/packaging/memkvConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/memkvConfig.cmake INSTALL_DESTINATION ${MEMKV_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memkvConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memkvConfig.cmake ${PROJECT_BINARY_DIR}/memkvConfigVersion.cmake
        DESTINATION ${MEMKV_CMAKE_DIR} COMPONENT dev)
# memkv.pc finds the prefix from its own place (${pcfiledir}), so it is right
# under whatever prefix it was installed.
file(RELATIVE_PATH MEMKV_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/packaging/memkv.pc.in ${PROJECT_BINARY_DIR}/memkv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/memkv.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memkv)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "MemKV developers")
set(CPACK_PACKAGE_CONTACT "MemKV developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "store for LLM KV-cache blocks")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "MemKV developers")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server runtime dev python)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS OFF)
# The RelWithDebInfo binaries are nearly all DWARF. CPack strips the packaged
# copies and keeps the debug info, keyed by build ID, in
# <package>-dbgsym_<version>_<arch>.ddeb (/usr/lib/debug/.build-id/...), which
# gdb and debuginfod find on a host where it is installed.
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_DEV_DEBUGINFO_PACKAGE OFF)  # headers and text files only
# Library dependencies come from dpkg-shlibdeps (dpkg-dev; it needs `file`).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(MEMKV_DEB_LIB "libmemkv0 (= ${PROJECT_VERSION})")

# memkv_deb_description(COMPONENT SUMMARY LINES...): the package's Description,
# its summary line then the long text.
function(memkv_deb_description component summary)
  string(JOIN "\n" text ${summary} ${ARGN})
  set(CPACK_DEBIAN_${component}_DESCRIPTION "${text}" PARENT_SCOPE)
endfunction()

# memkv: the server and CLI (statically linked to MemKV's own code).
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME memkv)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION database)
# Depends comes from dpkg-shlibdeps: libzmq5 (the block events, src/events)
# among them. msgpack-c's packer is inline functions of its headers, so no
# msgpack library is needed at run time; libmemkv0 uses neither.
# libibverbs finds NICs through provider plugins it dlopens (mlx5, rxe, ...),
# which dpkg-shlibdeps cannot see.
set(CPACK_DEBIAN_SERVER_PACKAGE_RECOMMENDS ibverbs-providers)
memkv_deb_description(SERVER "store for LLM KV-cache blocks"
  "MemKV keeps the KV-cache blocks of LLM inference servers in a DRAM tier"
  "backed by drives, and serves them to clients over RDMA or TCP. This"
  "package installs the memkv server and command-line client, a systemd"
  "unit (not enabled on install) and a default /etc/memkv/config.yaml.")
# conffiles: dpkg keeps an operator's edits of /etc/memkv/config.yaml on
# upgrade. The maintainer scripts only talk to systemd (daemon-reload, stop on
# remove, restart on upgrade); the unit's DynamicUser=yes needs no account.
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# libmemkv0: the shared library. Its shlibs file lets dpkg-shlibdeps of
# programs built against it name this package.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libmemkv0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS ibverbs-providers)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
memkv_deb_description(RUNTIME "MemKV client library"
  "The C and C++ client of MemKV, a store for LLM KV-cache blocks: puts,"
  "gets and batches over RDMA or TCP, zero copy into caller buffers; and"
  "libkv_store_memkv.so, the kv_store backend llama.cpp and oMLX dlopen.")

# libmemkv-dev: headers, libmemkv.so, memkv.pc and the CMake package.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libmemkv-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${MEMKV_DEB_LIB}")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
memkv_deb_description(DEV "MemKV client library (development files)"
  "Headers (memkv/client.h, memkv/async.h, memkv/identity.h, memkv/put_options.h, memkv/memkv.h, memkv/status.h, memkv/kv_store.h), pkg-config file"
  "and CMake package (find_package(memkv), target memkv::memkv) of libmemkv.")

# python3-memkv: the extension links libmemkv.so.0, which dpkg-shlibdeps
# cannot resolve before libmemkv0 is installed, so Depends is written out.
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-memkv)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
find_package(Python3 COMPONENTS Interpreter)
math(EXPR MEMKV_PYTHON_NEXT "${Python3_VERSION_MINOR} + 1")
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "${MEMKV_DEB_LIB}, python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}), python3 (<< ${Python3_VERSION_MAJOR}.${MEMKV_PYTHON_NEXT}), libc6, libstdc++6, libgcc-s1")
memkv_deb_description(PYTHON "MemKV client for Python 3"
  "The memkv module: a thread-safe client of MemKV with zero-copy puts and"
  "gets through the buffer protocol (numpy, memoryview, mmap, raw pointers).")

include(CPack)
