// Writes the standard valid 1P1D test package (tests/power/fixture.h) to a directory, for the CLI
// end-to-end script. Usage: power_make_package DIR [valid|gap|canary-fail]
// Prints the power dir and result root, one per line.
#include <cstdio>
#include <string>

#include "power/fixture.h"

int main(int argc, char** argv) {
  using namespace gpulse::power::testing;
  if (argc < 2) {
    std::fprintf(stderr, "usage: power_make_package DIR [valid|gap]\n");
    return 2;
  }
  std::string kind = argc > 2 ? argv[2] : "valid";
  Package p;
  BuildValid1P1D(p);
  if (kind == "gap")
    std::erase_if(p.rows, [](const CsvRow& r) { return r.seq > 30 && r.seq < 36; });
  p.Write();
  fs::path out(argv[1]);
  fs::create_directories(out);
  fs::copy(p.tmp.path() / "logs", out / "logs",
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::printf("%s\n%s\n", (out / "logs/power").c_str(), (out / "logs").c_str());
  return 0;
}
