# ctest nixl_engine_bench_smoke: memkv-nixl-engine-bench runs two tiny shapes
# for one short round against a spawned memkv and prints a write and a read
# row for each, with the engine/client and control/client ratios, and writes
# its JSON, so the tool cannot rot unnoticed. Not a measurement. Run as
#   cmake -DBENCH=<memkv-nixl-engine-bench> -DWORK_DIR=<dir> -P nixl_engine_bench_smoke.cmake
set(json ${WORK_DIR}/nixl-engine-bench-smoke.json)
file(REMOVE ${json})
execute_process(
  COMMAND ${BENCH} --shapes 4x64KiB,2x1MiB --rounds 1 --seconds 0.05 --json ${json}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memkv-nixl-engine-bench exited with ${rc}")
endif()
foreach(shape "4 x 64 KiB" "2 x 1 MiB")
  foreach(op write read)
    # "4 x 64 KiB     write      123.4 ... 0.987x   1.012x"
    if(NOT out MATCHES "\n${shape} +${op} +[0-9]+\\.[0-9]( +[0-9]+\\.[0-9]+)+ +[0-9]+\\.[0-9]+x +[0-9]+\\.[0-9]+x\n")
      message(FATAL_ERROR "no ${op} row for ${shape} in the output")
    endif()
  endforeach()
endforeach()
if(NOT EXISTS ${json})
  message(FATAL_ERROR "no JSON at ${json}")
endif()
file(READ ${json} body)
if(NOT body MATCHES "\"engine_over_client\":")
  message(FATAL_ERROR "the JSON has no engine_over_client ratio")
endif()
