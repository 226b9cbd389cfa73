"""Model code written the way the big model libraries write it, for
gelu_fusion.fuse's tests. Each class keeps its library's structure,
attribute names and forward body (trimmed to the feed-forward part that
holds the GELU); the source is named in each docstring.

ZOO lists, for each model: a factory, the input shape, and what fuse must
make of its GELU sites (the `result` of each Site, in the order found).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

# --- activation classes (transformers/activations.py) ----------------------


class GELUActivation(nn.Module):
    """transformers.activations.GELUActivation."""

    def __init__(self, use_gelu_python: bool = False):
        super().__init__()
        if use_gelu_python:
            self.act = self._gelu_python
        else:
            self.act = nn.functional.gelu

    def _gelu_python(self, input):
        return input * 0.5 * (1.0 + torch.erf(input / math.sqrt(2.0)))

    def forward(self, input):
        return self.act(input)


class NewGELUActivation(nn.Module):
    """transformers.activations.NewGELUActivation (GPT-2's gelu_new)."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (
            input + 0.044715 * torch.pow(input, 3.0))))


class FastGELUActivation(nn.Module):
    """transformers.activations.FastGELUActivation (x * x factored)."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(
            input * 0.7978845608 * (1.0 + 0.044715 * input * input)))


class QuickGELUActivation(nn.Module):
    """transformers.activations.QuickGELUActivation (CLIP)."""

    def forward(self, input):
        return input * torch.sigmoid(1.702 * input)


ACT2FN = {"gelu": GELUActivation, "gelu_new": NewGELUActivation,
          "gelu_fast": FastGELUActivation, "quick_gelu": QuickGELUActivation,
          "gelu_python": lambda: GELUActivation(use_gelu_python=True)}


class Config:
    """The few config fields these blocks read."""

    def __init__(self, hidden_size=32, intermediate_size=64, hidden_act="gelu",
                 dropout=0.0, n_embd=None):
        self.hidden_size = hidden_size
        self.n_embd = n_embd or hidden_size
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = dropout
        self.resid_pdrop = dropout
        self.dropout_rate = dropout
        self.d_model = hidden_size
        self.d_ff = intermediate_size
        self.dense_act_fn = hidden_act


# --- torchvision ---------------------------------------------------------------


class MLP(nn.Sequential):
    """torchvision.ops.misc.MLP (as torchvision 0.14 writes it)."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None,
                 activation_layer=nn.ReLU, inplace=None, bias=True, dropout=0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class MLPBlock(MLP):
    """torchvision.models.vision_transformer.MLPBlock."""

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU,
                         inplace=None, dropout=dropout)


# --- HF BERT -------------------------------------------------------------------


class BertIntermediate(nn.Module):
    """transformers.models.bert.modeling_bert.BertIntermediate."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        if isinstance(config.hidden_act, str):
            self.intermediate_act_fn = ACT2FN[config.hidden_act]()
        else:
            self.intermediate_act_fn = config.hidden_act

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        return hidden_states


class BertOutput(nn.Module):
    """transformers.models.bert.modeling_bert.BertOutput."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayerFFN(nn.Module):
    """The feed-forward half of transformers' BertLayer, with its
    untraceable signature (optional arguments defaulting to None) and
    apply_chunking_to_forward's data-dependent control flow."""

    def __init__(self, config):
        super().__init__()
        self.chunk_size_feed_forward = 0
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None, head_mask=None):
        if attention_mask is not None:
            hidden_states = hidden_states * attention_mask
        if hidden_states.sum() > 1e30:  # data-dependent: fx cannot trace
            hidden_states = hidden_states.clamp(max=1e30)
        return self.feed_forward_chunk(hidden_states)

    def feed_forward_chunk(self, attention_output):
        intermediate_output = self.intermediate(attention_output)
        layer_output = self.output(intermediate_output, attention_output)
        return layer_output


# --- HF GPT-2 ------------------------------------------------------------------


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D (a Linear with transposed weight,
    computed by addmm)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        w = torch.empty(nx, nf)
        nn.init.normal_(w, std=0.02)
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class GPT2MLP(nn.Module):
    """transformers.models.gpt2.modeling_gpt2.GPT2MLP."""

    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = ACT2FN[config.activation_function]()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


