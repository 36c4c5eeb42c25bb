# The two helpers every folder uses: numfid_add_library and numfid_add_test.

set(NUMFID_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(NUMFID_WERROR)
  list(APPEND NUMFID_WARNINGS -Werror)
endif()
if(NUMFID_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# numfid_add_library(NAME SOURCES src... [DEPS target...] [PRIVATE_DEPS target...] [INTERNAL])
#   Declares static library numfid_NAME with alias numfid::NAME. DEPS are PUBLIC (needed by a
#   public header of the library: other numfid layers), PRIVATE_DEPS are used only by its .cpp
#   files (fmt, yaml-cpp, nlohmann_json, MPFR: DESIGN.md rule 14, third-party deps PRIVATE).
#   Unless INTERNAL (a library only the numfid executable or the tests use), the library is
#   installed and exported as numfid::NAME, with its folder's *.h under include/numfid/FOLDER/
#   (cmake/numfid_install.cmake; a library added later, e.g. suites/ -> numfid::gtest, is
#   packaged without more work).
#
#   Include layout (decided in issue 7): sources include each other as "formats/x.h" from the
#   repository root, and consumers include the umbrella <numfid/numfid.h> (include/numfid/).
#   Installed, the layer folders sit under include/numfid/, so the exported include path is both
#   include/ (for <numfid/numfid.h>) and include/numfid/ (for the headers' own "formats/x.h").
#   Its one cost: the layer folder names (formats/, numerics/, io/, ...) are on the consumer's
#   include path, so a consumer header "io/x.h" could be shadowed by, or shadow, numfid's.
function(numfid_add_library name)
  cmake_parse_arguments(ARG "INTERNAL" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(numfid_${name} STATIC ${ARG_SOURCES})
  add_library(numfid::${name} ALIAS numfid_${name})
  set_target_properties(numfid_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(numfid_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/numfid>)
  target_compile_features(numfid_${name} PUBLIC cxx_std_20)  # the public headers use std::span
  target_compile_options(numfid_${name} PRIVATE ${NUMFID_WARNINGS})
  target_link_libraries(numfid_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  if(NOT ARG_INTERNAL)
    file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    set_target_properties(numfid_${name} PROPERTIES NUMFID_HEADER_FOLDER ${folder})
    set_property(GLOBAL APPEND PROPERTY NUMFID_PACKAGE_LIBRARIES numfid_${name})
  endif()
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
