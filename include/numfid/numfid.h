// numfid: the umbrella header for programs that use the numfid libraries (link numfid::numfid).
// Every public header of the formats, numerics, oracles, tolerances and io layers, listed
// explicitly. Installed as <numfid/numfid.h>; the layer headers beside it keep their own
// "formats/x.h" includes (see numfid_add_library in cmake/numfid.cmake for the layout).
#pragma once

// formats: the FormatSpec table, bit-exact rounding, conversion and arithmetic, MX blocks.
#include "formats/arith.h"
#include "formats/bulk.h"
#include "formats/convert.h"
#include "formats/error.h"
#include "formats/exact.h"
#include "formats/format_spec.h"
#include "formats/mx.h"
#include "formats/quantize.h"
#include "formats/rounding.h"
#include "formats/ulp.h"
#include "formats/value.h"

// numerics: reduction plans, accumulator, block-FMA and Tensor Engine models, profiles.
#include "numerics/block_fma.h"
#include "numerics/block_fma_ops.h"
#include "numerics/emulate.h"
#include "numerics/int_gemm.h"
#include "numerics/plan.h"
#include "numerics/scaled_gemm.h"
#include "numerics/profile.h"
#include "numerics/tensor_core_presets.h"
#include "numerics/tensor_engine.h"

// oracles: the exact long accumulator and the MPFR oracles (no MPFR type in these headers).
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"

// tolerances: claims, bounds, verdicts and signatures, and the check pipeline.
#include "tolerances/bounds.h"
#include "tolerances/cancel.h"
#include "tolerances/check.h"
#include "tolerances/claim.h"
#include "tolerances/quant_check.h"
#include "tolerances/verdict.h"

// io: tensors in .npy and safetensors files.
#include "io/error.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "io/tensor.h"
#include "io/tensor_io.h"
