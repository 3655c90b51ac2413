"""Test data and the golden reference of the softmax op: torch.softmax on the CPU."""

from __future__ import annotations

import torch

TORCH_DTYPES = {"fp32": torch.float32}


def make_inputs(shape: list[int], dtype: str, seed: int) -> list[torch.Tensor]:
    """Seeded inputs: normal values scaled so that the max-subtraction matters."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(tuple(shape), generator=generator, dtype=torch.float32) * 4.0
    return [x.to(TORCH_DTYPES[dtype])]


def golden(x: torch.Tensor) -> list[torch.Tensor]:
    """The expected outputs, in OUTPUT_NAMES order."""
    return [torch.softmax(x, dim=-1)]
