# ctest drive_bench_smoke: memkv-drive-bench runs one tiny cell (no fio, with
# the per-put durable references) and prints a put row, the references' row
# and a get row, so the tool cannot rot unnoticed. Not a measurement. Run as
#   cmake -DBENCH=<memkv-drive-bench> -DWORK_DIR=<dir> -P drive_bench_smoke.cmake
execute_process(
  COMMAND ${BENCH} --dir ${WORK_DIR} --file-size 64MiB --block-size 1MiB --sizes 64KiB --qd 1
          --seconds 0.2 --no-fio --each-sync --json ${WORK_DIR}/drive-bench-smoke.json
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memkv-drive-bench exited with ${rc}")
endif()
foreach(op put get)
  # "   64 KiB    1      123.4 ..." under the op's table heading
  if(NOT out MATCHES "\n${op} \\(MiB/s[^\n]*\n[^\n]*\n +64 KiB +1 +[0-9]+\\.[0-9]")
    message(FATAL_ERROR "no ${op} row for 64 KiB at qd 1 in the output")
  endif()
endforeach()
# "   64 KiB    1      123.4      456.7   0.27 ..." under the references' heading
if(NOT out MATCHES "\nput against the per-put durable references[^\n]*\n[^\n]*\n +64 KiB +1 +[0-9.]+ +[0-9]+\\.[0-9] +[0-9]+\\.[0-9]+ +[0-9]+\\.[0-9]")
  message(FATAL_ERROR "no row of the per-put durable references for 64 KiB at qd 1 in the output")
endif()
