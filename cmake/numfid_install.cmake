# Packaging: the umbrella target numfid::numfid, the install rules, the CMake package
# (numfidConfig.cmake, version file, numfidTargets) and numfid.pc, all derived from the libraries
# that numfid_add_library registered (cmake/numfid.cmake). numfid_package() is called once from
# the root CMakeLists.txt after every folder is added.
include(CMakePackageConfigHelpers)

set(NUMFID_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/numfid)
set(NUMFID_INSTALL_PROFILESDIR ${CMAKE_INSTALL_DATADIR}/numfid/profiles)
# The installed CLI's way from its own directory to the profiles ("../share/numfid/profiles"),
# compiled into numfid::numerics (profile_directory(), numerics/CMakeLists.txt).
file(RELATIVE_PATH NUMFID_PROFILES_FROM_BINDIR /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${NUMFID_INSTALL_PROFILESDIR})

# _numfid_find_dependency(DEP KEY_OUT CODE_OUT PC_OUT)
#   For a third-party target DEP that an installed library links (PUBLIC or PRIVATE: a static
#   library needs its private dependencies at the consumer's link), KEY_OUT names the package,
#   CODE_OUT is what numfidConfig.cmake runs to define DEP again, PC_OUT the pkg-config module
#   providing it (empty: none needed). A dependency not listed here is a configure error, so a
#   new one cannot silently break the installed package.
function(_numfid_find_dependency dep key_out code_out pc_out)
  set(pc "")
  if(dep MATCHES "^fmt::")
    set(key fmt)
    set(code "find_dependency(fmt CONFIG)")
    set(pc fmt)
  elseif(dep MATCHES "^yaml-cpp")
    set(key yaml-cpp)
    set(code "find_dependency(yaml-cpp CONFIG)
if(TARGET yaml-cpp AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)  # yaml-cpp 0.7 (bookworm) exports plain `yaml-cpp`
endif()")
    set(pc yaml-cpp)
  elseif(dep MATCHES "^nlohmann_json::")
    set(key nlohmann_json)
    set(code "find_dependency(nlohmann_json CONFIG)")
    set(pc nlohmann_json)
  elseif(dep MATCHES "^PkgConfig::(.+)$")
    # MPFR and GMP have no CMake config (DESIGN.md): the same pkg_check_modules prefix as the
    # root CMakeLists.txt, so that the exported PkgConfig::<prefix> names resolve.
    set(prefix ${CMAKE_MATCH_1})
    set(module "${${prefix}_MODULE_NAME}")
    if(NOT module)
      message(FATAL_ERROR "numfid packaging: no pkg-config module recorded for ${dep}")
    endif()
    set(key ${dep})
    set(code "if(NOT TARGET ${dep})
  find_dependency(PkgConfig)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    set(numfid_FOUND FALSE)
    set(numfid_NOT_FOUND_MESSAGE \"numfid needs the pkg-config module ${module} (not found)\")
    return()
  endif()
endif()")
    set(pc ${module})
  elseif(dep MATCHES "^GTest::")
    set(key GTest)
    set(code "find_dependency(GTest CONFIG)")
    set(pc gtest)
  elseif(dep MATCHES "^Boost::")
    set(key Boost)
    set(code "find_dependency(Boost)")
  elseif(dep STREQUAL "Threads::Threads")
    set(key Threads)
    set(code "find_dependency(Threads)")
  else()
    message(FATAL_ERROR "numfid packaging: an installed library links ${dep}; teach "
                        "_numfid_find_dependency in cmake/numfid_install.cmake how to find it")
  endif()
  set(${key_out} "${key}" PARENT_SCOPE)
  set(${code_out} "${code}" PARENT_SCOPE)
  set(${pc_out} "${pc}" PARENT_SCOPE)
endfunction()

# _numfid_uses_gtest(TARGET OUT): whether TARGET links GoogleTest (numfid::gtest). Such a library
# stays out of the umbrella numfid::numfid and numfid.pc: linking numfid never drags in gtest.
function(_numfid_uses_gtest target out)
  get_target_property(deps ${target} LINK_LIBRARIES)
  set(uses FALSE)
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^GTest::")
      set(uses TRUE)
    endif()
  endforeach()
  set(${out} ${uses} PARENT_SCOPE)
endfunction()

function(numfid_package)
  get_property(libs GLOBAL PROPERTY NUMFID_PACKAGE_LIBRARIES)

  # numfid::numfid: every library except the gtest ones (also for add_subdirectory users).
  set(umbrella_libs "")
  foreach(lib IN LISTS libs)
    _numfid_uses_gtest(${lib} uses_gtest)
    if(NOT uses_gtest)
      list(APPEND umbrella_libs ${lib})
    endif()
  endforeach()
  add_library(numfid_numfid INTERFACE)
  add_library(numfid::numfid ALIAS numfid_numfid)
  set_target_properties(numfid_numfid PROPERTIES EXPORT_NAME numfid)
  target_link_libraries(numfid_numfid INTERFACE ${umbrella_libs})

  if(NOT NUMFID_INSTALL)
    return()
  endif()

  # Libraries and their headers: include/numfid/<folder>/*.h, the umbrella headers of
  # include/numfid/ beside them.
  install(TARGETS ${libs} numfid_numfid EXPORT numfidTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  foreach(lib IN LISTS libs)
    get_target_property(folder ${lib} NUMFID_HEADER_FOLDER)
    file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.h)
    # Internal headers (detail.h, *_detail.h: shared by a library's own sources, some with
    # MPFR types) are not part of the package; no public header includes them.
    list(FILTER headers EXCLUDE REGEX "(^|/)([a-z_]+_)?detail\\.h$")
    install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/numfid/${folder})
  endforeach()
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/numfid/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/numfid
          FILES_MATCHING PATTERN "*.h")

  # The CLI (exported as numfid::cli, for consumers' add_test) and the profiles. The installed
  # CLI finds the profiles relative to itself (bin/../share/numfid/profiles, profile_directory()).
  set_target_properties(numfid PROPERTIES EXPORT_NAME cli)
  install(TARGETS numfid EXPORT numfidTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiles/ DESTINATION ${NUMFID_INSTALL_PROFILESDIR}
          FILES_MATCHING PATTERN "*.yaml")

  # A consumer program is not in bin/ and a static library cannot find its own installed file at
  # run time, but the consumer's build knows where the package is: the installed numfid::numerics
  # compiles numfid_package_profiles.cpp into every program linking it, which defines the weak
  # hook numfid_package_profile_directory() that profile_directory() asks
  # (numerics/profile.cpp). $<INSTALL_PREFIX> keeps the prefix relocatable. A build-tree or
  # add_subdirectory user gets neither, and profile_directory() falls back to the source tree.
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/numfid_package_profiles.cpp DESTINATION ${NUMFID_INSTALL_CMAKEDIR})
  target_sources(numfid_numerics INTERFACE
    "$<INSTALL_INTERFACE:$<INSTALL_PREFIX>/${NUMFID_INSTALL_CMAKEDIR}/numfid_package_profiles.cpp>")
  target_compile_definitions(numfid_numerics INTERFACE
    "$<INSTALL_INTERFACE:NUMFID_PACKAGE_PROFILES=\"$<INSTALL_PREFIX>/${NUMFID_INSTALL_PROFILESDIR}\">")

  # What numfidConfig.cmake must find again, and what numfid.pc requires.
  set(keys "")
  set(config_dependencies "")
  set(pc_requires "")
  foreach(lib IN LISTS libs)
    get_target_property(deps ${lib} LINK_LIBRARIES)
    list(FIND umbrella_libs ${lib} in_umbrella)
    foreach(dep IN LISTS deps)
      if(dep MATCHES "^numfid(::|_)")
        string(REGEX REPLACE "^numfid::" "numfid_" dep_target "${dep}")
        if(NOT dep_target IN_LIST libs)
          message(FATAL_ERROR "numfid packaging: installed ${lib} links ${dep}, which is INTERNAL")
        endif()
        continue()
      endif()
      _numfid_find_dependency(${dep} key code pc)
      if(NOT key IN_LIST keys)
        list(APPEND keys ${key})
        string(APPEND config_dependencies "${code}\n")
      endif()
      if(pc AND in_umbrella GREATER -1 AND NOT pc IN_LIST pc_requires)
        list(APPEND pc_requires ${pc})
      endif()
    endforeach()
  endforeach()
  set(NUMFID_CONFIG_DEPENDENCIES "${config_dependencies}")
  set(NUMFID_CONFIG_COMPONENTS "")
  foreach(lib IN LISTS libs)
    get_target_property(name ${lib} EXPORT_NAME)
    string(APPEND NUMFID_CONFIG_COMPONENTS "set(numfid_${name}_FOUND TRUE)\n")
  endforeach()

  install(EXPORT numfidTargets NAMESPACE numfid:: DESTINATION ${NUMFID_INSTALL_CMAKEDIR})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/numfidConfig.cmake.in
    ${PROJECT_BINARY_DIR}/numfidConfig.cmake
    INSTALL_DESTINATION ${NUMFID_INSTALL_CMAKEDIR}
    PATH_VARS NUMFID_INSTALL_PROFILESDIR)
  # SameMajorVersion: a consumer asking for 1.2 accepts 1.5 (same API, more features) but not
  # 2.0, where a major bump marks an API break; AnyNewerVersion would accept that break.
  # (While the major version is 0, 0.1 requested accepts any 0.x >= 0.1.)
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/numfidConfigVersion.cmake
    COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/numfidConfig.cmake ${PROJECT_BINARY_DIR}/numfidConfigVersion.cmake
          DESTINATION ${NUMFID_INSTALL_CMAKEDIR})

  # numfid.pc (the umbrella's libraries, dependents first). The libraries are static: the
  # third-party ones they need are in Requires.private, used by `pkg-config --static --libs`.
  set(NUMFID_PC_LIBS "")
  set(reversed ${umbrella_libs})
  list(REVERSE reversed)
  foreach(lib IN LISTS reversed)
    string(APPEND NUMFID_PC_LIBS " -l${lib}")
  endforeach()
  list(JOIN pc_requires " " NUMFID_PC_REQUIRES_PRIVATE)
  file(RELATIVE_PATH NUMFID_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" NUMFID_PC_TO_PREFIX "${NUMFID_PC_TO_PREFIX}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/numfid.pc.in ${PROJECT_BINARY_DIR}/numfid.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/numfid.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
