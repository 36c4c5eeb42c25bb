// numfid::gtest: GoogleTest assertions, gMock matchers and conformance suites over the check
// pipeline, for kernel projects (link numfid::gtest; docs/gtest.md). Includes the check
// pipeline itself (tolerances/check.h): numfid::view, numfid::parse_claim, numfid::check_*.
#pragma once

#include "tolerances/check.h"

#include "suites/adapters.h"
#include "suites/assertions.h"
#include "suites/bits_eq.h"
#include "suites/cast_conformance.h"
#include "suites/conformance.h"
#include "suites/determinism.h"
#include "suites/matchers.h"
#include "suites/print.h"
#include "suites/quant_conformance.h"
