#!/usr/bin/env bash
# check_isa_objects.sh: the objects compiled for a wider instruction set (dense_products_avx2.o,
# dense_products_avx512.o, dense_loops_avx2.o, dense_loops_avx512.o) must share no inline code with
# the rest of the program. The linker keeps
# one copy of each weak symbol, and if an AVX-512 copy of, say, a std:: template served the generic
# path, an older CPU would stop on an illegal instruction. Eigen is renamed per file
# (dense_products_eigen.inc), so its symbols are distinct, and the loops live in an anonymous
# namespace (dense_loops.inc); this checks that no other code is weak. Weak data (typeinfo, which
# clang's -fsanitize=function emits for every function type, vtables, static locals) holds no
# instructions and is left alone; a vtable's functions are themselves checked as code.
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
  # Defined code symbols (FUNC, IFUNC) bound WEAK or UNIQUE, other than this file's renamed Eigen.
  # readelf -sW: Num: Value Size Type Bind Vis Ndx Name.
  shared="$(readelf -sW --demangle "$o" |
    awk '($5 == "WEAK" || $5 == "UNIQUE") && $7 != "UND" && ($4 == "FUNC" || $4 == "IFUNC") { $1 = $2 = $3 = ""; print }' |
    grep -v 'balerbench_eigen_' || true)"
  if [ -n "$shared" ]; then
    echo "$o: weak code another file may also define (compiled for a wider instruction set):"
    echo "$shared" | head -20
    status=1
  fi
done
[ "$checked" -gt 0 ] || { echo "check_isa_objects.sh: no dense_products_avx*.o or dense_loops_avx*.o among the objects given"; exit 1; }
[ "$status" = 0 ] && echo "check_isa_objects: $checked object(s), no shared weak code"
exit $status
