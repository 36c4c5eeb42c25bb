// Probes, internal: what the search (probe.cpp) and the block-FMA parameter search
// (probe_blockfma.cpp) share. Not part of the public API (numerics/probe.h).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "numerics/probe.h"

namespace numfid::detail {

/// A row of a probe call: term values a[k] and b[k] (b empty: ones). Infinite and NaN values
/// are sent as such where the input format has them.
struct ProbeRow {
  std::vector<double> a, b;
};

/// Calls made to the black box with its answers.
using ProbeEvidence = std::vector<std::pair<ProbeCall, std::vector<Bits>>>;

/// True when `m` reproduces every output of `calls` (the count of differing outputs in
/// *mismatches when given; without it the first difference ends the check).
bool reproduces(const ProbeModel& m, const ProbeEvidence& calls, std::int64_t* mismatches = nullptr);

/// Whether the block-FMA parameter search applies: inputs of at most 11 significand bits
/// (fp16, bf16, tf32, fp8) and an output the block-FMA model can encode.
bool block_fma_searchable(const ProbeOptions& o);

/// The three crafted calls of the block-FMA parameter search (docs/probes.md): `arithmetic`
/// (two non-zero terms per row: window, result precision, rounding, normalisation),
/// `structure` (full rows: block size, instruction, interleave, where the addend enters),
/// `specials` (tiny terms, subnormal inputs, overflow, inf/NaN).
std::vector<ProbeRow> block_fma_arithmetic_rows(const ProbeOptions& o, std::mt19937_64& g);
std::vector<ProbeRow> block_fma_structure_rows(const ProbeOptions& o, std::mt19937_64& g);
std::vector<ProbeRow> block_fma_special_rows(const ProbeOptions& o, std::mt19937_64& g);

/// The outcome of the constrained search.
struct BlockFmaSearchResult {
  std::vector<ProbeModel> models;  ///< every model of the searched space consistent with all evidence
  std::int64_t tried = 0;          ///< models evaluated over the three stages
};

/// The constrained search: stage 1 enumerates result precision × window × final rounding ×
/// normalisation × alignment rounding against `arithmetic`; stage 2 block size × instruction
/// size × interleave × addend entry for each survivor against `structure` and `order`;
/// stage 3 alignment floor × DAZ × FTZ × datapath × overflow × NaN against `specials`.
/// The survivors must then reproduce all four evidence sets.
BlockFmaSearchResult search_block_fma(const ProbeOptions& o, const ProbeEvidence& arithmetic,
                                      const ProbeEvidence& structure, const ProbeEvidence& specials,
                                      const ProbeEvidence& order, const std::function<void(std::string_view)>& say);

}  // namespace numfid::detail
