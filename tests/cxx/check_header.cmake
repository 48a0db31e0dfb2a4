# SPDX-License-Identifier: MIT
# check_header.cmake - compile pmr_header_check.cpp with the compiler CXX in
# each mode; each must succeed without a warning (-Werror).  A file that
# only includes the header must fail in C++14 with the header's own message.
# usage: cmake -DCXX=... -DINCLUDE=... -DSOURCE=... -DWORK=... -P check_header.cmake
cmake_policy(VERSION 3.16)
file(MAKE_DIRECTORY ${WORK})
set(strict -Wall -Wextra -Wpedantic -Wshadow -Wold-style-cast -Wconversion -Wsign-conversion
    -Wnon-virtual-dtor -Woverloaded-virtual -Wzero-as-null-pointer-constant -Wcast-align -Werror)
set(modes "std17:-std=c++17" "std20:-std=c++20" "nortti:-std=c++17 -fno-rtti"
    "noexcept:-std=c++17 -fno-exceptions" "O2:-std=c++17 -O2")
set(failed "")
foreach(mode IN LISTS modes)
  string(REGEX REPLACE ":.*" "" name "${mode}")
  string(REGEX REPLACE "^[^:]*:" "" flags "${mode}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND ${CXX} ${flags} ${strict} -I${INCLUDE} -c ${SOURCE} -o ${WORK}/${name}.o
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
    list(APPEND failed ${name})
    message("${CXX} ${flags}: exit ${rc}\n${out}${err}")
  else()
    message(STATUS "${CXX} ${flags}: clean")
  endif()
endforeach()
# C++14: one error, the header's own, and nothing after it
file(WRITE ${WORK}/only_include.cpp "#include <alloy/pmr.hpp>\n")
execute_process(COMMAND ${CXX} -std=c++14 -I${INCLUDE} -c ${WORK}/only_include.cpp -o ${WORK}/std14.o
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCHALL "error:" errors "${err}")
list(LENGTH errors nerrors)
if(rc EQUAL 0 OR NOT err MATCHES "needs C\\+\\+17" OR NOT nerrors EQUAL 1)
  list(APPEND failed std14)
  message("${CXX} -std=c++14: want one error, naming C++17; got exit ${rc}\n${err}")
else()
  message(STATUS "${CXX} -std=c++14: refused with the header's one error")
endif()
if(failed)
  message(FATAL_ERROR "alloy/pmr.hpp with ${CXX}: failed in ${failed}")
endif()
