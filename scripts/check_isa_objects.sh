#!/usr/bin/env bash
# check_isa_objects.sh: the objects compiled for a wider instruction set (dense_products_avx2.o,
# dense_products_avx512.o, dense_loops_avx2.o, dense_loops_avx512.o) must share no inline code with
# the rest of the program, and run none of their own before their level is chosen:
#
# - No weak code. The linker keeps one copy of each weak symbol, and if an AVX-512 copy of, say, a
#   std:: template served the generic path, an older CPU would stop on an illegal instruction. Eigen
#   is renamed per file (dense_products_eigen.inc), so its symbols are distinct, and the loops live
#   in an anonymous namespace (dense_loops.inc). Weak data (typeinfo, which clang's -fsanitize=function
#   emits for every function type, vtables, static locals) holds no instructions and is left alone;
#   a vtable's functions and a static local's initialiser are code, and are checked as code.
# - No start-up code: no .init_array or .ctors section (a static initialiser or a constructor
#   function runs on every CPU when the program starts). A sanitizer's module constructor, which only
#   registers the file's globals, goes to a prioritised .init_array.N and is allowed in an object
#   built with a sanitizer.
# - Real code: an LTO object holds the compiler's IR, not the code, and cannot be checked.
#
# And every dense_products_*.o that allocates (Eigen's GEMM blocks, through malloc) keeps Eigen's
# failure path, a call of operator new that throws std::bad_alloc: GCC deletes that call unless the
# file is built with -fno-allocation-dce (harness/CMakeLists.txt), and a failed malloc would then be
# used as a buffer. This is checked per object (operator new or a throw referenced), not per call.
#
#   scripts/check_isa_objects.sh OBJECT...   (ctest passes the harness library's objects)
set -euo pipefail
command -v readelf > /dev/null || { echo "check_isa_objects.sh: readelf missing (binutils)" >&2; exit 2; }
status=0
checked=0
allocating=0
# ctest hands the objects over as one ';'-separated list: split it, and any space-separated ones.
objects=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<< "$arg"
  objects+=("${parts[@]}")
done
for o in "${objects[@]}"; do
  name="$(basename "$o")"
  case "$name" in dense_products_*.o | dense_loops_avx*.o) ;; *) continue ;; esac
  # readelf -sW: Num: Value Size Type Bind Vis Ndx Name. Its own step, so that a failure stops here.
  symbols="$(readelf -sW --demangle "$o")"
  undefined="$(readelf -sW "$o" | awk '$7 == "UND" { print $8 }')"  # mangled: _Znwm is operator new(size_t)
  if grep -qE '__gnu_lto_slim|__gnu_lto_v1' <<< "$symbols"; then
    echo "$o: an LTO object (compiler IR, not code): build the harness without LTO to check it"
    status=1
    continue
  fi
  if [[ "$name" == dense_products_* ]] && grep -qx 'malloc' <<< "$undefined"; then
    allocating=$((allocating + 1))
    if ! grep -qxE '_Znwm|__cxa_throw' <<< "$undefined"; then
      echo "$o: calls malloc but has no allocation-failure path (operator new or a throw): was it built without -fno-allocation-dce?"
      status=1
    fi
  fi
  [[ "$name" == *avx* ]] || continue
  checked=$((checked + 1))
  # Defined code symbols (FUNC, IFUNC) bound WEAK or UNIQUE, other than this file's renamed Eigen.
  shared="$(awk '($5 == "WEAK" || $5 == "UNIQUE") && $7 != "UND" && ($4 == "FUNC" || $4 == "IFUNC") { $1 = $2 = $3 = ""; print }' \
    <<< "$symbols" | grep -v 'balerbench_eigen_' || true)"
  if [ -n "$shared" ]; then
    echo "$o: weak code another file may also define (compiled for a wider instruction set):"
    echo "$shared" | head -20
    status=1
  fi
  sections="$(readelf -SW "$o")"
  startup="$(awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^\.(init_array|ctors)/) print $i }' <<< "$sections" | sort -u)"
  if grep -qE '^__(asan|tsan|ubsan|msan)_' <<< "$undefined"; then
    startup="$(grep -vE '^\.(init_array|ctors)\.[0-9]+$' <<< "$startup" || true)"  # the sanitizer's own
  fi
  if [ -n "$startup" ]; then
    echo "$o: start-up code (a static initialiser or constructor), compiled for a wider instruction set, runs on every CPU:"
    echo "$startup" | head -5
    status=1
  fi
done
[ "$checked" -gt 0 ] || { echo "check_isa_objects.sh: no dense_products_avx*.o or dense_loops_avx*.o among the objects given"; exit 1; }
if [ "$status" = 0 ]; then
  echo "check_isa_objects: $checked object(s) for a wider instruction set, no shared weak code, no start-up code;" \
       "$allocating allocating products object(s), each with Eigen's allocation-failure path"
fi
exit $status
