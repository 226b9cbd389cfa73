"""The functional API: drop-ins for torch.nn.functional.gelu and for
F.gelu(x + bias), F.gelu(a + b) and GeGLU.

Any tensor F.gelu accepts works. The fused kernels run for CPU tensors of
float32, bfloat16 and float16 (the fast path); everything else (float64,
meta, other devices, other layouts) computes PyTorch's own composition with
the same semantics ('quick' as x * sigmoid(1.702 x)), forward and backward.
Mixed dtypes promote as ``a + b`` does (torch.result_type), ``add_gelu``
broadcasts as ``a + b`` does. Outputs keep the layout of a dense input
(transposed, channels_last) as F.gelu's do.

Autograd: backward, double backward and forward-mode AD (fwAD dual tensors,
torch.func.jvp / jacfwd / hessian) for every op; see csrc/autograd.cpp.

In eager mode the fast path calls the ops' C++ entry points directly,
skipping the torch.ops attribute lookups; the checks that pick the kernel
(type, dtype, device, layout) add a few hundred nanoseconds per call.
bench/call_overhead.py measures a call against F.gelu's. Under
torch.compile the same checks run at trace time and the graph holds the op
itself (torch.ops.gelu_fusion.<op>), with its fake kernel (_surface.py).
Tensor-likes with __torch_function__ (torch.fx proxies among them) see
these functions as single calls, as they see F.gelu.
"""
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.overrides import handle_torch_function, has_torch_function

from ._surface import FORM_NAMES, forms_listed

# The ops (OpOverloads, which torch.compile traces) and their raw entry
# points (what an OpOverload calls; eager calls skip its Python __call__:
# docs/notes/pytorch-performance-log.md, bench/call_overhead.py). Under
# torch.compile every call goes through the OpOverload: Dynamo cannot trace
# the raw entry points.
_ops = torch.ops.gelu_fusion
_GELU = _ops.gelu.default
_BIAS_GELU = _ops.bias_gelu.default
_ADD_GELU = _ops.add_gelu.default
_GEGLU = _ops.geglu.default
_compiling = torch.compiler.is_compiling
_FORMS = FORM_NAMES


def _form_ops(op: str) -> dict:
    """The op's per-form eager entry points (csrc/form_ops.cpp), by form, or
    by (form, gelu_half) for an op with halves: each takes only the op's
    tensors, so no call passes a str to parse
    (docs/notes/pytorch-performance-log.md), and gelu's picks the kernel or
    PyTorch's composition itself (in C++, cheaper than reading the tensor's
    attributes here)."""
    table = {}
    for form in _FORMS:
        table[form] = getattr(_ops, f"_{op}_{form}").default._op
        if hasattr(_ops, f"_{op}_{form}_second"):
            table[(form, "first")] = table.pop(form)
            table[(form, "second")] = getattr(_ops, f"_{op}_{form}_second").default._op
    return table


_GELU_BY_FORM = _form_ops("gelu")
# The default form through the op itself (no str passed: none to parse), so
# that torch.jit.trace records the op, not a private entry point; gelu's
# entry points also choose the composition for tensors without a kernel.
_BIAS_GELU_BY_FORM = {**_form_ops("bias_gelu"), "none": _BIAS_GELU._op}
_ADD_GELU_BY_FORM = {**_form_ops("add_gelu"), "none": _ADD_GELU._op}
_GEGLU_BY_FORM = {**_form_ops("geglu"), ("none", "first"): _GEGLU._op}

# torch.jit.is_scripting bound once: eager calls skip two attribute lookups
# (~80 ns, bench/call_overhead.py); TorchScript resolves the alias to the
# same builtin.
_is_scripting = torch.jit.is_scripting

# What the kernels compute: strided CPU tensors of these dtypes.
_KERNEL_DTYPES = frozenset((torch.float32, torch.bfloat16, torch.float16))
_STRIDED = torch.strided
# The forms PyTorch has (F.gelu's approximate); the others' compositions are
# the library's (csrc/form_ops.cpp, from src/math/gelu_forms.hpp).
_TORCH_FORMS = ("none", "tanh")


def _on_kernel(t: Tensor) -> bool:
    return t.dtype in _KERNEL_DTYPES and t.is_cpu and t.layout is _STRIDED


def _check_form(op: str, approximate: str) -> None:
    if approximate not in _FORMS:
        raise RuntimeError(f"gelu_fusion::{op}: approximate is {approximate!r}, "
                           f"expected {forms_listed()}")


