// In place (an output that is the very buffer of an input) gives the same
// bits as out of place, and results are bit-identical for any thread count,
// dbias included.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "core/op_table.hpp"
#include "core/plan.hpp"

#include "test_support.hpp"

namespace gelu::testing {
namespace {

// The first large enough that every op's plan has several tasks, so
// several threads, for an L2 of up to 4 MiB (tiles are half of L2: 301 rows
// gave geglu bf16 a single task with the 2 MiB L2 of a Xeon); even last
// dimensions (geglu). Besides the first, narrow rows (one flat pass, dbias
// by spans, geglu's halves deinterleaved) and rows past 64K columns.
const std::vector<std::vector<int64_t>> kShapes = {
    {1201, 1022}, {300001, 2}, {60001, 6}, {10001, 62}, {2049, 130}, {5, 65538}};

struct Inputs {
  std::vector<int64_t> shape;
  Buffer a, b, dy, bias, half;  // half: dy of geglu, [.., H]
  Inputs(DType t, const std::vector<int64_t>& s)
      : shape(s),
        a(t, s),
        b(t, s),
        dy(t, s),
        bias(t, {s[1]}),
        half(t, {s[0], s[1] / 2}) {
    fill_inputs(a, 21);
    fill_inputs(b, 22, 1.0f);
    fill_inputs(dy, 23, 1.0f);
    fill_inputs(bias, 24, 1.0f);
    fill_inputs(half, 25, 1.0f);
  }
};

class InPlaceAndThreads
    : public ::testing::TestWithParam<std::tuple<DType, std::vector<int64_t>>> {};

TEST_P(InPlaceAndThreads, InPlaceMatchesOutOfPlace) {
  const DType t = std::get<0>(GetParam());
  const Options o{Approx::none, 0};
  Inputs in(t, std::get<1>(GetParam()));
  const std::vector<int64_t>& shape = in.shape;
  auto same = [](const Buffer& p, const Buffer& q, const char* what) {
    EXPECT_EQ(p.raw(), q.raw()) << what << " in place differs";
  };
  {  // gelu: y = x
    Buffer y(t, shape), x = in.a;
    gelu::gelu(in.a.cref(), y.ref(), o);
    gelu::gelu(x.cref(), x.ref(), o);
    same(x, y, "gelu");
  }
  {  // gelu_backward: dx = dy, then dx = x
    Buffer dx(t, shape), d = in.dy, x = in.a;
    gelu::gelu_backward(in.dy.cref(), in.a.cref(), dx.ref(), o);
    gelu::gelu_backward(d.cref(), in.a.cref(), d.ref(), o);
    gelu::gelu_backward(in.dy.cref(), x.cref(), x.ref(), o);
    same(d, dx, "gelu_backward dx=dy");
    same(x, dx, "gelu_backward dx=x");
  }
  {  // bias_gelu: y = x
    Buffer y(t, shape), x = in.a;
    gelu::bias_gelu(in.a.cref(), in.bias.cref(), y.ref(), o);
    gelu::bias_gelu(x.cref(), in.bias.cref(), x.ref(), o);
    same(x, y, "bias_gelu");
  }
  {  // bias_gelu_backward: dx = dy and dbias = bias
    Buffer dx(t, shape), db(t, {shape[1]}), d = in.dy, bias = in.bias;
    gelu::bias_gelu_backward(in.dy.cref(), in.a.cref(), in.bias.cref(), dx.ref(),
                             db.ref(), o);
    gelu::bias_gelu_backward(d.cref(), in.a.cref(), bias.cref(), d.ref(), bias.ref(),
                             o);
    same(d, dx, "bias_gelu_backward dx");
    same(bias, db, "bias_gelu_backward dbias");
  }
  {  // add_gelu: y = a, y = b; add_gelu_backward: dx = dy, a, b
    Buffer y(t, shape), a = in.a, b = in.b;
    gelu::add_gelu(in.a.cref(), in.b.cref(), y.ref(), o);
    gelu::add_gelu(a.cref(), in.b.cref(), a.ref(), o);
    gelu::add_gelu(in.a.cref(), b.cref(), b.ref(), o);
    same(a, y, "add_gelu y=a");
    same(b, y, "add_gelu y=b");
    Buffer dx(t, shape), d = in.dy, a2 = in.a;
    gelu::add_gelu_backward(in.dy.cref(), in.a.cref(), in.b.cref(), dx.ref(), o);
    gelu::add_gelu_backward(d.cref(), in.a.cref(), in.b.cref(), d.ref(), o);
    gelu::add_gelu_backward(in.dy.cref(), a2.cref(), in.b.cref(), a2.ref(), o);
    same(d, dx, "add_gelu_backward dx=dy");
    same(a2, dx, "add_gelu_backward dx=a");
  }
  {  // geglu_backward: dx = x
    Buffer dx(t, shape), x = in.a;
    gelu::geglu_backward(in.half.cref(), in.a.cref(), dx.ref(), o);
    gelu::geglu_backward(in.half.cref(), x.cref(), x.ref(), o);
    same(x, dx, "geglu_backward");
  }
}

// Runs every op with `threads` and returns all output bytes, concatenated;
// `team[op]` gets the number of threads each op's call ran on.
std::vector<unsigned char> all_outputs(DType t, int threads, const Inputs& in,
                                       std::map<core::OpId, int>& team) {
  using core::OpId;
  const Options o{Approx::tanh, threads};
  const std::vector<int64_t>& shape = in.shape;
  Buffer y(t, shape), dx(t, shape), yb(t, shape), dxb(t, shape),
      db(DType::f32, {shape[1]}), ya(t, shape), dxa(t, shape), yg(t, in.half.shape()),
      dxg(t, shape);
  auto ran = [&](OpId id) { team[id] = core::last_run_threads(); };
  gelu::gelu(in.a.cref(), y.ref(), o);
  ran(OpId::gelu);
  gelu::gelu_backward(in.dy.cref(), in.a.cref(), dx.ref(), o);
  ran(OpId::gelu_backward);
  gelu::bias_gelu(in.a.cref(), in.bias.cref(), yb.ref(), o);
  ran(OpId::bias_gelu);
  gelu::bias_gelu_backward(in.dy.cref(), in.a.cref(), in.bias.cref(), dxb.ref(),
                           db.ref(), o);
  ran(OpId::bias_gelu_backward);
  gelu::add_gelu(in.a.cref(), in.b.cref(), ya.ref(), o);
  ran(OpId::add_gelu);
  gelu::add_gelu_backward(in.dy.cref(), in.a.cref(), in.b.cref(), dxa.ref(), o);
  ran(OpId::add_gelu_backward);
  gelu::geglu(in.a.cref(), yg.ref(), o);
  ran(OpId::geglu);
  gelu::geglu_backward(in.half.cref(), in.a.cref(), dxg.ref(), o);
  ran(OpId::geglu_backward);
  std::vector<unsigned char> all;
  for (const Buffer* b : {&y, &dx, &yb, &dxb, &db, &ya, &dxa, &yg, &dxg})
    all.insert(all.end(), b->raw().begin(), b->raw().end());
  return all;
}

// Compares one thread with several. That the comparison is not one thread
// against one thread is checked twice: the plan of every op at the first shape
// asks for several threads when they are requested (else that shape is too
// small for the threading threshold), and every call planned on several
// threads then ran on several.
TEST_P(InPlaceAndThreads, BitIdenticalForAnyThreadCount) {
  const DType t = std::get<0>(GetParam());
  Inputs in(t, std::get<1>(GetParam()));
  std::map<core::OpId, int> team;
  const auto one = all_outputs(t, 1, in, team);
  for (const auto& [id, n] : team) EXPECT_EQ(n, 1) << core::op_decl(id).name;
  ASSERT_EQ(team.size(), core::all_ops().size()) << "every op of the table runs";
  for (int threads : {2, 3, 4, 0}) {
    team.clear();
    EXPECT_EQ(all_outputs(t, threads, in, team), one) << threads;
    if (threads == 0) continue;  // every core: one on a one-core machine
    for (const auto& [id, n] : team) {
      const core::OpDecl& op = core::op_decl(id);
      // Every op's primary tensor (x or a) has the test's shape here. The
      // first shape must plan several threads for every op; the others may
      // plan one where the op's tiling allows no more (a few wide rows of
      // bias_gelu_backward: one row block of dbias, one column tile).
      const core::Plan p = core::plan_op(id, in.shape, t, {Approx::tanh, threads});
      if (in.shape == kShapes.front()) {
        EXPECT_GT(p.threads, 1) << op.name << ": plan at " << threads << " threads";
      }
      if (p.threads == 1) continue;
      EXPECT_GT(n, 1) << op.name << ": ran on one thread with " << threads
                      << " requested";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, InPlaceAndThreads,
                         ::testing::Combine(::testing::ValuesIn(kDTypes),
                                            ::testing::ValuesIn(kShapes)),
                         [](const auto& i) {
                           std::string s = dtype_name(std::get<0>(i.param));
                           // append, not "_" + std::to_string(d): GCC 12 warns
                           // (-Wrestrict, a false positive) on a literal +
                           // std::string&& it inlines.
                           for (int64_t d : std::get<1>(i.param))
                             s.append("_").append(std::to_string(d));
                           return s;
                         });

}  // namespace
}  // namespace gelu::testing
