# balerbench_precompile(TARGET header...): compile the headers most of a target's sources include
# (nlohmann/json, in 171 of the 222 library sources, some 2 s of each one's compile on a 2-core machine;
# the standard library's containers and streams; GoogleTest in the test programs) once per target, as
# a precompiled header (CMake's target_precompile_headers, for the C++ sources only). A source with its
# own compile options (the instruction-set objects, whose inline code must stay their own:
# scripts/check_isa_objects.sh) compiles without it; set those options before the call.
# balerbench_precompile_like(TARGET OTHER): TARGET uses OTHER's precompiled header (the test programs
# share one: some 100 MB each). BALERBENCH_PCH=OFF compiles every source from its own includes, which
# checks that each includes what it uses (the ThreadSanitizer build does: scripts/sanitize.sh);
# scripts/measure_build.sh compares the two.
option(BALERBENCH_PCH "Precompile the headers most sources include (nlohmann/json, GoogleTest, the standard library)" ON)
# ccache caches a compile that reads a precompiled header only with these sloppiness settings.
if(BALERBENCH_PCH AND CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" AND NOT CMAKE_CXX_COMPILER_LAUNCHER MATCHES "SLOPPINESS")
  set(CMAKE_CXX_COMPILER_LAUNCHER
      env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
function(balerbench_precompile target)
  if(NOT BALERBENCH_PCH)
    return()
  endif()
  set(headers "")
  foreach(header IN LISTS ARGN)
    string(REPLACE ">" "$<ANGLE-R>" header "${header}")  # a '>' would close the generator expression
    list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    get_source_file_property(options ${source} COMPILE_OPTIONS)
    if(options)
      set_source_files_properties(${source} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
function(balerbench_precompile_like target other)
  if(BALERBENCH_PCH)
    target_precompile_headers(${target} REUSE_FROM ${other})
  endif()
endfunction()
