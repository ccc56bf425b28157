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

# balerbench_folder_unity(TARGET SIZE): compile the target's other C++ sources (those not in a LibTorch
# group and without compile options of their own) a folder's SIZE at a time, in the order the target
# lists them: most include nlohmann/json and the standard library's containers, whose parse and
# instantiation is most of their compile, and a group pays it once. BALERBENCH_UNITY=OFF compiles each
# alone. Names a unity group shares must not collide: a helper in one source's anonymous namespace is
# visible to the sources after it in its group, so two sources of one folder never define the same
# name there (the build fails when they do). The figures are in docs/getting_started.md.
option(BALERBENCH_UNITY "Compile the sources that do not include LibTorch a folder's few per translation unit" ON)
function(balerbench_folder_unity target size)
  if(NOT BALERBENCH_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$" OR IS_ABSOLUTE "${source}")
      continue()  # generated sources (the revision, the page's assets) and CUDA stay alone
    endif()
    get_source_file_property(group ${source} UNITY_GROUP)
    get_source_file_property(options ${source} COMPILE_OPTIONS)
    if(group OR options)
      continue()
    endif()
    get_filename_component(folder ${source} DIRECTORY)
    string(REPLACE "/" "_" folder "${folder}")
    if(folder STREQUAL "")
      set(folder "root")
    endif()
    if(NOT DEFINED count_${folder})
      set(count_${folder} 0)
    endif()
    math(EXPR chunk "${count_${folder}} / ${size}")
    math(EXPR count_${folder} "${count_${folder}} + 1")
    set_source_files_properties(${source} PROPERTIES UNITY_GROUP "${target}_${folder}_${chunk}")
  endforeach()
endfunction()