def _composed_gelu(x: Tensor, approximate: str) -> Tensor:
    """PyTorch's own GELU of each form (for tensors without a kernel), with
    the library's limit gelu(-inf) = 0 and gradient 0 there (x * Phi(x) is
    -inf * 0 = NaN, and so is its derivative): -inf is computed as 0. A form
    PyTorch lacks is its formula composed of PyTorch ops, with the same
    limits (csrc/form_ops.cpp)."""
    if approximate not in _TORCH_FORMS:
        return _ops._composed_gelu(x, approximate)
    ninf = None
    if isinstance(x, Tensor) and x.is_floating_point() and x.layout is _STRIDED:
        # torch.where keeps the inputs' strides, forward and backward.
        ninf = x == float("-inf")
        x = torch.where(ninf, 0.0, x)
    y = F.gelu(x, approximate=approximate)
    return y if ninf is None else torch.where(ninf, 0.0, y)


def _shape(t: Tensor) -> str:
    return str(list(t.shape))


def _check_bias_shape(x: Tensor, bias: Tensor) -> None:
    """The library's shape rule (and text) for bias_gelu, for the paths
    that do not reach it."""
    if x.dim() == 0:
        raise RuntimeError(f"gelu_fusion::bias_gelu: x has shape {_shape(x)}, "
                           "expected at least one dimension")
    if list(bias.shape) != [x.shape[-1]]:
        raise RuntimeError(
            f"gelu_fusion::bias_gelu: bias has shape {_shape(bias)}, expected "
            f"[{x.shape[-1]}] (the last dimension of x)")


def _check_geglu_shape(x: Tensor) -> None:
    if x.dim() == 0:
        raise RuntimeError(f"gelu_fusion::geglu: x has shape {_shape(x)}, "
                           "expected at least one dimension")
    if x.shape[-1] % 2:
        raise RuntimeError(f"gelu_fusion::geglu: x has shape {_shape(x)}, "
                           "expected an even last dimension")


# ---- TorchScript: the same choice, in code the script compiler accepts.

def _scripted_on_kernel(t: Tensor) -> bool:
    return (t.device.type == "cpu" and t.layout == torch.strided
            and (t.dtype == torch.float32 or t.dtype == torch.bfloat16
                 or t.dtype == torch.float16))


def _scripted_composed(x: Tensor, approximate: str) -> Tensor:
    if approximate == "none" or approximate == "tanh":
        return F.gelu(x, approximate=approximate)
    return torch.ops.gelu_fusion._composed_gelu(x, approximate)


# ---- The functions.

def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x); like torch.nn.functional.gelu, plus approximate='quick'."""
    if _is_scripting():
        if _scripted_on_kernel(x):
            return torch.ops.gelu_fusion.gelu(x, approximate=approximate)
        return _scripted_composed(x, approximate)
    if type(x) is Tensor and not _compiling():
        op = _GELU_BY_FORM.get(approximate)
        if op is not None:
            return op(x)  # the kernel, or PyTorch's composition
    return _gelu_other(x, approximate)


def _gelu_other(x, approximate):
    if has_torch_function((x,)):
        return handle_torch_function(gelu, (x,), x, approximate=approximate)
    _check_form("gelu", approximate)
    if isinstance(x, Tensor) and _on_kernel(x):  # a subclass such as Parameter
        return _GELU(x, approximate=approximate)
    return _composed_gelu(x, approximate)  # F.gelu's error for a non-tensor


def bias_gelu(x: Tensor, bias: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x + bias) in one pass; bias is 1-D, the size of x's last dim.
    Mixed dtypes promote as x + bias does."""
    if _is_scripting():
        if (_scripted_on_kernel(x) and _scripted_on_kernel(bias)
                and x.dtype == bias.dtype):
            return torch.ops.gelu_fusion.bias_gelu(x, bias, approximate=approximate)
        if bias.dim() != 1 or x.dim() == 0 or bias.size(0) != x.size(-1):
            raise RuntimeError("gelu_fusion::bias_gelu: bias has shape "
                               + str(bias.shape) + ", expected [x.size(-1)]")
        return _scripted_composed(x + bias, approximate)
    if (type(x) is Tensor and x.dtype in _KERNEL_DTYPES and bias.dtype is x.dtype
            and x.is_cpu and x.layout is _STRIDED):
        op = _BIAS_GELU_BY_FORM.get(approximate)
        if op is not None and not _compiling():
            return op(x, bias)
        return _BIAS_GELU(x, bias, approximate=approximate)
    return _bias_gelu_other(x, bias, approximate)


def _bias_gelu_other(x, bias, approximate):
    if has_torch_function((x, bias)):
        return handle_torch_function(bias_gelu, (x, bias), x, bias,
                                     approximate=approximate)
    _check_form("bias_gelu", approximate)
    if _on_kernel(x) and _on_kernel(bias):
        dtype = torch.result_type(x, bias)
        if dtype in _KERNEL_DTYPES:
            return _BIAS_GELU(x.to(dtype), bias.to(dtype), approximate=approximate)
    _check_bias_shape(x, bias)
    return gelu(x + bias, approximate)  # the kernel where the sum has one


