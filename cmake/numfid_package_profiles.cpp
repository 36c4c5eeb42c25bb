// Where the installed numfid package keeps its profiles, compiled into each program that links
// the installed numfid::numerics (its INTERFACE_SOURCES; see cmake/numfid_install.cmake): a
// static library cannot locate its own installed file at run time, the consumer's build can.
// numfid::profile_directory() asks this hook after $NUMFID_PROFILES and bin/../share.
// Weak: several targets of one program may each compile this file.
#ifndef NUMFID_PACKAGE_PROFILES
#error "NUMFID_PACKAGE_PROFILES is defined by the installed numfid::numerics target"
#endif

extern "C" const char* numfid_package_profile_directory();  // for -Wmissing-declarations

extern "C" __attribute__((weak)) const char* numfid_package_profile_directory() {
  return NUMFID_PACKAGE_PROFILES;
}
