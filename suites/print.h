// PrintTo for numfid's value types, so that gtest and gMock print them readably in failure
// messages (googletest docs/advanced.md, "Teaching GoogleTest How to Print Your Values").
// Found by argument-dependent lookup: they live in namespace numfid beside the types.
#pragma once

#include <ostream>
#include <string>

#include "tolerances/check.h"

namespace numfid {

/// A pattern without its format: "Bits{0x3f80}" (the width is unknown, so the hex is not padded).
void PrintTo(Bits b, std::ostream* os);
/// "bf16" (the format's name).
void PrintTo(const FormatSpec& f, std::ostream* os);
/// "TensorData 'A' bf16 [4, 8]": format, shape and name, never the data.
void PrintTo(const TensorData& t, std::ostream* os);
/// The verdict line: "CheckResult matmul: DEFECT (proven) — 3 of 16 elements lie outside ...".
void PrintTo(const CheckResult& r, std::ostream* os);
/// The claim in its text form: "ClaimSpec{--in bf16 --acc fp32 --out bf16}".
void PrintTo(const ClaimSpec& c, std::ostream* os);

namespace testing {

/// A pattern of format `f` decoded for messages: "0x3fc0 (+1.5: sign 0, exponent 0x7f, significand 0x40)".
std::string describe_bits(const FormatSpec& f, Bits b);

}  // namespace testing
}  // namespace numfid
