# ctest memkv_bench_smoke: memkv-bench sweeps one small size at 1 and 2
# connections against a spawned memkv and the raw stream (no Redis), once
# with single calls and once with --batch 4 and --plot, and prints a put row
# and a get row each time, so the tool cannot rot unnoticed. Not a
# measurement. Run as
#   cmake -DBENCH=<memkv-bench> -DWORK_DIR=<dir> -P memkv_bench_smoke.cmake
function(run_bench name batch_column)
  execute_process(
    COMMAND ${BENCH} --sizes 64KiB --conns 1,2 --seconds 0.1 --pool 64MiB --cold --no-auth-cost
            --json ${WORK_DIR}/memkv-bench-smoke-${name}.json ${ARGN}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memkv-bench (${name}) exited with ${rc}")
  endif()
  foreach(op put get)
    # "   64 KiB     1 [    4]     123.4 ..." under the op's heading and its two header lines
    if(NOT out MATCHES "\n${op} \\(MiB/s[^\n]*\n[^\n]*\n[^\n]*\n +64 KiB +1 +${batch_column}[0-9]+\\.[0-9]+ +[0-9]+\\.[0-9]")
      message(FATAL_ERROR "no ${op} row for 64 KiB at 1 connection (${name}) in the output")
    endif()
  endforeach()
  set(out "${out}" PARENT_SCOPE)
endfunction()

run_bench(single "")
run_bench(batch "4 +" --batch 4 --plot ${WORK_DIR}/memkv-bench-smoke.svg)
if(NOT out MATCHES "batch: up to 4 values per call")
  message(FATAL_ERROR "the header does not name the batch")
endif()
foreach(file memkv-bench-smoke.dat memkv-bench-smoke.gp)
  if(NOT EXISTS ${WORK_DIR}/${file})
    message(FATAL_ERROR "--plot did not write ${WORK_DIR}/${file}")
  endif()
endforeach()
