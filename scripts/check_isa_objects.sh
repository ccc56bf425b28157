#!/usr/bin/env bash
# check_isa_objects.sh: the objects compiled for a wider instruction set (dense_products_avx2.o,
# dense_products_avx512.o, dense_loops_avx2.o, dense_loops_avx512.o) must share no inline code with
# the rest of the program. The linker keeps
# one copy of each weak symbol, and if an AVX-512 copy of, say, a std:: template served the generic
# path, an older CPU would stop on an illegal instruction. Eigen is renamed per file
# (dense_products_eigen.inc), so its symbols are distinct, and the loops live in an anonymous
# namespace (dense_loops.inc); this checks that nothing else is weak.
#
#   scripts/check_isa_objects.sh OBJECT...   (ctest passes the harness library's objects)
set -euo pipefail
status=0
checked=0
# ctest hands the objects over as one ';'-separated list: split it, and any space-separated ones.
objects=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<< "$arg"
  objects+=("${parts[@]}")
done
for o in "${objects[@]}"; do
  case "$(basename "$o")" in dense_products_avx*.o | dense_loops_avx*.o) ;; *) continue ;; esac
  checked=$((checked + 1))
  # Weak symbols (W, V, u) that are neither this file's Eigen nor the C++ personality reference.
  shared="$(nm -C "$o" | awk '$1 ~ /^[0-9a-f]+$/ && ($2 == "W" || $2 == "V" || $2 == "u") || ($1 == "w" || $1 == "W")' |
    grep -v 'balerbench_eigen_' | grep -v 'DW.ref.__gxx_personality_v0' || true)"
  if [ -n "$shared" ]; then
    echo "$o: weak symbols another file may also define (compiled for a wider instruction set):"
    echo "$shared" | head -20
    status=1
  fi
done
[ "$checked" -gt 0 ] || { echo "check_isa_objects.sh: no dense_products_avx*.o or dense_loops_avx*.o among the objects given"; exit 1; }
[ "$status" = 0 ] && echo "check_isa_objects: $checked object(s), no shared weak symbol"
exit $status
