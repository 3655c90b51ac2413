"""Test data and the golden reference of matmul_bias_relu: torch on the CPU, in fp32."""

from __future__ import annotations

import torch

TORCH_DTYPES = {"fp16": torch.float16}


def make_inputs(shape: list[int], dtype: str, seed: int) -> list[torch.Tensor]:
    """Seeded x [M, K], w [K, N] and b [1, N], scaled so that fp16 sums stay well in range."""
    m, k, n = shape
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn((m, k), generator=generator) / 4.0
    w = torch.randn((k, n), generator=generator) / 4.0
    b = torch.randn((1, n), generator=generator)
    return [t.to(TORCH_DTYPES[dtype]) for t in (x, w, b)]


def golden(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> list[torch.Tensor]:
    """relu(x @ w + b), accumulated in fp32 and rounded to the inputs' dtype."""
    out = torch.relu(x.float() @ w.float() + b.float())
    return [out.to(x.dtype)]