def _bias_shaped(t: Tensor, shape) -> bool:
    """t is a bias for `shape`: a row of shape[-1] (leading ones allowed)."""
    return (len(shape) > 0 and t.dim() >= 1 and t.dim() <= len(shape)
            and t.shape[-1] == shape[-1] and t.numel() == shape[-1])


def add_gelu(a: Tensor, b: Tensor, approximate: str = "none") -> Tensor:
    """gelu(a + b) in one pass; broadcasts and promotes as a + b does."""
    if _is_scripting():
        if (_scripted_on_kernel(a) and _scripted_on_kernel(b)
                and a.dtype == b.dtype and a.shape == b.shape):
            return torch.ops.gelu_fusion.add_gelu(a, b, approximate=approximate)
        return _scripted_composed(a + b, approximate)
    if (type(a) is Tensor and type(b) is Tensor and a.dtype in _KERNEL_DTYPES
            and b.dtype is a.dtype and a.is_cpu and a.layout is _STRIDED
            and a.shape == b.shape):
        op = _ADD_GELU_BY_FORM.get(approximate)
        if op is not None and not _compiling():
            return op(a, b)
        return _ADD_GELU(a, b, approximate=approximate)
    return _add_gelu_other(a, b, approximate)


def _add_gelu_other(a, b, approximate):
    if has_torch_function((a, b)):
        return handle_torch_function(add_gelu, (a, b), a, b,
                                     approximate=approximate)
    _check_form("add_gelu", approximate)
    if (isinstance(a, Tensor) and isinstance(b, Tensor) and _on_kernel(a)
            and _on_kernel(b)):
        dtype = torch.result_type(a, b)
        if dtype in _KERNEL_DTYPES:
            a, b = a.to(dtype), b.to(dtype)
            if a.shape == b.shape:
                return _ADD_GELU(a, b, approximate=approximate)
            try:
                shape = torch.broadcast_shapes(a.shape, b.shape)
            except RuntimeError:
                return a + b  # raises a + b's own error
            # A bias-shaped operand: bias_gelu's kernel, with the bias's
            # gradient summed over the rows in the same pass.
            if a.shape == shape and _bias_shaped(b, shape):
                return _BIAS_GELU(a, b.reshape(-1), approximate=approximate)
            if b.shape == shape and _bias_shaped(a, shape):
                return _BIAS_GELU(b, a.reshape(-1), approximate=approximate)
            # expand's backward sums each gradient to its input's shape.
            return _ADD_GELU(a.expand(shape), b.expand(shape),
                             approximate=approximate)
    # A Python scalar or another dtype: the kernel where the sum has one.
    return gelu(a + b, approximate)


_HALVES = ("first", "second")


def _check_gelu_half(gelu_half: str) -> None:
    if gelu_half not in _HALVES:
        raise RuntimeError(f"gelu_fusion::geglu: gelu_half is {gelu_half!r}, "
                           "expected 'first' or 'second'")


def geglu(x: Tensor, approximate: str = "none", gelu_half: str = "first") -> Tensor:
    """GeGLU: x [..., 2H] -> gelu(x[..., :H]) * x[..., H:], shape [..., H].
    gelu_half='second' puts the GELU on the second half:
    x[..., :H] * gelu(x[..., H:]) (diffusers' GEGLU)."""
    if _is_scripting():
        if _scripted_on_kernel(x):
            return torch.ops.gelu_fusion.geglu(x, approximate=approximate,
                                               gelu_half=gelu_half)
        if gelu_half != "first" and gelu_half != "second":
            raise RuntimeError("gelu_fusion::geglu: gelu_half is '" + gelu_half
                               + "', expected 'first' or 'second'")
        h = x.size(-1) // 2
        if gelu_half == "second":
            return x[..., :h] * _scripted_composed(x[..., h:], approximate)
        return _scripted_composed(x[..., :h], approximate) * x[..., h:]
    if (type(x) is Tensor and x.dtype in _KERNEL_DTYPES and x.is_cpu
            and x.layout is _STRIDED):
        op = _GEGLU_BY_FORM.get((approximate, gelu_half))
        if op is not None and not _compiling():
            return op(x)
        return _GEGLU(x, approximate=approximate, gelu_half=gelu_half)
    return _geglu_other(x, approximate, gelu_half)


def _geglu_other(x, approximate, gelu_half):
    if has_torch_function((x,)):
        return handle_torch_function(geglu, (x,), x, approximate=approximate,
                                     gelu_half=gelu_half)
    if _on_kernel(x):
        return _GEGLU(x, approximate=approximate, gelu_half=gelu_half)
    _check_form("geglu", approximate)
    _check_gelu_half(gelu_half)
    _check_geglu_shape(x)
    a, g = x.chunk(2, dim=-1)
    if gelu_half == "second":
        return a * _composed_gelu(g, approximate)
    return _composed_gelu(a, approximate) * g
