# Probes: FPRev tree reconstruction, blind recovery of the built-in plans and profiles from
# their own emulated outputs, and independent black boxes (plain C++ float loops).
numfid_add_test(probe_test SOURCES probe_test.cpp DEPS numfid::numerics TIMEOUT 600)
