"""LLaMA decoder (facebookresearch/llama `model.py`, LLaMA-1) in plain PyTorch.

Mirrors the published reference implementation's module/parameter names and registration order:
tok_embeddings, layers.N.{attention.{wq,wk,wv,wo}, feed_forward.{w1,w2,w3}, attention_norm,
ffn_norm}, norm, output (untied, bias-free).  RMSNorm (weight only, eps 1e-6), SwiGLU FFN
(w2(silu(w1 x) * w3 x)), rotary position embeddings without parameters or buffers (the reference
keeps `freqs_cis` as a plain attribute; here cos/sin are computed in forward from the sequence
length, with the real-valued rotate-half formulation so the model also runs on the `meta`
device), causal mask built in forward.  Pre-norm blocks: h = x + attn(attention_norm(x));
out = h + ffn(ffn_norm(h)).

Grouped-query attention (meta-llama/llama3 `model.py`): `n_kv_heads` key/value heads, each shared
by n_heads / n_kv_heads query heads (repeat_kv); wk and wv are n_kv_heads * head_dim wide.

All builders take `device=` (e.g. "meta": shapes only, no memory) and `dtype=`.
  llama_7b: dim 4096, 32 layers, 32 heads, FFN hidden 11008, vocab 32000 -> 6,738,415,616 params.
  llama2_13b: dim 5120, 40 layers, 40 heads, FFN 13824, vocab 32000 -> 13,015,864,320 params.
  llama3_8b: dim 4096, 32 layers, 32 heads / 8 KV heads, FFN 14336, vocab 128256 -> 8,030,261,248.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def ffn_hidden_dim(dim, multiple_of=256, ffn_dim_multiplier=None):
    """The reference's FeedForward sizing: 2/3 * 4 * dim, rounded up to multiple_of (4096 -> 11008)."""
    hidden = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class LlamaArgs(object):
    def __init__(self, dim=4096, n_layers=32, n_heads=32, vocab_size=32000, multiple_of=256,
                 norm_eps=1e-6, max_seq_len=2048, hidden_dim=None, rope_theta=10000.0,
                 n_kv_heads=None, ffn_dim_multiplier=None):
        self.dim = dim
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads if n_kv_heads is not None else n_heads
        self.vocab_size = vocab_size
        self.multiple_of = multiple_of
        self.norm_eps = norm_eps
        self.max_seq_len = max_seq_len
        self.hidden_dim = (hidden_dim if hidden_dim is not None
                           else ffn_hidden_dim(dim, multiple_of, ffn_dim_multiplier))
        self.rope_theta = rope_theta


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x):
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return out.type_as(x) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(seq_len, head_dim, theta, device, dtype):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class Attention(nn.Module):
    def __init__(self, args, device=None, dtype=None):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        kw = dict(bias=False, device=device, dtype=dtype)
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, **kw)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, **kw)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, **kw)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, **kw)

    def forward(self, x, cos, sin, mask):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.n_kv_heads != self.n_heads:  # repeat_kv: each KV head serves n_rep query heads
            n_rep = self.n_heads // self.n_kv_heads
            b, h, s, d = xk.shape  # the reference's expand + reshape (works on the meta device)
            xk = xk[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)
            xv = xv[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)
        xq = xq * cos + rotate_half(xq) * sin
        xk = xk * cos + rotate_half(xk) * sin
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        out = torch.matmul(scores, xv)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, device=None, dtype=None):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.w1 = nn.Linear(dim, hidden_dim, **kw)
        self.w2 = nn.Linear(hidden_dim, dim, **kw)
        self.w3 = nn.Linear(dim, hidden_dim, **kw)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id, args, device=None, dtype=None):
        super().__init__()
        self.n_heads = args.n_heads
        self.dim = args.dim
        self.head_dim = args.dim // args.n_heads
        self.attention = Attention(args, device=device, dtype=dtype)
        self.feed_forward = FeedForward(args.dim, args.hidden_dim, device=device, dtype=dtype)
        self.layer_id = layer_id
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps, device=device, dtype=dtype)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps, device=device, dtype=dtype)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    """forward(tokens (batch, seq) int64) -> logits (batch, seq, vocab) float32."""

    def __init__(self, args=None, device=None, dtype=None):
        super().__init__()
        self.params = args or LlamaArgs()
        a = self.params
        self.vocab_size = a.vocab_size
        self.n_layers = a.n_layers
        self.tok_embeddings = nn.Embedding(a.vocab_size, a.dim, device=device, dtype=dtype)
        self.layers = nn.ModuleList([TransformerBlock(i, a, device=device, dtype=dtype)
                                     for i in range(a.n_layers)])
        self.norm = RMSNorm(a.dim, eps=a.norm_eps, device=device, dtype=dtype)
        self.output = nn.Linear(a.dim, a.vocab_size, bias=False, device=device, dtype=dtype)
        if device is None or torch.device(device).type != "meta":
            for m in self.modules():  # small normal init (the reference loads weights)
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens):
        bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        head_dim = self.params.dim // self.params.n_heads
        cos, sin = rope_cos_sin(seqlen, head_dim, self.params.rope_theta, tokens.device, h.dtype)
        mask = None
        if seqlen > 1:
            mask = torch.full((1, 1, seqlen, seqlen), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=1).type_as(h)
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        h = self.norm(h)
        return self.output(h).float()


def llama(device=None, dtype=None, **overrides):
    """A LLaMA-style decoder; keyword overrides go to LlamaArgs (dim, n_layers, n_heads, ...)."""
    return Transformer(LlamaArgs(**overrides), device=device, dtype=dtype)


def llama_7b(device=None, dtype=None, **overrides):
    """LLaMA-7B (published configuration): dim 4096, 32 layers, 32 heads, FFN 11008, vocab 32000."""
    cfg = dict(dim=4096, n_layers=32, n_heads=32, vocab_size=32000, multiple_of=256, norm_eps=1e-6)
    cfg.update(overrides)
    return Transformer(LlamaArgs(**cfg), device=device, dtype=dtype)


def llama2_13b(device=None, dtype=None, **overrides):
    """Llama 2 13B (meta-llama/llama params.json): dim 5120, 40 layers, 40 heads, FFN 13824
    (2/3 x 4 x 5120 rounded up to 256), vocab 32000, norm eps 1e-5."""
    cfg = dict(dim=5120, n_layers=40, n_heads=40, vocab_size=32000, multiple_of=256, norm_eps=1e-5)
    cfg.update(overrides)
    return Transformer(LlamaArgs(**cfg), device=device, dtype=dtype)


def llama3_8b(device=None, dtype=None, **overrides):
    """Llama 3 8B (meta-llama/llama3 params.json): dim 4096, 32 layers, 32 heads, 8 KV heads
    (grouped-query attention), FFN 14336 (ffn_dim_multiplier 1.3, multiple_of 1024), vocab
    128256, rope theta 500000, norm eps 1e-5."""
    cfg = dict(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, multiple_of=1024,
               ffn_dim_multiplier=1.3, norm_eps=1e-5, rope_theta=500000.0, max_seq_len=8192)
    cfg.update(overrides)
    return Transformer(LlamaArgs(**cfg), device=device, dtype=dtype)
