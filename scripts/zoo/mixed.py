"""A small mixed-precision GPT-style decoder: embeddings and LayerNorms in float32, every
nn.Linear (weight and bias) in a 2-byte dtype (bfloat16 by default).  DDP keeps one bucket
accumulator per (dtype, device), so this model gets separate float32 and bfloat16 buckets.

Linear layers cast their input to the compute dtype and their output back to float32 (what a
hand-rolled bf16 model does); on CPU, float16 weights are computed in float32 because torch 1.13
has no CPU float16 GEMM.  `low_dtype="float16"` exists for the gloo reference runs: gloo cannot
all-reduce bfloat16, and DDP's bucket assignment depends only on the dtype grouping and the
element size (2 bytes for both), so a float16 run gives the buckets of the bfloat16 model.
"""
import torch
from torch import nn
import torch.nn.functional as F

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class LowPrecisionLinear(nn.Linear):
    def forward(self, x):
        w = self.weight
        cdt = torch.float32 if (w.dtype == torch.float16 and w.device.type == "cpu") else w.dtype
        b = self.bias.to(cdt) if self.bias is not None else None
        return F.linear(x.to(cdt), w.to(cdt), b).to(torch.float32)


class Block(nn.Module):
    def __init__(self, dim, n_head, low):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(dim)
        self.qkv = LowPrecisionLinear(dim, 3 * dim).to(low)
        self.proj = LowPrecisionLinear(dim, dim).to(low)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = LowPrecisionLinear(dim, 4 * dim).to(low)
        self.fc_out = LowPrecisionLinear(4 * dim, dim).to(low)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = torch.matmul(q, k.transpose(-1, -2)) / (c // self.n_head) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))


class MixedGPT(nn.Module):
    """forward(tokens (batch, seq) int64) -> logits (batch, seq, vocab) float32."""

    def __init__(self, vocab_size=8192, dim=256, n_layer=4, n_head=4, max_seq=256,
                 low_dtype="bfloat16"):
        super().__init__()
        low = _DTYPES[low_dtype]
        self.wte = nn.Embedding(vocab_size, dim)
        self.wpe = nn.Embedding(max_seq, dim)
        self.blocks = nn.ModuleList([Block(dim, n_head, low) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = LowPrecisionLinear(dim, vocab_size, bias=False).to(low)

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def mixed_gpt(**kw):
    """float32 embeddings/LayerNorms + bfloat16 linears: 8192 vocab, 256 wide, 4 layers."""
    return MixedGPT(**kw)
