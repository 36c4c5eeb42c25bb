# The Python module (python/, docs/python.md): decides whether it is built.
#
# NUMFID_PYTHON (ON by default at the top level): build python/ -> build/python/numfid when
# Python 3 (interpreter + development headers), pybind11 and NumPy are all found; otherwise a
# status message says what is missing and the rest of numfid builds as before.
#
# The interpreter: Python3_EXECUTABLE when given, else Debian's /usr/bin/python3 when it exists,
# the interpreter that Debian's python3-numpy, python3-pybind11 and python3-pytest serve (a
# pyenv or other shim first on PATH usually has none of them).
option(NUMFID_PYTHON "Build the Python module (python/) when Python 3, pybind11 and NumPy are found"
       ${PROJECT_IS_TOP_LEVEL})
set(NUMFID_PYTHON_BUILD OFF)
if(NUMFID_PYTHON AND NUMFID_SANITIZE)
  # An ASan-instrumented extension cannot be loaded into an uninstrumented interpreter.
  message(STATUS "numfid Python module: not built (NUMFID_SANITIZE)")
elseif(NUMFID_PYTHON)
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python interpreter of the numfid module")
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  find_package(pybind11 CONFIG QUIET)
  set(missing "")
  if(NOT Python3_Interpreter_FOUND)
    list(APPEND missing "a Python 3 interpreter")
  elseif(NOT Python3_Development.Module_FOUND)
    list(APPEND missing "the Python ${Python3_VERSION} headers (python3-dev) for ${Python3_EXECUTABLE}")
  endif()
  if(NOT pybind11_FOUND)
    list(APPEND missing "pybind11 (pybind11-dev)")
  endif()
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy" RESULT_VARIABLE numpy_rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT numpy_rc EQUAL 0)
      list(APPEND missing "NumPy for ${Python3_EXECUTABLE} (python3-numpy)")
    endif()
  endif()
  if(missing)
    list(JOIN missing ", " missing)
    message(STATUS "numfid Python module: not built, missing ${missing} (scripts/install-deps installs them; "
                   "-DPython3_EXECUTABLE=... picks another interpreter)")
  else()
    set(NUMFID_PYTHON_BUILD ON)  # python/CMakeLists.txt makes the libraries position-independent
    message(STATUS "numfid Python module: built for ${Python3_EXECUTABLE} (Python ${Python3_VERSION}) into "
                   "${PROJECT_BINARY_DIR}/python")
  endif()
endif()
