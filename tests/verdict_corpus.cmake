# Verdict corpus (tests/verdict_corpus_test.cpp; the corpus in verdict_corpus.h/.cpp, its tables in
# verdict_corpus_report.cpp): legal and defective matmul outputs judged by
# numfid, torch.assert_close and numpy.allclose defaults. The default test (VerdictCorpus.
# ReducedCorpus: 8×8 outputs, K 64/1024/4096) takes about 8 s of CPU in Release; the full one
# (VerdictCorpus.FullCorpus: 16×16, K up to 16384, about 5 min) is labelled exhaustive and
# prints the tables of docs/verdict.md. OpenBLAS (pkg-config openblas, Debian libopenblas-dev)
# adds cblas_sgemm as one more legal source when present.
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
# Both variants compile every source: NUMFID_CORPUS_FULL changes the corpus, not only the test.
set(verdict_corpus_sources verdict_corpus_test.cpp verdict_heldout_test.cpp verdict_corpus.cpp verdict_corpus_report.cpp)
foreach(variant verdict_corpus_test verdict_corpus_exhaustive_test)
  if(variant STREQUAL verdict_corpus_test)
    numfid_add_test(${variant} SOURCES ${verdict_corpus_sources}
      DEPS numfid::tolerances numfid::numerics numfid::oracles fmt::fmt TIMEOUT 300)
  else()
    numfid_add_test(${variant} SOURCES ${verdict_corpus_sources}
      DEPS numfid::tolerances numfid::numerics numfid::oracles fmt::fmt LABELS exhaustive TIMEOUT 3600)
    target_compile_definitions(${variant} PRIVATE NUMFID_CORPUS_FULL=1)
  endif()
  if(OPENBLAS_FOUND)
    target_link_libraries(${variant} PRIVATE PkgConfig::OPENBLAS)
    target_compile_definitions(${variant} PRIVATE NUMFID_HAVE_OPENBLAS=1)
  else()
    message(STATUS "OpenBLAS (pkg-config openblas) not found: ${variant} runs without the cblas_sgemm source")
  endif()
endforeach()
