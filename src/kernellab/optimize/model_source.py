"""What ``kernellab optimize MODEL --inputs SPEC`` runs: a model and how to make its inputs.

``MODEL`` is ``path/to/file.py:factory`` (the file defines ``factory()`` returning an ``nn.Module``
and ``make_inputs(sizes, device, dtype)`` returning the forward's positional inputs; optionally
``loss(output, *inputs)`` for ``--mode train``, else the mean square of the output is the loss), or a
Hugging Face ``transformers`` architecture built from a config with random weights: a local
``config.json`` (or a folder holding one) or a preset name (``PRESETS``). Nothing is downloaded.

``SPEC`` names the sizes: ``B=4,S=2048`` or ``4x2048`` (batch x sequence; images: ``B=8``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from kernellab.tasks.model import TaskError


class ModelSourceError(TaskError):
    """MODEL or --inputs cannot be used as given: one line saying why."""


# A Llama-style decoder (hidden 2048, 8 layers, GQA 16/4 heads, SwiGLU 5632, vocab 32000) and a
# ViT-Base; the "-tiny" variants keep every structural feature at CPU size for tests.
PRESETS: dict[str, dict[str, Any]] = {
    "llama": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 8,
              "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000,
              "max_position_embeddings": 4096, "rms_norm_eps": 1e-6},
    "llama-tiny": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
                   "max_position_embeddings": 256, "rms_norm_eps": 1e-6},
    "vit": {"model_type": "vit", "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
            "num_attention_heads": 12, "image_size": 224, "patch_size": 16, "num_labels": 1000},
    "vit-tiny": {"model_type": "vit", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "image_size": 32, "patch_size": 8, "num_labels": 10},
}


@dataclass
class ModelBundle:
    """A model with the recipe for its inputs and its training loss."""

    name: str
    model: nn.Module
    sizes: dict[str, int]
    make_inputs: Callable[[dict[str, int], str, torch.dtype, int], tuple]
    forward: Callable[..., Any]  # (model, *inputs) -> output tensor
    loss: Callable[..., torch.Tensor]  # (model, *inputs) -> scalar
    kind: str = "file"  # file | causal-lm | image-classifier
    info: dict[str, Any] = field(default_factory=dict)

    def inputs(self, sizes: dict[str, int] | None = None, device: str = "cpu", dtype: torch.dtype = torch.float32,
               seed: int = 0) -> tuple:
        return tuple(self.make_inputs(dict(sizes or self.sizes), device, dtype, seed))

    def perturbed_sizes(self) -> list[dict[str, int]]:
        """Sizes no kernel saw: each size a little smaller and a prime-ish step away."""
        out = []
        for factor, offset in ((0.5, 1), (0.75, -3)):
            out.append({k: max(1, int(v * factor) + offset) for k, v in self.sizes.items()})
        return out


def parse_sizes(spec: str, keys: tuple[str, ...] = ("B", "S")) -> dict[str, int]:
    spec = spec.strip()
    try:
        if "=" in spec:
            pairs = [p.split("=", 1) for p in spec.split(",") if p.strip()]
            sizes = {k.strip(): int(v) for k, v in pairs}
        else:
            values = [int(v) for v in spec.lower().split("x")]
            sizes = dict(zip(keys, values))
    except ValueError:
        raise ModelSourceError(f"--inputs {spec!r}: expected sizes like B=4,S=2048 or 4x2048") from None
    if not sizes or any(v <= 0 for v in sizes.values()):
        raise ModelSourceError(f"--inputs {spec!r}: sizes must be positive integers")
    return sizes


def load_model(model: str, inputs: str, seed: int = 0) -> ModelBundle:
    torch.manual_seed(seed)
    if ":" in model and model.split(":", 1)[0].endswith(".py"):
        return _from_file(model, inputs)
    return _from_transformers(model, inputs)


def _from_file(model: str, inputs: str) -> ModelBundle:
    path, factory_name = model.rsplit(":", 1)
    file = Path(path).expanduser()
    if not file.is_file():
        raise ModelSourceError(f"model file {file} does not exist")
    spec = importlib.util.spec_from_file_location(f"kernellab_user_model_{abs(hash(str(file.resolve())))}", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo resolves the model's globals through its module
    spec.loader.exec_module(module)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ModelSourceError(f"{file} has no function {factory_name!r}")
    make = getattr(module, "make_inputs", None)
    if not callable(make):
        raise ModelSourceError(f"{file} has no make_inputs(sizes, device, dtype) function")
    user_loss = getattr(module, "loss", None)

    def forward(m: nn.Module, *args: Any) -> Any:
        return m(*args)

    def loss(m: nn.Module, *args: Any) -> torch.Tensor:
        out = m(*args)
        return user_loss(out, *args) if callable(user_loss) else out.float().square().mean()

    def make_inputs(sizes: dict[str, int], device: str, dtype: torch.dtype, seed: int) -> tuple:
        torch.manual_seed(seed)
        return tuple(make(sizes, device, dtype))

    return ModelBundle(f"{file.name}:{factory_name}", factory(), parse_sizes(inputs), make_inputs, forward, loss)


def _transformers():
    try:
        import transformers
    except ImportError:
        raise ModelSourceError("transformers models need the optional extra: pip install 'kernellab[optimize]'") \
            from None
    return transformers


def _from_transformers(model: str, inputs: str) -> ModelBundle:
    tf = _transformers()
    if model in PRESETS:
        settings = dict(PRESETS[model])
        name = model
    else:
        path = Path(model).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ModelSourceError(f"MODEL {model!r} is neither file.py:factory, a config.json nor a preset "
                                   f"({', '.join(PRESETS)})")
        settings = json.loads(path.read_text())
        name = str(path)
    model_type = settings.pop("model_type", None)
    if model_type is None:
        raise ModelSourceError(f"{name}: the config has no model_type")
    architectures = settings.pop("architectures", None) or []
    config = tf.AutoConfig.for_model(model_type, **settings)
    config._attn_implementation = "sdpa"
    vision = hasattr(config, "image_size") and hasattr(config, "num_channels")
    auto = tf.AutoModelForImageClassification if vision else tf.AutoModelForCausalLM
    if architectures and hasattr(tf, architectures[0]):
        built = getattr(tf, architectures[0])(config)
    else:
        built = auto.from_config(config)
    if vision:
        return _vision_bundle(name, built, config, parse_sizes(inputs, ("B",)))
    return _causal_bundle(name, built, config, parse_sizes(inputs))


def _causal_bundle(name: str, model: nn.Module, config: Any, sizes: dict[str, int]) -> ModelBundle:
    vocab = config.vocab_size

    def make_inputs(s: dict[str, int], device: str, dtype: torch.dtype, seed: int) -> tuple:
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, vocab, (s["B"], s["S"]), generator=g)
        return (ids.to(device),)

    def forward(m: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        return m(input_ids=ids, use_cache=False).logits

    def loss(m: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        # next-token loss computed by the model itself (its own loss function), logits not returned
        return m(input_ids=ids, labels=ids, use_cache=False).loss

    return ModelBundle(name, model, sizes, make_inputs, forward, loss, "causal-lm",
                       {"hidden": config.hidden_size, "layers": config.num_hidden_layers, "vocab": vocab})


def _vision_bundle(name: str, model: nn.Module, config: Any, sizes: dict[str, int]) -> ModelBundle:
    def make_inputs(s: dict[str, int], device: str, dtype: torch.dtype, seed: int) -> tuple:
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(s["B"], config.num_channels, config.image_size, config.image_size, generator=g)
        return (x.to(device=device, dtype=dtype),)

    def forward(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return m(pixel_values=x).logits

    def loss(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return m(pixel_values=x).logits.float().logsumexp(-1).mean()

    return ModelBundle(name, model, sizes, make_inputs, forward, loss, "image-classifier",
                       {"hidden": config.hidden_size, "layers": config.num_hidden_layers})