def gpt2_mlp(hidden=32, inner=64, act="gelu_new"):
    cfg = Config(hidden, inner)
    cfg.activation_function = act
    return GPT2MLP(inner, cfg)


# --- nanoGPT -------------------------------------------------------------------


class NanoGPTMLP(nn.Module):
    """karpathy/nanoGPT model.py MLP (newer versions use nn.GELU; the
    functional spelling is the one many forks keep)."""

    def __init__(self, n_embd=32, bias=True, dropout=0.0):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.c_fc(x)
        x = F.gelu(x, approximate="tanh")
        x = self.c_proj(x)
        x = self.dropout(x)
        return x


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    """nanoGPT's CausalSelfAttention, the explicit softmax path (PyTorch
    1.13 has no F.scaled_dot_product_attention); its mask is a buffer
    sliced with traced sizes."""

    def __init__(self, n_embd=32, n_head=4, block_size=16, dropout=0.0):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = n_head
        self.n_embd = n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.c_proj(y))
        return y


class NanoGPTBlock(nn.Module):
    """nanoGPT Block."""

    def __init__(self, n_embd=32):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias=True)
        self.attn = CausalSelfAttention(n_embd)
        self.ln_2 = LayerNorm(n_embd, bias=True)
        self.mlp = NanoGPTMLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class NanoGPT(nn.Module):
    """nanoGPT GPT's module layout (transformer.h ModuleList), with the
    forward's optional `targets=None` that keeps fx from tracing it whole."""

    def __init__(self, n_layer=2, n_embd=32):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            h=nn.ModuleList([NanoGPTBlock(n_embd) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias=True)))
        self.lm_head = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x, targets=None):
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            return F.mse_loss(self.lm_head(x), targets)
        return self.lm_head(x)


# --- CLIP ----------------------------------------------------------------------


class CLIPMLP(nn.Module):
    """transformers.models.clip.modeling_clip.CLIPMLP."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.activation_fn = ACT2FN[config.hidden_act]()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        return hidden_states


# --- T5 v1.1 -------------------------------------------------------------------


class T5DenseGatedActDense(nn.Module):
    """transformers.models.t5.modeling_t5.T5DenseGatedActDense (T5 v1.1,
    dense_act_fn='gelu_new')."""

    def __init__(self, config):
        super().__init__()
        self.wi_0 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wi_1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.dropout = nn.Dropout(config.dropout_rate)
        self.act = ACT2FN[config.dense_act_fn]()

    def forward(self, hidden_states):
        hidden_gelu = self.act(self.wi_0(hidden_states))
        hidden_linear = self.wi_1(hidden_states)
        hidden_states = hidden_gelu * hidden_linear
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.wo(hidden_states)
        return hidden_states


# --- diffusers -----------------------------------------------------------------


class GEGLU(nn.Module):
    """diffusers.models.attention.GEGLU (GELU on the second half)."""

    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def gelu(self, gate):
        return F.gelu(gate)

    def forward(self, hidden_states):
        hidden_states, gate = self.proj(hidden_states).chunk(2, dim=-1)
        return hidden_states * self.gelu(gate)


class GateFirstGEGLU(nn.Module):
    """The GeGLU of the GLU-variants paper and of many LM codebases: the
    gate first, as slices."""

    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.dim_out = dim_out
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x = self.proj(x)
        return F.gelu(x[..., :self.dim_out]) * x[..., self.dim_out:]


# --- timm ----------------------------------------------------------------------


class Mlp(nn.Module):
    """timm.layers.mlp.Mlp."""

    def __init__(self, in_features, hidden_features=None, out_features=None,
                 act_layer=nn.GELU, norm_layer=None, bias=True, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        bias = (bias, bias)
        drop_probs = (drop, drop)
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias[0])
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop_probs[0])
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features, out_features, bias=bias[1])
        self.drop2 = nn.Dropout(drop_probs[1])

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


# --- other shapes of GELU ------------------------------------------------------


class ResidualGELU(nn.Module):
    """gelu(x + f(x)): a residual sum feeding the GELU."""

    def __init__(self, d=32):
        super().__init__()
        self.f = nn.Linear(d, d)

    def forward(self, x):
        return F.gelu(x + self.f(x))


class DropoutBeforeGELU(nn.Module):
    """Linear, Dropout, GELU: the bias cannot move past the dropout."""

    def __init__(self, d=32):
        super().__init__()
        self.fc = nn.Linear(d, 2 * d)
        self.drop = nn.Dropout(0.1)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.drop(self.fc(x)))


class SecondUse(nn.Module):
    """The Linear's output is used by the GELU and again: its bias must stay
    in the Linear."""

    def __init__(self, d=32):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        h = self.fc(x)
        return F.gelu(h) + h


class BertErfPython(nn.Module):
    """The erf formula spelled out (BERT's original `gelu`, and
    GELUActivation(use_gelu_python=True)) after a Linear."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN["gelu_python"]()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


