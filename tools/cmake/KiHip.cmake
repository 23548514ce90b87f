# ki_hip_add_executable(<target> SOURCES <files...> [LINK <targets...>] [DEFINITIONS <defs...>]
#                       [INCLUDES <dirs...>])
#
# Builds an executable whose sources are HIP: each source is compiled by hipcc (KI_HIPCC) to an
# object (-std=c++20 --offload-arch=<each of KI_HIP_ARCHITECTURES>, the include directories and
# compile definitions of ki::hip and of the LINK targets), and the objects are linked by the C++
# compiler with ki::hip (libamdhip64) and the LINK targets. Header dependencies come from
# hipcc's depfiles.
#
# ki_hip_compile(<out_var> <name> SOURCES ... [LINK ...] [DEFINITIONS ...] [INCLUDES ...]): the
# same compilation only; <out_var> receives the object files (to add to any target that links
# ki::hip), which go under <binary dir>/<name>.dir.
#
# The platform is never left to hipcc's probe. Debian's hipcc 5.2 picks AMD only when an
# unversioned `clang++` runs, and NVIDIA as soon as `nvcc` is found: on a fresh Debian 12 with
# the CUDA toolkit (no unversioned clang++) it would hand our sources to nvcc ("Value 'hip' is
# not defined for option 'x'"). KI_HIPCC_COMMAND runs hipcc with HIP_PLATFORM=amd and
# HIP_CLANG_PATH = the folder of the clang it is built for (KI_HIP_CLANG, clang++-15 by default),
# whatever PATH holds; the test `hip: hipcc compiles for AMD with nvcc and no clang++ on the
# PATH` (offload/CMakeLists.txt) checks it.
find_program(KI_HIP_CLANG NAMES clang++-15 DOC "The clang++ that Debian's hipcc drives (HIP_CLANG_PATH is its folder)")
if(NOT KI_HIP_CLANG)
  message(FATAL_ERROR "KI_ENABLE_HIP=ON but clang++-15 (the compiler of Debian's hipcc) was not found; set KI_HIP_CLANG")
endif()
get_filename_component(_ki_hip_clang_dir ${KI_HIP_CLANG} DIRECTORY)
set(KI_HIPCC_COMMAND ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd HIP_CLANG_PATH=${_ki_hip_clang_dir} ${KI_HIPCC}
    CACHE INTERNAL "hipcc, its platform and clang fixed")
function(ki_hip_add_executable target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LINK;DEFINITIONS;INCLUDES")
  ki_hip_compile(objects ${target} SOURCES ${arg_SOURCES} LINK ${arg_LINK} DEFINITIONS ${arg_DEFINITIONS}
                 INCLUDES ${arg_INCLUDES})
  add_executable(${target} ${objects})
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  target_link_libraries(${target} PRIVATE ki::hip ${arg_LINK})
endfunction()

function(ki_hip_compile out_var target)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "SOURCES;LINK;DEFINITIONS;INCLUDES")
  set(incs "")
  set(defs "")
  foreach(t IN ITEMS ki::hip ${arg_LINK})
    list(APPEND incs "$<TARGET_PROPERTY:${t},INTERFACE_INCLUDE_DIRECTORIES>")
    list(APPEND defs "$<TARGET_PROPERTY:${t},INTERFACE_COMPILE_DEFINITIONS>")
  endforeach()
  list(APPEND incs ${arg_INCLUDES})
  set(arch_flags "")
  foreach(a IN LISTS KI_HIP_ARCHITECTURES)
    list(APPEND arch_flags "--offload-arch=${a}")
  endforeach()
  set(build_flags -O2)
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(build_flags -O0 -g)
  endif()
  # Empty entries dropped; /usr/include left out (a system directory given with -I breaks
  # libstdc++'s #include_next).
  set(incs "$<FILTER:$<REMOVE_DUPLICATES:${incs}>,EXCLUDE,^/usr/include/?$>")
  set(defs "$<FILTER:$<REMOVE_DUPLICATES:${defs};${arg_DEFINITIONS}>,INCLUDE,.>")
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}.dir)
  file(MAKE_DIRECTORY ${dir})
  set(objects "")
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${dir}/${stem}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${KI_HIPCC_COMMAND} -x hip -std=c++20 ${arch_flags} ${build_flags} -fPIE
              "$<LIST:TRANSFORM,${incs},PREPEND,-I>"
              "$<LIST:TRANSFORM,${defs},PREPEND,-D>"
              -MD -MF ${obj}.d -c ${src} -o ${obj}
      DEPENDS ${src}
      DEPFILE ${obj}.d
      COMMENT "hipcc ${stem}"
      COMMAND_EXPAND_LISTS
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(${out_var} ${objects} PARENT_SCOPE)
endfunction()
