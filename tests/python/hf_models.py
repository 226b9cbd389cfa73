"""Small transformers models for gelu_fusion.fuse's tests, built with
transformers' own classes from tiny random configs (nothing downloaded).

MODELS maps a name to a Spec: the model class, a config factory taking the
activation's ACT2FN key and a Size (TINY for the tests, wider for
bench/hf_models_bench.py), the activation the tests use, what fuse must make
of the model's GELU sites, and the inputs (with labels, so the model
computes its own loss). Each config field that selects the activation
(`hidden_act`, `activation_function`, `feed_forward_proj`, ...) is set from
that key, so the same architecture can be built with "relu" as the
baseline of the ops a model uses outside its GELUs.

gelu_keys() and form_of() say which ACT2FN entries are GELUs and which of
gelu_fusion's forms each one computes, from the values, not the names.
"""
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import torch
import transformers as T
from transformers.activations import ACT2FN

VOCAB = 64


@dataclass(frozen=True)
class Size:
    d: int = 32        # hidden size
    ff: int = 64       # feed-forward size
    seq: int = 8       # tokens per sequence
    image: int = 16    # image side (patches of 8)
    batch: int = 2


TINY = Size()


@dataclass
class Spec:
    cls: type
    config: Callable[[str, Size], object]  # (ACT2FN key, size) -> config
    act: str                         # the activation the tests use
    sites: int                       # GELUs the model computes
    fused: bool = True               # whether fuse must find and fuse each
    inputs: str = "lm"               # lm | image | image_no_label | audio
    # A GELU fuse does not reach yet: the tests that every site is found
    # and fused expect to fail (strictly) with this reason.
    known: str = ""


def _small(**kw):
    # Dropout kept on (real configs have it); bos/eos/pad inside the vocab.
    base = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    base.update(kw)
    return base


def _gpt2(act, z):
    return T.GPT2Config(**_small(n_embd=z.d, n_layer=2, n_head=2, n_positions=z.seq,
                                 activation_function=act))


def _gpt_neo(act, z):
    return T.GPTNeoConfig(**_small(hidden_size=z.d, num_layers=2, num_heads=2,
                                   max_position_embeddings=z.seq, window_size=4,
                                   attention_types=[[["global", "local"], 1]],
                                   activation_function=act))


def _gptj(act, z):
    return T.GPTJConfig(**_small(n_embd=z.d, n_layer=2, n_head=2, n_positions=z.seq,
                                 rotary_dim=8, activation_function=act))


def _bert(act, z):
    return T.BertConfig(**_small(hidden_size=z.d, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=z.ff,
                                 max_position_embeddings=z.seq, hidden_act=act))


def _roberta(act, z):
    return T.RobertaConfig(**_small(hidden_size=z.d, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=z.ff,
                                    max_position_embeddings=z.seq + 2, hidden_act=act))


def _distilbert(act, z):
    return T.DistilBertConfig(**_small(dim=z.d, n_layers=2, n_heads=2, hidden_dim=z.ff,
                                       max_position_embeddings=z.seq, activation=act))


def _t5(act, z):
    # T5 v1.1: "gated-<act>" makes T5DenseGatedActDense (GeGLU for a GELU).
    return T.T5Config(**_small(d_model=z.d, d_kv=16, d_ff=z.ff, num_layers=2,
                               num_decoder_layers=1, num_heads=2,
                               decoder_start_token_id=0,
                               feed_forward_proj=f"gated-{act}"))


def _bart(act, z):
    return T.BartConfig(**_small(d_model=z.d, encoder_layers=1, decoder_layers=1,
                                 encoder_attention_heads=2, decoder_attention_heads=2,
                                 encoder_ffn_dim=z.ff, decoder_ffn_dim=z.ff,
                                 max_position_embeddings=z.seq, decoder_start_token_id=2,
                                 activation_function=act))


def _gemma(act, z):
    return T.GemmaConfig(**_small(hidden_size=z.d, intermediate_size=z.ff,
                                  num_hidden_layers=2, num_attention_heads=2,
                                  num_key_value_heads=1, head_dim=16,
                                  hidden_activation=act))


def _gemma2(act, z):
    return T.Gemma2Config(**_small(hidden_size=z.d, intermediate_size=z.ff,
                                   num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=1, head_dim=16,
                                   sliding_window=4, hidden_activation=act))


def _whisper(act, z):
    # The encoder's two convolutions are followed by F.gelu written inline.
    return T.WhisperConfig(**_small(num_mel_bins=8, encoder_layers=1, decoder_layers=1,
                                    encoder_attention_heads=2, decoder_attention_heads=2,
                                    d_model=z.d, encoder_ffn_dim=z.ff, decoder_ffn_dim=z.ff,
                                    max_source_positions=z.seq, max_target_positions=z.seq,
                                    decoder_start_token_id=1, activation_function=act))


def _vit(act, z):
    return T.ViTConfig(hidden_size=z.d, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=z.ff, image_size=z.image, patch_size=8,
                       num_labels=3, hidden_act=act,
                       # set, as the first loss would set it (a compiled
                       # model would then compile again)
                       problem_type="single_label_classification")


def _clip_vision(act, z):
    return T.CLIPVisionConfig(hidden_size=z.d, intermediate_size=z.ff,
                              num_hidden_layers=2, num_attention_heads=2,
                              image_size=z.image, patch_size=8, hidden_act=act)


