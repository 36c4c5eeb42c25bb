# io layer (io/): .npy and safetensors readers/writers, the Tensor model. numpy-written
# reference files live in tests/data/io (made by make_npy_files.py there). About 2 s in all.
foreach(t io_test io_npy_test io_safetensors_test)
  numfid_add_test(${t} SOURCES ${t}.cpp DEPS numfid::io fmt::fmt)
  target_compile_definitions(${t} PRIVATE NUMFID_IO_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/io")
endforeach()
