# The smoke runs of the benchmarks whose JSON has no smoke script of its own
# (memkv-prefix-eviction-bench, memkv-drive-crypt-bench, memkv-tenant-bench):
# runs the command after "--", which must exit 0 and print a line matching
# PASS, then reads JSON, the file the command was told to write with its
# --json flag, which must parse and hold a number at KEY (member names and
# array indexes joined by "/", as in "runs/0/put_ratio"). Not a measurement.
# Run as
#   cmake -DJSON=<file> -DPASS=<regex> -DKEY=<path> -P json_smoke.cmake -- <command> [args...]
set(command)
set(after_dashes OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_dashes)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_dashes ON)
  endif()
endforeach()
if(NOT command OR NOT DEFINED JSON OR NOT DEFINED PASS OR NOT DEFINED KEY)
  message(FATAL_ERROR "usage: cmake -DJSON=<file> -DPASS=<regex> -DKEY=<path> -P json_smoke.cmake -- <command>")
endif()
file(REMOVE ${JSON})
execute_process(
  COMMAND ${command}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}${err}")
list(GET command 0 program)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${program} exited with ${rc}")
endif()
if(NOT out MATCHES "${PASS}")
  message(FATAL_ERROR "no line matching '${PASS}' in the output")
endif()
if(NOT EXISTS ${JSON})
  message(FATAL_ERROR "no JSON at ${JSON}")
endif()
file(READ ${JSON} body)
string(REPLACE "/" ";" path "${KEY}")
string(JSON type ERROR_VARIABLE problem TYPE "${body}" ${path})
if(problem)
  message(FATAL_ERROR "${JSON}: ${problem}")
endif()
if(NOT type STREQUAL "NUMBER")
  message(FATAL_ERROR "${JSON}: ${KEY} is ${type}, not a number")
endif()
