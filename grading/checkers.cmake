# How the grader builds a lab's checker from tests/ (included by tests/CMakeLists.txt, which declares
# the labs): the judge and the runner of each checker, the API's two sides, the renamed reference
# objects, and each lab's buggy variants with the ctest tests that expect them rejected. The
# build-time tools it runs are in grading/buildtools/.

# One checker: two executables, the judge and the runner (grading/judge/calls.hpp).
#   ${target}_runner  the implementation (the student's file), linked with the runner's main and
#                     the lab's table of functions; nothing of the judge's
#   ${target}         the judge: the lab's checker, its reference solution(s) and the forwarders
#                     that send every call of an API function to the runner; never the student's code
# The implementation is compiled on its own first, so that its symbols are read before the link
# (grading/buildtools/student_symbols.py): a file that uses cuBLAS, cuDNN or CUTLASS, calls the reference
# solution, looks functions up by name (dlopen, ...) or, outside lab 01 (hence --lab), allocates
# host-mapped memory, fails the build there, and <checker>.kernels lists the kernels it defines,
# which the judge holds every launch to.
#   references: the reference objects (workbook_add_reference), each a file and its target
#   ARCHITECTURE: the one GPU architecture the implementation is built for, when the lab names one
#                 (labs.json "architecture", e.g. 90a: wgmma and TMA exist only in sm_90a code)
#   COMPILED: the student edition's reference checker (WORKBOOK_REFERENCE_OBJECTS): the
#             implementation is then a compiled object, linked as it is, and the list of its
#             kernels (<checker>.kernels) is the one shipped beside it (COMPILED_KERNELS)
function(workbook_add_checker target lab references implementation)
  cmake_parse_arguments(PARSE_ARGV 4 arg "COMPILED" "ARCHITECTURE;COMPILED_KERNELS" "")
  set(reference_objects "")
  foreach(reference IN LISTS references)
    list(APPEND reference_objects ${workbook_reference_dir}/${reference}.o)
  endforeach()
  if(arg_COMPILED)
    # Compiled by the instructor's make handout, for every architecture a student may have.
    add_executable(${target}_runner ${implementation} $<TARGET_OBJECTS:${lab}_serve>)
    set_target_properties(${target}_runner PROPERTIES LINKER_LANGUAGE CXX)
    target_link_libraries(${target}_runner PRIVATE grading_runner workbook_common)
    add_custom_command(TARGET ${target}_runner POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E copy ${arg_COMPILED_KERNELS} $<TARGET_FILE_DIR:${target}_runner>/${target}.kernels
      VERBATIM)
  else()
    add_library(${target}_file OBJECT ${implementation})
    target_link_libraries(${target}_file PRIVATE workbook_common)
    if(arg_ARCHITECTURE)
      set_target_properties(${target}_file PROPERTIES CUDA_ARCHITECTURES ${arg_ARCHITECTURE}-real)
    endif()
    add_executable(${target}_runner $<TARGET_OBJECTS:${target}_file> $<TARGET_OBJECTS:${lab}_serve>)
    set_target_properties(${target}_runner PROPERTIES LINKER_LANGUAGE CXX)
    target_link_libraries(${target}_runner PRIVATE grading_runner workbook_common)
    add_custom_command(TARGET ${target}_runner PRE_LINK
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/buildtools/student_symbols.py
              --source ${implementation} --lab ${lab} --out $<TARGET_FILE_DIR:${target}_runner>/${target}.kernels
              --reference ${reference_objects}
              --workbook ${PROJECT_SOURCE_DIR} --confined ${CMAKE_BINARY_DIR} ${WORKBOOK_PREBUILT}
              -- $<TARGET_OBJECTS:${target}_file>
      COMMAND_EXPAND_LISTS VERBATIM)
  endif()

  add_executable(${target} $<TARGET_OBJECTS:${lab}_forward> ${reference_objects})
  # A C++ link, as the checker's own object asks for.
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  if(NOT WORKBOOK_PREBUILT)
    # The runner's symbol check reads the names the reference objects were given.
    add_dependencies(${target}_runner ${references})
    add_dependencies(${target} ${references})
  endif()
  add_dependencies(${target} ${target}_runner)
  target_link_libraries(${target} PRIVATE ${lab}_checker grading_checker_main grading_judge workbook_common
                                          workbook_doctest)
endfunction()

