// `gelu-fusion plan`: prints the tiling plan the op layer would use for
// given shapes on this machine (or a described one).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.hpp"
#include "core/op_table.hpp"
#include "core/plan.hpp"
#include "gelu/gelu.hpp"

namespace {

using gelu::core::Machine;

std::vector<int64_t> parse_shape(const std::string& s) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t x = s.find('x', pos);
    const std::string part = s.substr(
        pos, x == std::string::npos ? std::string::npos : x - pos);
    size_t used = 0;
    long long v = std::stoll(part, &used);
    if (used != part.size() || v < 0) throw gelu::Error("bad shape '" + s + "'");
    dims.push_back(v);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return dims;
}

int run_plan(const std::vector<std::string>& args) {
  std::string op = "gelu";
  gelu::DType dtype = gelu::DType::f32;
  int threads = 0;
  Machine m = gelu::core::this_machine();
  std::vector<std::string> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw gelu::Error(a + " needs a value");
      return args[++i];
    };
    if (a == "--op") op = next();
    else if (a == "--dtype") dtype = gelu::parse_dtype(next());
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--cores") m.cores = std::stoi(next());
    else if (a == "--l1") m.l1d_bytes = std::stoll(next()) << 10;
    else if (a == "--l2") m.l2_bytes = std::stoll(next()) << 10;
    else if (a == "--l3") m.l3_bytes = std::stoll(next()) << 10;
    else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: gelu-fusion plan [--op NAME] [--dtype f32|bf16|f16] [--threads N]\n"
          "                        [--cores N] [--l1 KiB] [--l2 KiB] [--l3 KiB] "
          "SHAPE...\n"
          "SHAPE is dims joined by 'x' (e.g. 33554432 or 8192x4096); for geglu the\n"
          "last dimension is 2H. Prints the tasks and threads the op layer uses.\n");
      return 0;
    } else shapes.push_back(a);
  }
  const gelu::core::OpDecl* info = gelu::core::find_op(op);
  if (!info) throw gelu::Error("unknown op '" + op + "'");
  if (shapes.empty()) shapes = {"4096", "262144", "33554432", "8192x4096", "4194304x8"};
  std::printf("machine: %s\nop: %s (%d streams)  dtype: %s  threads requested: %d\n",
              gelu::core::describe_machine(m).c_str(), info->name, info->streams(),
              gelu::dtype_name(dtype), threads);
  for (const auto& s : shapes) {
    const std::vector<int64_t> dims = parse_shape(s);
    const auto p = gelu::core::plan_op(info->id, dims, dtype,
                                       {gelu::Approx::none, threads}, m);
    std::printf("%-16s rows=%lld cols=%lld  %s\n", s.c_str(),
                static_cast<long long>(p.rows), static_cast<long long>(p.cols),
                gelu::core::describe_plan(p).c_str());
  }
  return 0;
}

}  // namespace

GELU_COMMAND("plan", "print the tiling plan (threads, blocks) for given shapes",
             run_plan);
