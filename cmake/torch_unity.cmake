# balerbench_torch_unity(TARGET GROUP source...): compile the sources that include LibTorch's C++ API
# headers (some 20 s of a 30 s compile each on a 2-core machine) together, a few per translation unit,
# so that the headers are read once per group (CMake's unity build, GROUP mode). The target's other
# sources compile one by one as before. A source with its own compile options is never grouped (CMake
# leaves it out). BALERBENCH_TORCH_UNITY=OFF compiles every source alone (an edit then rebuilds one
# file, not its group); the figures are in docs/getting_started.md.
option(BALERBENCH_TORCH_UNITY "Compile the sources that include LibTorch a few per translation unit" ON)
function(balerbench_torch_unity target group)
  if(NOT BALERBENCH_TORCH_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  set_source_files_properties(${ARGN} PROPERTIES UNITY_GROUP ${group})
endfunction()
