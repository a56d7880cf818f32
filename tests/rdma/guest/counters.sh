#!/bin/sh
# print the non-zero rxe0 hw_counters on one line: name=value ...
d=/sys/class/infiniband/rxe0/ports/1/hw_counters
out=""
for f in "$d"/*; do v=$(cat "$f"); [ "$v" = 0 ] || out="$out ${f##*/}=$v"; done
echo "hw_counters($NAME):$out"
