# SPDX-License-Identifier: MIT
# install.cmake - what `cmake --install build --prefix P` puts under P, by
# component (`--component NAME` installs one; tools/package.sh makes one
# Debian package of each):
#   runtime   lib/liballoy.so.0 -> liballoy.so.0.1.0
#             lib/liballoy_secure.so.0 -> liballoy_secure.so.0.1.0  (if built)
#             bin/alloy                         (if tools/ built it)
#             share/man/man1/alloy.1, share/man/man3/alloy.3  (if man/ built them)
#   dev       lib/liballoy.so (the link), lib/liballoy.a
#             lib/liballoy_secure.so (the link), lib/liballoy_secure.a  (if built)
#             include/alloy.h, include/alloy/*.h, include/alloy/pmr.hpp (C++17)
#             lib/pkgconfig/alloy.pc            pkg-config --libs alloy
#             lib/cmake/alloy/alloyConfig.cmake, alloyConfigVersion.cmake,
#             alloyTargets.cmake                find_package(alloy): alloy::alloy,
#                                               alloy::alloy_static, alloy::pmr
#   sim       only with --component sim (not in a plain cmake --install):
#             libexec/alloy-sim/alloy-sim, alloy-sim-real, bin/alloy-sim -> it,
#             share/alloy-sim/figures.py, tables.py, share/man/man1/alloy-sim.1
# The prefix may be chosen at install time (--prefix), so nothing installed
# may hold the configure-time CMAKE_INSTALL_PREFIX: the CMake files find the
# prefix from their own location, and alloy.pc is written during install.
# (lib is CMAKE_INSTALL_LIBDIR and so on: GNUInstallDirs.)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ALLOY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/alloy)
set(ALLOY_GEN_DIR ${CMAKE_BINARY_DIR}/cmake-install)

# alloy::pmr: the header-only C++17 std::pmr adapters (include/alloy/pmr.hpp).
# An INTERFACE target that requires C++17 and links the library holding the
# hot-path allocators: today that is liballoy.so, which also becomes the
# program's malloc.
if(NOT TARGET alloy_pmr)
  add_library(alloy_pmr INTERFACE)
  target_compile_features(alloy_pmr INTERFACE cxx_std_17)
  target_link_libraries(alloy_pmr INTERFACE alloy)
endif()

# In-tree users (add_subdirectory) get the same names as find_package users.
if(NOT TARGET alloy::alloy)
  add_library(alloy::alloy ALIAS alloy)
  add_library(alloy::alloy_static ALIAS alloy_static)
  add_library(alloy::pmr ALIAS alloy_pmr)
endif()

