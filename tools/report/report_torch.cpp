#include "report_torch.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gelu::report {
namespace {

void write_raw(const std::string& path, const Buffer& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(b.data()), b.bytes());
}

std::string python() {
  const char* p = std::getenv("GELU_PYTHON");
  return p && *p ? p : GELU_PYTHON_DEFAULT;
}

// build/python: the PyTorch adapter's package, when it is built.
std::string package_dir() {
  const char* p = std::getenv("GELU_PYTHON_PACKAGE_DIR");
  return p && *p ? p : GELU_PYTHON_PACKAGE_DIR;
}

std::string script() { return report_script("report_torch.py"); }

std::string quote(const std::string& s) { return "'" + s + "'"; }

// "med min max rounds" from the stream.
Stat read_stat(std::istream& in) {
  Stat s;
  in >> s.median >> s.min >> s.max >> s.rounds;
  return s;
}

std::string rest(std::istream& in) {
  std::string r;
  std::getline(in, r);
  if (!r.empty() && r[0] == ' ') r.erase(0, 1);
  return r;
}

}  // namespace

TorchPeer::TorchPeer(std::string work_dir) : dir_(std::move(work_dir)) {
  std::filesystem::create_directories(dir_);
}

int TorchPeer::add_accuracy(const Case& c, Approx form) {
  const int id = next_id_++;
  const std::string base = dir_ + "/acc_" + std::to_string(id) + "_";
  write_raw(base + "x.bin", c.x);
  if (c.b_elems) write_raw(base + "b.bin", c.b);
  if (c.dy_elems) write_raw(base + "dy.bin", c.dy);
  std::ostringstream l;
  l << "acc " << id << ' ' << op_decl(c.op).name << ' ' << approx_name(form) << ' '
    << dtype_name(c.dtype) << ' ' << c.shape.rows << ' ' << c.shape.cols << ' ' << dir_;
  request_.push_back(l.str());
  return id;
}

void TorchPeer::add_throughput(OpId op, Approx form, DType t, Shape s, int threads,
                               int64_t copy_bytes, const TimingPolicy& p,
                               const InputScale* scale) {
  std::ostringstream l;
  l << "tp " << op_decl(op).name << ' ' << approx_name(form) << ' ' << dtype_name(t)
    << ' ' << s.rows << ' ' << s.cols << ' ' << threads << ' ' << copy_bytes << ' '
    << p.min_rounds << ' ' << p.max_rounds << ' ' << p.budget_ns / 1e6 << ' '
    << (scale ? scale->name : "default") << ' ';
  if (scale) l << scale->sigma;
  else l << '-';
  request_.push_back(l.str());
  ++tp_jobs_;
}

void TorchPeer::add_overhead() { request_.push_back("ovh"); }

bool TorchPeer::run() {
  const std::string req = dir_ + "/torch_request.txt";
  const std::string res = dir_ + "/torch_result.txt";
  {
    std::ofstream f(req);
    for (const auto& l : request_) f << l << '\n';
  }
  std::filesystem::remove(res);
  if (!std::filesystem::exists(python()) || !std::filesystem::exists(script())) {
    note_ = "not installed (no " + python() + " or script)";
    return false;
  }
  std::fflush(stdout);
  const std::string cmd = quote(python()) + " " + quote(script()) + " " + quote(req) +
                          " " + quote(res) + " " + quote(package_dir());
  const int rc = std::system(cmd.c_str());
  std::ifstream in(res);
  if (!in) {
    note_ = "script failed (exit " + std::to_string(rc) + ")";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string kind;
    l >> kind;
    if (kind == "error") {
      note_ = rest(l);
      return false;
    }
    if (kind == "version") l >> version_;
    if (kind == "acc") {
      int id;
      std::string status;
      l >> id >> status;
      acc_[id] = status == "ok" ? "" : rest(l);
    }
    if (kind == "tp") {
      std::string op, form, dt, inputs, status;
      int64_t n, cols;
      int threads;
      l >> op >> form >> dt >> n >> threads >> cols >> inputs >> status;
      PeerTime pt;
      if (status == "ok") {
        pt.t = read_stat(l);
        pt.copy = read_stat(l);
        Stat ours = read_stat(l);  // absent when the adapter is not built
        if (l) pt.ours = ours;
      } else {
        pt.note = rest(l);
      }
      tp_[{op, form, dt, n, threads, cols, inputs}] = pt;
    }
    if (kind == "ovh") {
      std::string status;
      l >> status;
      if (status == "ok") overhead_ = read_stat(l).median;
    }
    if (kind == "ovhpy") {
      std::string status;
      l >> status;
      if (status == "ok") {
        f_gelu_ = read_stat(l).median;
        ours_gelu_ = read_stat(l).median;
      } else {
        py_overhead_note_ = rest(l);
      }
    }
  }
  note_.clear();
  return true;
}

bool TorchPeer::accuracy_output(int id, Case& c, std::string* why) const {
  auto it = acc_.find(id);
  if (it == acc_.end()) {
    *why = note_.empty() ? "no result" : note_;
    return false;
  }
  if (!it->second.empty()) {
    *why = it->second;
    return false;
  }
  std::ifstream f(dir_ + "/acc_" + std::to_string(id) + "_out.bin", std::ios::binary);
  f.read(static_cast<char*>(c.out.data()), c.out.bytes());
  if (f.gcount() != c.out.bytes()) {
    *why = "short output";
    return false;
  }
  return true;
}

PeerTime TorchPeer::throughput(const ThroughputRow& r) const {
  auto it = tp_.find({op_decl(r.op).name, approx_name(r.form), dtype_name(r.dtype), r.n,
                      r.threads, r.cols, r.inputs});
  if (it != tp_.end()) return it->second;
  PeerTime pt;
  pt.note = note_.empty() ? "no result" : note_;
  return pt;
}

}  // namespace gelu::report
