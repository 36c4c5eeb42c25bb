numfid_add_test(profile_test SOURCES profile_test.cpp DEPS numfid::numerics)
