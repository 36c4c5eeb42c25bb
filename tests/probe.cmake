# Probes: FPRev tree reconstruction, blind recovery of the built-in plans and profiles from
# their own emulated outputs, and independent black boxes (plain C++ float loops).
numfid_add_test(probe_test SOURCES probe_test.cpp DEPS numfid::numerics TIMEOUT 600)
# The block-FMA parameter search, blind (no presets), against every NVIDIA tensor-core profile
# and the vectors recorded on the GPUs (tests/data/tensor-core-vectors; the full set when present).
numfid_add_test(probe_blockfma_test SOURCES probe_blockfma_test.cpp DEPS numfid::numerics fmt::fmt TIMEOUT 900)
target_compile_definitions(probe_blockfma_test PRIVATE ${NUMFID_TENSOR_CORE_DATA})
