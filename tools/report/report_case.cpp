#include "report_case.hpp"

namespace gelu::report {

Case make_case(Op op, DType t, Shape s, bool fill) {
  Case c{op, t, s, {}, {}, {}, {}, {}};
  const int64_t n = s.n(), e = static_cast<int64_t>(dtype_size(t));
  const bool geglu = op == Op::geglu || op == Op::geglu_backward;
  c.x_elems = geglu ? 2 * n : n;
  c.out_elems = op == Op::geglu_backward ? 2 * n : n;
  if (op == Op::bias_gelu || op == Op::bias_gelu_backward) c.b_elems = s.cols;
  if (op == Op::add_gelu || op == Op::add_gelu_backward) c.b_elems = n;
  if (op_info(op).backward) c.dy_elems = n;
  c.x = Buffer(c.x_elems * e);
  c.out = Buffer(c.out_elems * e);
  if (c.b_elems) c.b = Buffer(c.b_elems * e);
  if (c.dy_elems) c.dy = Buffer(c.dy_elems * e);
  if (op == Op::bias_gelu_backward) c.dbias = Buffer(s.cols * 4);
  if (fill) {
    fill_normal(t, c.x.data(), c.x_elems, 1.f, 1);  // N(0, 1), as activations are
    if (c.b_elems) fill_uniform(t, c.b.data(), c.b_elems, -.5f, .5f, 2);
    if (c.dy_elems) fill_uniform(t, c.dy.data(), c.dy_elems, -1.f, 1.f, 3);
  }
  return c;
}

void run_ours(Case& c, Approx form, int threads) {
  const DType t = c.dtype;
  const int64_t r = c.shape.rows, k = c.shape.cols;
  const Options o{form, threads};
  const std::vector<int64_t> rc{r, k}, r2c{r, 2 * k}, col{k};
  switch (c.op) {
    case Op::gelu:
      return gelu::gelu({c.x.data(), t, rc}, {c.out.data(), t, rc}, o);
    case Op::gelu_backward:
      return gelu::gelu_backward({c.dy.data(), t, rc}, {c.x.data(), t, rc},
                                 {c.out.data(), t, rc}, o);
    case Op::bias_gelu:
      return gelu::bias_gelu({c.x.data(), t, rc}, {c.b.data(), t, col},
                             {c.out.data(), t, rc}, o);
    case Op::bias_gelu_backward:
      return gelu::bias_gelu_backward(
          {c.dy.data(), t, rc}, {c.x.data(), t, rc}, {c.b.data(), t, col},
          {c.out.data(), t, rc}, {c.dbias.data(), DType::f32, col}, o);
    case Op::add_gelu:
      return gelu::add_gelu({c.x.data(), t, rc}, {c.b.data(), t, rc},
                            {c.out.data(), t, rc}, o);
    case Op::add_gelu_backward:
      return gelu::add_gelu_backward({c.dy.data(), t, rc}, {c.x.data(), t, rc},
                                     {c.b.data(), t, rc},
                                     {c.out.data(), t, rc}, o);
    case Op::geglu:
      return gelu::geglu({c.x.data(), t, r2c}, {c.out.data(), t, rc}, o);
    case Op::geglu_backward:
      return gelu::geglu_backward({c.dy.data(), t, rc}, {c.x.data(), t, r2c},
                                  {c.out.data(), t, r2c}, o);
  }
}

}  // namespace gelu::report
