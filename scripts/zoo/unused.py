"""A model whose forward skips some of its parameters (the case DDP's
find_unused_parameters=True exists for): an MLP trunk with two parallel branches of which the
forward takes only `branch_a` (a hard-wired routing decision, as in mixture-of-experts or
multi-task models), a main head and an auxiliary head that only runs when `use_aux` is set.
Unused in forward: branch_b.{0,2}.{weight,bias} (middle of the parameter list) and
aux_head.{weight,bias} (end of it).
"""
import torch
from torch import nn


class SkipBranchNet(nn.Module):
    """forward(x (batch, in_dim) float32) -> logits (batch, classes)."""

    def __init__(self, in_dim=256, width=1024, classes=16, use_aux=False):
        super().__init__()
        self.use_aux = use_aux
        self.stem = nn.Sequential(nn.Linear(in_dim, width), nn.ReLU())
        self.branch_a = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))
        self.branch_b = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)
        self.aux_head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.stem(x)
        h = h + self.branch_a(h)  # branch_b is never taken
        h = self.norm(h)
        out = self.head(h)
        if self.use_aux:
            out = out + self.aux_head(h)
        return out


def skip_branch_net(**kw):
    return SkipBranchNet(**kw)
