#include "report_case.hpp"

#include "core/run_op.hpp"

namespace gelu::report {

using core::Role;

Buffer& tensor_buffer(Case& c, int i) {
  const core::OpDecl& op = op_decl(c.op);
  switch (op.tensors[i].role) {
    case Role::x: return c.x;
    case Role::addend: return c.b;
    case Role::dy: return c.dy;
    case Role::y: return op.is_backward() ? c.value : c.out;
    case Role::dx: return c.out;
    case Role::dbias: return c.dbias;
  }
  return c.out;
}

namespace {

// The case's tensor shapes and dtypes, without buffers: the op's required
// tensors (an optional output is not requested; the report times the op as
// its callers run it by default).
void lay_out(Case& c) {
  const core::OpDecl& op = op_decl(c.op);
  // The primary tensor: [rows, cols], or [rows, 2 cols] for a gated op.
  const std::vector<int64_t> primary{
      c.shape.rows, op.kind == core::OpKind::gated ? 2 * c.shape.cols : c.shape.cols};
  for (int i = 0; i < op.required_tensors(); ++i) {
    c.shapes.push_back(core::tensor_shape(op, i, primary));
    // dbias in f32: the dtype a mixed-precision training step keeps it in.
    c.dtypes.push_back(op.tensors[i].role == Role::dbias ? DType::f32 : c.dtype);
  }
}

}  // namespace

Case make_case(OpId id, DType t, Shape s, bool fill) {
  const core::OpDecl& op = op_decl(id);
  Case c{id, t, s, {}, {}, {}, {}, {}, {}, 0, 0, 0, 0, {}, {}};
  lay_out(c);
  for (int i = 0; i < op.required_tensors(); ++i) {
    const Role r = op.tensors[i].role;
    const int64_t n = numel(c.shapes[i]);
    tensor_buffer(c, i) = Buffer(n * static_cast<int64_t>(dtype_size(c.dtypes[i])));
    if (r == Role::x) c.x_elems = n;
    if (r == Role::addend) c.b_elems = n;
    if (r == Role::dy) c.dy_elems = n;
    if (&tensor_buffer(c, i) == &c.out) c.out_elems = n;
  }
  if (fill) {
    fill_normal(t, c.x.data(), c.x_elems, 1.f, 1);  // N(0, 1), as activations are
    if (c.b_elems) fill_uniform(t, c.b.data(), c.b_elems, -.5f, .5f, 2);
    if (c.dy_elems) fill_uniform(t, c.dy.data(), c.dy_elems, -1.f, 1.f, 3);
  }
  return c;
}

void fill_inputs(Case& c, const InputScale& s, const Case* unit) {
  const DType t = c.dtype;
  if (s.sigma == 0) {
    const float margin = c.b_elems ? 1.f : 0.f;
    fill_uniform(t, c.x.data(), c.x_elems, kTailLo + margin, kTailHi - margin, 7);
    if (c.b_elems) fill_uniform(t, c.b.data(), c.b_elems, -1.f, 1.f, 8);
    return;
  }
  if (unit && unit->x_elems == c.x_elems) {
    for (int64_t i = 0; i < c.x_elems; ++i)
      store(t, c.x.data(), i, s.sigma * load(t, unit->x.data(), i));
  } else {
    fill_normal(t, c.x.data(), c.x_elems, s.sigma, 1);
  }
  if (c.b_elems) fill_normal(t, c.b.data(), c.b_elems, 1.f, 2);
}

int64_t traffic_bytes(OpId id, DType t, Shape s) {
  Case c{id, t, s, {}, {}, {}, {}, {}, {}, 0, 0, 0, 0, {}, {}};
  lay_out(c);
  int64_t bytes = 0;
  for (size_t i = 0; i < c.shapes.size(); ++i)
    bytes += numel(c.shapes[i]) * static_cast<int64_t>(dtype_size(c.dtypes[i]));
  return bytes;
}

void run_ours(Case& c, Approx form, int threads) {
  const core::OpDecl& op = op_decl(c.op);
  std::vector<TensorRef> t;
  for (int i = 0; i < op.required_tensors(); ++i)
    t.push_back({tensor_buffer(c, i).data(), c.dtypes[i], c.shapes[i]});
  core::call_op(op, t, Options{form, threads});
}

}  // namespace gelu::report
