#!/usr/bin/env python3
"""DDP training on Conflux from PyTorch: the only Conflux-specific word is the backend's name.

    torchrun --nproc-per-node 4 examples/torch_ddp.py [STEPS]

Trains a small causal transformer language model on a synthetic task (predict the next token of
repeating sequences) and prints the loss per step on rank 0. Once the package is pip-installed,
torch loads it by itself; from a build tree, put build/python/lib on PYTHONPATH.
"""
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_conflux  # noqa: F401  (registers "conflux"; pip-installed, torch also loads it by itself)

VOCAB, D, LAYERS, HEADS, SEQ, BATCH = 64, 128, 2, 4, 32, 16


class TinyGPT(nn.Module):
    """A causal transformer language model (perf/torch_bench.py times a larger one)."""

    def __init__(self, vocab=VOCAB, d=D, layers=LAYERS, heads=HEADS, seq=SEQ):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens) + self.pos, mask=self.mask, is_causal=True))


def batch(step, rank):
    g = torch.Generator().manual_seed(step * 1000 + rank)
    start = torch.randint(0, VOCAB, (BATCH, 1), generator=g)
    period = torch.randint(2, 6, (BATCH, 1), generator=g)
    seq = (start + torch.arange(SEQ + 1) % period) % VOCAB  # repeating patterns to learn
    return seq[:, :-1], seq[:, 1:]


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    dist.init_process_group("conflux")  # was: "gloo" or "nccl"
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(TinyGPT())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(steps):
        x, y = batch(step, rank)
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"step {step:3d}  loss {mean.item():.4f}  ({world} ranks, backend {dist.get_backend()})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
