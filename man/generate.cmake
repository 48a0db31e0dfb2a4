# SPDX-License-Identifier: MIT
# generate.cmake - write one manual page from its template (cmake -P).
#   cmake -DIN=alloy.3.in -DOUT=alloy.3 -DALLOY=build/alloy [-DSIM=build/alloy-sim]
#         -DVERSION=0.1.0 [-DLIBDIR_REL=.. -DSONAME=.. -DSIM_REL=..] -P generate.cmake
# Placeholders the template may hold (each on a line of its own for the
# fragments):
#   @ALLOY_SETTINGS_MAN@  `alloy settings --man`: every ALLOY_CONF key
#   @ALLOY_NAMES_MAN@     `alloy names --man`: every alloy_ctl name
#   @ALLOY_SIM_USAGE@     `alloy-sim --help`, escaped for a .nf block
#   @VERSION@ @DATE@ @LIBDIR_REL@ @SONAME@ @SIM_REL@
# DATE honours SOURCE_DATE_EPOCH (string(TIMESTAMP)), so that packages are
# reproducible.  A command that fails, or prints nothing, fails the build.
foreach(v IN ITEMS IN OUT ALLOY VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "generate.cmake: -D${v}= is required")
  endif()
endforeach()

function(capture var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR out STREQUAL "")
    message(FATAL_ERROR "generate.cmake: `${ARGN}` failed (status ${rc}): ${err}")
  endif()
  string(REGEX REPLACE "\n+$" "" out "${out}")
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

file(READ "${IN}" template)
if(template MATCHES "@ALLOY_SETTINGS_MAN@")
  capture(ALLOY_SETTINGS_MAN "${ALLOY}" settings --man)
endif()
if(template MATCHES "@ALLOY_NAMES_MAN@")
  capture(ALLOY_NAMES_MAN "${ALLOY}" names --man)
endif()
if(template MATCHES "@ALLOY_SIM_USAGE@")
  if(NOT SIM)
    message(FATAL_ERROR "generate.cmake: ${IN} needs -DSIM=<alloy-sim>")
  endif()
  capture(u "${SIM}" --help)
  # roff: a backslash is an escape, '-' a hyphen, a leading '.' or '\'' a request
  string(REPLACE "\\" "\\e" u "${u}")
  string(REPLACE "-" "\\-" u "${u}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" u "${u}")
  set(ALLOY_SIM_USAGE "${u}")
endif()
string(TIMESTAMP DATE "%Y-%m-%d" UTC)
configure_file("${IN}" "${OUT}" @ONLY)
