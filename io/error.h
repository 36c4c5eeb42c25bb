// InputError, the one exception type for bad input, is declared in formats/error.h (the
// lowest layer, so that the check pipeline in tolerances/ throws it too); io keeps this
// header for its includers.
#pragma once

#include "formats/error.h"