# Sites: one per layer's feed-forward, plus the LM/prediction heads' GELU.
MODELS: Dict[str, Spec] = {
    # decoders
    "gpt2": Spec(T.GPT2LMHeadModel, _gpt2, "gelu_new", 2),
    "gpt2_gelu_fast": Spec(T.GPT2LMHeadModel, _gpt2, "gelu_fast", 2),
    "gpt_neo": Spec(T.GPTNeoForCausalLM, _gpt_neo, "gelu_accurate", 2),
    "gptj": Spec(T.GPTJForCausalLM, _gptj, "gelu_python_tanh", 2),
    # encoders (each masked-LM head holds a GELU too)
    "bert": Spec(T.BertForMaskedLM, _bert, "gelu", 3),
    "roberta": Spec(T.RobertaForMaskedLM, _roberta, "gelu_python", 3, known=(
        "RobertaLMHead calls transformers.activations.gelu, a module that is "
        "not a submodule, and its forward takes **kwargs: fuse neither traces "
        "it nor lists the site")),
    "distilbert": Spec(T.DistilBertForMaskedLM, _distilbert, "gelu", 3),
    # gelu_10 clips gelu(x) to [-10, 10]: a different function, left unfused
    "distilbert_gelu_10": Spec(T.DistilBertForMaskedLM, _distilbert, "gelu_10", 3,
                               fused=False),
    # encoder-decoders
    "t5_gated": Spec(T.T5ForConditionalGeneration, _t5, "gelu_new", 3),
    "bart": Spec(T.BartForConditionalGeneration, _bart, "gelu", 2),
    "whisper": Spec(T.WhisperForConditionalGeneration, _whisper, "gelu", 4,
                    inputs="audio", known=(
                        "WhisperEncoder.forward applies F.gelu to its two "
                        "convolutions inline, and that forward is not traced "
                        "(optional arguments): both stay on PyTorch, unlisted")),
    # gated (GeGLU) decoders
    "gemma": Spec(T.GemmaForCausalLM, _gemma, "gelu_pytorch_tanh", 2),
    "gemma2": Spec(T.Gemma2ForCausalLM, _gemma2, "gelu_pytorch_tanh", 2),
    # vision
    "vit": Spec(T.ViTForImageClassification, _vit, "gelu", 2, inputs="image"),
    "clip_vision": Spec(T.CLIPVisionModel, _clip_vision, "quick_gelu", 2,
                        inputs="image_no_label"),
}


def randomize(model: torch.nn.Module, seed: int = 0) -> None:
    """Weights large enough that a GELU's input spans its curve (HF's init,
    std 0.02, keeps it near 0), and non-zero biases, so a lost or moved bias
    shows. Norm scales stay as initialized."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * (1.7 / p.shape[-1] ** 0.5))
            elif name.endswith("bias"):
                p.copy_(torch.rand(p.shape, generator=g) - 0.5)


def build(name: str, act: Optional[str] = None, seed: int = 0,
          size: Size = TINY) -> torch.nn.Module:
    spec = MODELS[name]
    config = spec.config(act or spec.act, size)
    torch.manual_seed(seed)
    model = spec.cls(config)
    randomize(model, seed)
    model.train()
    return model


def inputs(name: str, seed: int = 1, size: Size = TINY) -> dict:
    spec = MODELS[name]
    g = torch.Generator().manual_seed(seed)
    if spec.inputs.startswith("image"):
        x = {"pixel_values": torch.randn(size.batch, 3, size.image, size.image,
                                         generator=g)}
        if spec.inputs == "image":
            x["labels"] = torch.randint(0, 3, (size.batch,), generator=g)
        return x
    ids = torch.randint(3, VOCAB, (size.batch, size.seq), generator=g)
    if spec.inputs == "audio":  # the encoder's convolutions halve 2 * seq frames
        mel = torch.randn(size.batch, 8, 2 * size.seq, generator=g)
        return {"input_features": mel, "labels": ids}
    return {"input_ids": ids, "labels": ids.clone()}


def loss_of(model: torch.nn.Module, x: dict) -> torch.Tensor:
    """The model's own loss; for a model without one (CLIP's vision tower),
    a fixed weighting of its outputs."""
    out = model(**x)
    if getattr(out, "loss", None) is not None:
        return out.loss
    h = out.last_hidden_state
    w = torch.linspace(-1, 1, h.numel()).reshape(h.shape)
    return (h * w).sum() + out.pooler_output.square().sum()


# --- the activation table -------------------------------------------------

_FORM_REFS = {
    "none": lambda x: x * 0.5 * torch.special.erfc(-x / math.sqrt(2.0)),
    "tanh": lambda x: x * torch.sigmoid(
        2.0 * math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)),
    "quick": lambda x: x * torch.sigmoid(1.702 * x),
}


def gelu_keys() -> List[str]:
    """ACT2FN's keys for GELUs: every entry whose name says GELU."""
    return sorted(k for k in ACT2FN if "gelu" in k.lower())


def form_of(key: str) -> Optional[str]:
    """Which of gelu_fusion's forms ACT2FN[key] computes, to float32
    rounding, on [-20, 20] in float64; None for a different function."""
    x = torch.linspace(-20.0, 20.0, 40001, dtype=torch.float64)
    y = ACT2FN[key](x)
    for form, ref in _FORM_REFS.items():
        want = ref(x)
        if bool(((y - want).abs() <= 2.0 ** -24 * want.abs() + 1e-15).all()):
            return form
    return None