# The two sides of a lab's API, written from its header (grading/buildtools/api_stubs.py): the judge's
# forwarders (${name}_forward) and the runner's table of functions (${name}_serve).
function(workbook_add_api name)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/api)
  set(header ${PROJECT_SOURCE_DIR}/tests/${name}.hpp)
  add_custom_command(OUTPUT ${dir}/${name}_forward.cpp ${dir}/${name}_serve.cpp
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/buildtools/api_stubs.py --header ${header}
            --forward ${dir}/${name}_forward.cpp --serve ${dir}/${name}_serve.cpp
    DEPENDS ${header} ${PROJECT_SOURCE_DIR}/grading/buildtools/api_stubs.py VERBATIM)
  add_library(${name}_forward OBJECT ${dir}/${name}_forward.cpp)
  target_include_directories(${name}_forward PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  # The reference solution's runner, where the judge times the reference as it times the student.
  target_compile_definitions(${name}_forward PRIVATE
                             WORKBOOK_REFERENCE_RUNNER="${workbook_bin_dir}/check_${name}_solution_runner")
  if(NOT WORKBOOK_PREBUILT)
    add_dependencies(${name}_forward check_${name}_solution_runner)
  endif()
  target_link_libraries(${name}_forward PRIVATE grading_judge workbook_doctest)
  add_library(${name}_serve OBJECT ${dir}/${name}_serve.cpp)
  target_include_directories(${name}_serve PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name}_serve PRIVATE workbook_common)
endfunction()

# The folder of the reference objects, and of the reference runners: this build's, or in a
# submission's build the workbook build's (WORKBOOK_PREBUILT), which made them.
if(WORKBOOK_PREBUILT)
  set(workbook_reference_dir ${prebuilt_reference_dir})
  set(workbook_bin_dir ${prebuilt_bin_dir})
