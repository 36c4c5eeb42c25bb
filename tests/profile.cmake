# Profiles; the nvidia-* profiles against the recorded tensor-core vectors: the subset in the
# repository (always) and the full set when present (see tests/numerics.cmake).
numfid_add_test(profile_test SOURCES profile_test.cpp DEPS numfid::numerics)
target_compile_definitions(profile_test PRIVATE
  NUMFID_TENSOR_CORE_SUBSET="${PROJECT_SOURCE_DIR}/tests/data/tensor-core-vectors"
  NUMFID_TENSOR_CORE_FULL="${PROJECT_SOURCE_DIR}/../shared/data/tensor-core-vectors")
