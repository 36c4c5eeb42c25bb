// numfid command-line entry point (placeholder until the CLI lands).
#include "formats/arith.h"
#include "formats/convert.h"
#include <fmt/format.h>
int main() {
  using namespace numfid;
  for (const FormatSpec* f : all_formats) fmt::print("{} max={}\n", f->name, max_finite(*f));
  return 0;
}
