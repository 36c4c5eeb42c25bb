# The two helpers every folder uses: numfid_add_library and numfid_add_test.

set(NUMFID_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(NUMFID_WERROR)
  list(APPEND NUMFID_WARNINGS -Werror)
endif()
if(NUMFID_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# numfid_add_library(NAME SOURCES src... [DEPS target...])
#   Declares library numfid_NAME with alias numfid::NAME; its headers are included as
#   "NAME/header.h" from the repository root.
function(numfid_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(numfid_${name} STATIC ${ARG_SOURCES})
  add_library(numfid::${name} ALIAS numfid_${name})
  target_include_directories(numfid_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_compile_options(numfid_${name} PRIVATE ${NUMFID_WARNINGS})
  target_link_libraries(numfid_${name} PUBLIC ${ARG_DEPS})
endfunction()

# numfid_add_test(NAME SOURCES src... [DEPS target...] [LABELS label...] [TIMEOUT s])
#   Declares a GoogleTest executable; its tests are discovered by ctest. Tests labelled
#   `exhaustive` are long sweeps excluded from the default test command (README).
function(numfid_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${NUMFID_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(labels ${ARG_LABELS})
  if(NOT labels)
    set(labels unit)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