# Libraries and headers ---------------------------------------------------------
install(TARGETS alloy
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS alloy_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/include/alloy.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev)
# the secure flavour, shared and static, when it was built (tools/package.sh
# builds only what the packages hold).  The debug flavour and the test
# libraries (numatest, hot_san, hot_vg, prof) are not installed.
install(TARGETS alloy_secure
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        OPTIONAL)
install(TARGETS alloy_secure_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        OPTIONAL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/alloy/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/alloy COMPONENT dev
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# The alloy command and the manual pages (man/) ----------------------------------------
if(TARGET alloy_cmd)
  install(TARGETS alloy_cmd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
if(TARGET man)
  install(FILES ${CMAKE_BINARY_DIR}/man/alloy.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          COMPONENT runtime)
  install(FILES ${CMAKE_BINARY_DIR}/man/alloy.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3
          COMPONENT runtime)
endif()

# The simulator: only on request (--component sim; the alloy-sim package) ---------------
# alloy-sim finds alloy-sim-real beside itself through its real path, and
# figures.py in DATADIR/alloy-sim (sim/CMakeLists.txt), so both programs
# live in LIBEXECDIR/alloy-sim and BINDIR/alloy-sim is a relative link.
if(TARGET alloy-sim AND TARGET alloy-sim-real)
  set(ALLOY_SIM_LIBEXEC ${CMAKE_INSTALL_LIBEXECDIR}/alloy-sim)
  install(TARGETS alloy-sim alloy-sim-real RUNTIME DESTINATION ${ALLOY_SIM_LIBEXEC}
          COMPONENT sim EXCLUDE_FROM_ALL)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/sim/figures.py ${PROJECT_SOURCE_DIR}/sim/tables.py
          DESTINATION ${CMAKE_INSTALL_DATADIR}/alloy-sim COMPONENT sim EXCLUDE_FROM_ALL)
  if(TARGET man)
    install(FILES ${CMAKE_BINARY_DIR}/man/alloy-sim.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
            COMPONENT sim EXCLUDE_FROM_ALL)
  endif()
  file(RELATIVE_PATH ALLOY_SIM_LINK ${CMAKE_INSTALL_FULL_BINDIR}
       ${CMAKE_INSTALL_FULL_LIBEXECDIR}/alloy-sim/alloy-sim)
  install(CODE "
    set(_bindir \"${CMAKE_INSTALL_BINDIR}\")
    if(NOT IS_ABSOLUTE \"\${_bindir}\")
      set(_bindir \"\${CMAKE_INSTALL_PREFIX}/\${_bindir}\")
    endif()
    message(STATUS \"Installing: \$ENV{DESTDIR}\${_bindir}/alloy-sim -> ${ALLOY_SIM_LINK}\")
    file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${_bindir}\")
    file(CREATE_LINK \"${ALLOY_SIM_LINK}\" \"\$ENV{DESTDIR}\${_bindir}/alloy-sim\" SYMBOLIC)
  " COMPONENT sim EXCLUDE_FROM_ALL)
endif()

# CMake package: alloyConfig.cmake, its version file, the imported targets ----------
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/alloyConfig.cmake.in
  ${ALLOY_GEN_DIR}/alloyConfig.cmake
  INSTALL_DESTINATION ${ALLOY_CMAKE_DIR})
# 0.x: a minor release may break the API, so only 0.1.* satisfies 0.1
write_basic_package_version_file(${ALLOY_GEN_DIR}/alloyConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

if(IS_ABSOLUTE "${ALLOY_CMAKE_DIR}")
  file(RELATIVE_PATH ALLOY_CMAKE_TO_PREFIX ${ALLOY_CMAKE_DIR} ${CMAKE_INSTALL_PREFIX})
else()
  file(RELATIVE_PATH ALLOY_CMAKE_TO_PREFIX /prefix/${ALLOY_CMAKE_DIR} /prefix)
endif()
set(ALLOY_LIBDIR_FROM_PREFIX ${CMAKE_INSTALL_LIBDIR})
set(ALLOY_INCLUDEDIR_FROM_PREFIX ${CMAKE_INSTALL_INCLUDEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/alloyTargets.cmake.in
  ${ALLOY_GEN_DIR}/alloyTargets.cmake.in @ONLY)
file(GENERATE OUTPUT ${ALLOY_GEN_DIR}/alloyTargets.cmake
  INPUT ${ALLOY_GEN_DIR}/alloyTargets.cmake.in)

install(FILES ${ALLOY_GEN_DIR}/alloyConfig.cmake
              ${ALLOY_GEN_DIR}/alloyConfigVersion.cmake
              ${ALLOY_GEN_DIR}/alloyTargets.cmake
        DESTINATION ${ALLOY_CMAKE_DIR} COMPONENT dev)

# pkg-config: alloy.pc, with the prefix of this install ------------------------------
# Written at install time (CMAKE_INSTALL_PREFIX then is the --prefix in use);
# file(INSTALL) adds DESTDIR.
install(CODE "
  set(ALLOY_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(ALLOY_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(ALLOY_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  foreach(_v ALLOY_PC_LIBDIR ALLOY_PC_INCLUDEDIR)
    if(NOT IS_ABSOLUTE \"\${\${_v}}\")
      set(\${_v} \"\\\${prefix}/\${\${_v}}\")
    endif()
  endforeach()
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/alloy.pc.in\" \"${ALLOY_GEN_DIR}/alloy.pc\" @ONLY)
  set(_pcdir \"${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
  if(NOT IS_ABSOLUTE \"\${_pcdir}\")
    set(_pcdir \"\${CMAKE_INSTALL_PREFIX}/\${_pcdir}\")
  endif()
  file(INSTALL DESTINATION \"\${_pcdir}\" TYPE FILE FILES \"${ALLOY_GEN_DIR}/alloy.pc\")
" COMPONENT dev)
