# install.cmake - what `cmake --install build --prefix P` puts under P:
#   lib/liballoy.so (+ soname links), lib/liballoy.a
#   include/alloy.h, include/alloy/*.h, include/alloy/pmr.hpp (C++17)
#   bin/alloy                                   (if tools/ built it)
#   lib/pkgconfig/alloy.pc                      pkg-config --libs alloy
#   lib/cmake/alloy/alloyConfig.cmake, alloyConfigVersion.cmake,
#   alloyTargets.cmake                          find_package(alloy): alloy::alloy,
#                                               alloy::alloy_static, alloy::pmr
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
install(TARGETS alloy alloy_static alloy_secure
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/alloy.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/alloy/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/alloy
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# The alloy command -----------------------------------------------------------------
if(TARGET alloy_cmd)
  install(TARGETS alloy_cmd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
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
        DESTINATION ${ALLOY_CMAKE_DIR})

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
")