else()
  set(workbook_reference_dir ${CMAKE_CURRENT_BINARY_DIR})
  set(workbook_bin_dir ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
endif()

# The reference solution of lab part `id`, for a checker or the bench to link beside a student's
# file: its solution's object (compiled exactly as a student's file is) with every symbol it defines
# renamed into `namespace` (grading/buildtools/reference_object.py). Makes target and file <dir>/<target>.o.
# In the student edition (WORKBOOK_REFERENCE_OBJECTS) the solution's object is the one make handout
# compiled, <that folder>/<id>.o, renamed here the same way (the same object comes out).
function(workbook_add_reference target id namespace)
  set(object ${CMAKE_CURRENT_BINARY_DIR}/${target}.o)
  if(WORKBOOK_REFERENCE_OBJECTS)
    set(solution_object ${WORKBOOK_REFERENCE_OBJECTS}/${id}.o)
  else()
    set(solution_object $<TARGET_OBJECTS:check_${id}_solution_file>)
  endif()
  add_custom_command(OUTPUT ${object}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/buildtools/reference_object.py
            --namespace ${namespace} --out ${object} ${solution_object}
    DEPENDS ${solution_object} ${PROJECT_SOURCE_DIR}/grading/buildtools/reference_object.py
    COMMAND_EXPAND_LISTS VERBATIM)
  # One target builds it; every executable that links it waits for that one (no parallel copies).
  add_custom_target(${target} DEPENDS ${object})
  if(NOT WORKBOOK_REFERENCE_OBJECTS)
    add_dependencies(${target} check_${id}_solution_file)
  endif()
endfunction()

# Declares a lab part: `workbook_add_lab(NAME SOURCE [DIR dir] [ALSO_REFERENCE other_lab] [ARCHITECTURE arch])`.
#   NAME            the checker is tests/check_NAME.cpp, its API tests/NAME.hpp, its buggy
#                   variants tests/buggy/NAME/*.cu
#   SOURCE          the student's file, the same name in labs/DIR and solutions/DIR
#   DIR             the lab's folder when it differs from NAME (a going-further part)
#   ALSO_REFERENCE  another lab part (its id) whose solution the checker may also time, in
#                   namespace reference_<that lab's number>, e.g. reference_04
#   ARCHITECTURE    the one GPU architecture its files are built for (e.g. 90a), instead of the
#                   build's list; its checker skips its tests on any other GPU
function(workbook_add_lab name source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "DIR;ALSO_REFERENCE;ARCHITECTURE" "")
  set(dir ${name})
  if(arg_DIR)
    set(dir ${arg_DIR})
  endif()
  # The reference solution, and any other lab's it also times, in namespace reference
  # (reference_<number> for another lab's, e.g. reference_04). A submission's build links the
  # workbook build's (WORKBOOK_PREBUILT), so it makes none.
  workbook_add_api(${name})
  set(references ${name}_reference)
  if(NOT WORKBOOK_PREBUILT)
    workbook_add_reference(${name}_reference ${name} reference)
  endif()
  foreach(other IN ITEMS ${arg_ALSO_REFERENCE})
    string(SUBSTRING ${other} 0 2 number)
    list(APPEND references ${name}_reference_${number})
    if(NOT WORKBOOK_PREBUILT)
      workbook_add_reference(${name}_reference_${number} ${other} reference_${number})
    endif()
  endforeach()

  if(WORKBOOK_PREBUILT)
    # A submission's build: the checker's object is the workbook build's.
    add_library(${name}_checker OBJECT IMPORTED)
    set_target_properties(${name}_checker PROPERTIES IMPORTED_OBJECTS "${prebuilt_${name}_checker}")
    target_link_libraries(${name}_checker INTERFACE grading_judge workbook_doctest)
  else()
    add_library(${name}_checker OBJECT ${PROJECT_SOURCE_DIR}/tests/check_${name}.cpp)
    target_include_directories(${name}_checker PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    # Where the checker finds the workbook's scripts (lab 06 draws its plot with one).
    target_compile_definitions(${name}_checker PRIVATE WORKBOOK_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    target_link_libraries(${name}_checker PUBLIC grading_judge workbook_doctest)
    if(WORKBOOK_REFERENCE_OBJECTS)
      # The student edition: the reference checker from the compiled solution make handout shipped
      # (the grader lists the tests and times the reference through it, as in the workbook).
      foreach(shipped ${name}.o ${name}.kernels)
        if(NOT EXISTS ${WORKBOOK_REFERENCE_OBJECTS}/${shipped})
          message(FATAL_ERROR "${WORKBOOK_REFERENCE_OBJECTS}/${shipped} is missing: the reference "
                              "objects are not those of this labs.json. Make the student edition "
                              "again (make handout) from the instructor's tree.")
        endif()
      endforeach()
      workbook_add_checker(check_${name}_solution ${name} "${references}"
                           ${WORKBOOK_REFERENCE_OBJECTS}/${name}.o COMPILED
                           COMPILED_KERNELS ${WORKBOOK_REFERENCE_OBJECTS}/${name}.kernels)
    else()
      workbook_add_checker(check_${name}_solution ${name} "${references}" ${PROJECT_SOURCE_DIR}/solutions/${dir}/${source}
                           ARCHITECTURE ${arg_ARCHITECTURE})
      # What make handout compiles for the student edition (grading/handout/make_handout.py):
      # the solution's plain object (the reference runner's) and the renamed ones (the judge's).
      set(renamed "")
      foreach(reference IN LISTS references)
        list(APPEND renamed "\"${CMAKE_CURRENT_BINARY_DIR}/${reference}.o\"")
      endforeach()
      list(JOIN renamed ", " renamed)
      add_dependencies(handout_references ${references})
      string(APPEND WORKBOOK_HANDOUT_LIST
             "${WORKBOOK_HANDOUT_SEPARATOR}{\"id\": \"${name}\", \"source\": \"${PROJECT_SOURCE_DIR}/solutions/${dir}/${source}\", "
             "\"objects\": \"$<TARGET_OBJECTS:check_${name}_solution_file>\", "
             "\"renamed\": [${renamed}]}")
      set(WORKBOOK_HANDOUT_LIST "${WORKBOOK_HANDOUT_LIST}" PARENT_SCOPE)
      set(WORKBOOK_HANDOUT_SEPARATOR ",\n  " PARENT_SCOPE)
    endif()
    add_dependencies(check_all_solution check_${name}_solution)
    string(APPEND WORKBOOK_PREBUILT_LIST "set(prebuilt_${name}_checker \"$<TARGET_OBJECTS:${name}_checker>\")\n")
    set(WORKBOOK_PREBUILT_LIST "${WORKBOOK_PREBUILT_LIST}" PARENT_SCOPE)
  endif()

  # A student's copy may lack a lab (an older copy of labs/): that lab then scores 0 and says why.
  if(EXISTS ${WORKBOOK_LABS_DIR}/${dir}/${source})
    workbook_add_checker(check_${name} ${name} "${references}" ${WORKBOOK_LABS_DIR}/${dir}/${source}
                         ARCHITECTURE ${arg_ARCHITECTURE})
    add_dependencies(check_all check_${name})
  endif()

  set(variants "")
  # The student edition has no solutions/: no buggy variants (each is a solution with one bug), and
  # nothing grades the reference for full marks (its checker is built from compiled objects).
  if(NOT WORKBOOK_GRADE_ONLY AND NOT WORKBOOK_REFERENCE_OBJECTS)
    # Buggy variants: whole files (*.cu), or patches of the solution (*.patch) applied at build time.
    set(solution_file ${PROJECT_SOURCE_DIR}/solutions/${dir}/${source})
    file(GLOB buggy CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/buggy/${name}/*.cu
                                      ${PROJECT_SOURCE_DIR}/tests/buggy/${name}/*.patch)
    # The files beside the solution, which a variant gets a copy of when the solution includes them.
    file(GLOB solution_siblings CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/solutions/${dir}/*.cu)
    foreach(file IN LISTS buggy)
      get_filename_component(variant ${file} NAME_WE)
      set(implementation ${file})
      if(file MATCHES "[.]patch$")
        set(implementation ${CMAKE_CURRENT_BINARY_DIR}/buggy/${name}/${variant}.cu)
        add_custom_command(OUTPUT ${implementation}
          COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/buildtools/apply_variant.py
                  --patch ${file} --solution ${solution_file} --out ${implementation}
          DEPENDS ${file} ${solution_file} ${solution_siblings} ${PROJECT_SOURCE_DIR}/grading/buildtools/apply_variant.py
          VERBATIM)
      endif()
      workbook_add_checker(check_${name}__${variant} ${name} "${references}" ${implementation}
                           ARCHITECTURE ${arg_ARCHITECTURE})
      file(STRINGS ${file} build_error REGEX "expect-build-error:")
      if(build_error)
        # A variant that must not build (it uses a library the labs forbid): kept out of `all`,
        # and a test without a GPU builds it and expects the build to fail with its message.
        set_target_properties(check_${name}__${variant} check_${name}__${variant}_runner check_${name}__${variant}_file
                              PROPERTIES EXCLUDE_FROM_ALL TRUE)
        add_test(NAME unit.${name}.build_refused.${variant}
                 COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/driver/expect_rejected.py
                         --build-dir ${CMAKE_BINARY_DIR} --lab ${name} --variant ${variant} --build-error)
        continue()
      endif()
      list(APPEND variants "\"${variant}\"")
      add_test(NAME gpu.${name}.buggy.${variant}
               COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/driver/expect_rejected.py
                       --build-dir ${CMAKE_BINARY_DIR} --lab ${name} --variant ${variant})
      set_tests_properties(gpu.${name}.buggy.${variant} PROPERTIES SKIP_RETURN_CODE 77)
    endforeach()
    add_test(NAME gpu.${name}.solution_scores_full_marks
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/driver/grade.py --build-dir ${CMAKE_BINARY_DIR}
                     --no-build --solutions --lab ${name} --expect full)
    set_tests_properties(gpu.${name}.solution_scores_full_marks PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  if(NOT WORKBOOK_GRADE_ONLY)
    add_test(NAME gpu.${name}.skeleton_fails
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/grading/driver/grade.py --build-dir ${CMAKE_BINARY_DIR}
                     --no-build --lab ${name} --expect zero)
    set_tests_properties(gpu.${name}.skeleton_fails PROPERTIES SKIP_RETURN_CODE 77)
  endif()

  # A lab's checkers write to one output folder (build/lab06: lab 06's sweep.csv and plot), and two
  # of them on one GPU would time each other: `ctest -j` runs one of a lab's GPU tests at a time.
  get_property(lab_tests DIRECTORY PROPERTY TESTS)
  list(FILTER lab_tests INCLUDE REGEX "^gpu[.]${name}[.]")
  if(lab_tests)
    set_tests_properties(${lab_tests} PROPERTIES RESOURCE_LOCK workbook_lab_${name})
  endif()

  string(REPLACE ";" "," variants "${variants}")
  set(entry "{\"id\": \"${name}\", \"dir\": \"${dir}\", \"source\": \"${source}\", \"variants\": [${variants}]}")
  if(WORKBOOK_LAB_MANIFEST)
    set(WORKBOOK_LAB_MANIFEST "${WORKBOOK_LAB_MANIFEST}, ${entry}" PARENT_SCOPE)
  else()
    set(WORKBOOK_LAB_MANIFEST "${entry}" PARENT_SCOPE)
  endif()
endfunction()

