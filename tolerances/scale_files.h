// The scale files a claim names (--scale-a FILE, --scale-b FILE, --out-scale FILE): read into
// the claim by one function, which the CLI (check, emulate), the gate (its cases' scale_a,
// scale_b and out_scale keys, and files named in a case's claim) and the Python module call.
// The file format itself is io's read_scales (io/tensor_io.h).
#pragma once

#include "tolerances/check.h"

namespace numfid {

/// Reads every scale file `claim` names whose values are not in it yet (quant.scale_a,
/// quant.scale_b, quant.out_scale: a number given in the claim text is kept) with
/// read_scales. InputError "--scale-a: FILE: ..." naming the option and the file.
void read_claim_scale_files(ClaimSpec& claim);

}  // namespace numfid