def transformer_encoder_layer(d=32, activation="gelu"):
    return nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=64, dropout=0.0,
                                      activation=activation, batch_first=True)


def _has_gelu_half():
    import gelu_fusion.fusion.runtime as rt
    return rt.HAS_GELU_HALF


_HAS_GELU_HALF = _has_gelu_half()


def _cfg(act):
    return Config(hidden_act=act)


# name: (factory, input shape, expected results of the sites, in order)
ZOO = {
    "torchvision_MLPBlock": (lambda: MLPBlock(32, 64, 0.0), (2, 5, 32), ["bias_gelu"]),
    "hf_BertIntermediate": (lambda: BertIntermediate(_cfg("gelu")), (2, 5, 32),
                            ["bias_gelu"]),
    "hf_BertLayerFFN_untraceable": (lambda: BertLayerFFN(_cfg("gelu")), (2, 5, 32),
                                    ["bias_gelu"]),
    "hf_bert_gelu_python": (lambda: BertErfPython(_cfg("gelu")), (2, 5, 32),
                            ["bias_gelu"]),
    "hf_GPT2MLP_gelu_new": (lambda: gpt2_mlp(act="gelu_new"), (2, 5, 32),
                            ["bias_gelu"]),
    "hf_GPT2MLP_gelu_fast": (lambda: gpt2_mlp(act="gelu_fast"), (2, 5, 32),
                             ["bias_gelu"]),
    "nanoGPT": (lambda: NanoGPT(), (2, 5, 32), ["bias_gelu", "bias_gelu"]),
    "TransformerEncoderLayer": (lambda: transformer_encoder_layer(), (2, 5, 32),
                                ["bias_gelu"]),
    "TransformerEncoderLayer_module": (
        lambda: transformer_encoder_layer(activation=nn.GELU("tanh")), (2, 5, 32),
        ["bias_gelu"]),
    "hf_CLIPMLP": (lambda: CLIPMLP(_cfg("quick_gelu")), (2, 5, 32), ["bias_gelu"]),
    "hf_T5DenseGatedActDense": (lambda: T5DenseGatedActDense(_cfg("gelu_new")),
                                (2, 5, 32), ["geglu"]),
    # GELU on the second half: geglu where the op has gelu_half
    "diffusers_GEGLU": (lambda: GEGLU(32, 48), (2, 5, 32),
                        ["geglu" if _HAS_GELU_HALF else "gelu"]),
    "GateFirstGEGLU": (lambda: GateFirstGEGLU(32, 48), (2, 5, 32), ["geglu"]),
    "timm_Mlp": (lambda: Mlp(32, 64), (2, 5, 32), ["bias_gelu"]),
    "residual_gelu": (lambda: ResidualGELU(), (2, 5, 32), ["add_gelu"]),
    "dropout_before_gelu": (lambda: DropoutBeforeGELU(), (2, 5, 32), ["gelu"]),
    "second_use": (lambda: SecondUse(), (2, 5, 32), ["gelu"]),
}
