#include "report_model_block.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report_common.hpp"
#include "report_timing.hpp"

namespace gelu::report {

std::string run_model_block(bool quick, const std::string& out_file) {
  const char* py = std::getenv("GELU_PYTHON");
  const std::string python = py && *py ? py : GELU_PYTHON_DEFAULT;
  const char* pkg = std::getenv("GELU_PYTHON_PACKAGE_DIR");
  const std::string package = pkg && *pkg ? pkg : GELU_PYTHON_PACKAGE_DIR;
  const std::string script = report_script("report_model_block.py");
  if (!std::filesystem::exists(python) || !std::filesystem::exists(script))
    return "## Model block\n\nNot measured: no " + python + " or script.\n";
  progress("model block (GPT-2 MLP, 4 variants, %s)\n",
           quick ? "1 thread" : "1 and 2 threads");
  std::filesystem::remove(out_file);
  // Its output goes to out_file only: the report prints the section itself.
  const std::string cmd = "'" + python + "' '" + script + "' --package-dir '" +
                          package + "' --out '" + out_file + "'" +
                          (quick ? " --threads 1 --steps 3"
                                 : " --threads 1,2 --steps 7") +
                          " > /dev/null";
  std::fflush(stdout);
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out_file);
  if (!in)
    return "## Model block\n\nNot measured: the script failed (exit " +
           std::to_string(rc) + ").\n";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gelu::report
