numfid_add_test(blockfma_bound_test SOURCES blockfma_bound_test.cpp DEPS numfid::tolerances numfid::numerics numfid::oracles)
