#!/usr/bin/env python3
"""The same LibTorch from Python, as plainly as PyTorch is usually written: a
self-attention ViT-A/12 at 84x84 (nn.Linear, nn.LayerNorm, softmax attention,
torch.optim.AdamW), timed for one training step at batch 32 and one image
without gradients. It tells what Debian's torch 1.13 with OpenBLAS does on this
machine today, next to `translution bench --model attention ...`
(docs/performance.md, "The public PyTorch code against this engine"). Not part
of the build or the tests:

    apt-get install python3-torch
    /usr/bin/python3 bench/plain_pytorch_vit.py [intra-op threads, default 1]
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DIM, DEPTH, HEADS, MLP, PATCH, IMAGE, CLASSES, BATCH = 192, 6, 3, 768, 12, 84, 10, 32
GRID = IMAGE // PATCH


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.out = nn.Linear(DIM, 3 * DIM, bias=False), nn.Linear(DIM, DIM)
        self.fc1, self.fc2 = nn.Linear(DIM, MLP), nn.Linear(MLP, DIM)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) * (DIM // HEADS) ** -0.5).softmax(-1)
        x = x + self.out((weights @ v).transpose(1, 2).reshape(b, n, DIM))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Sequential(nn.LayerNorm(PATCH * PATCH), nn.Linear(PATCH * PATCH, DIM), nn.LayerNorm(DIM))
        self.cls = nn.Parameter(torch.zeros(1, 1, DIM))
        self.position = nn.Parameter(torch.zeros(1, GRID * GRID + 1, DIM))
        self.blocks = nn.ModuleList(Block() for _ in range(DEPTH))
        self.norm, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, CLASSES)

    def forward(self, images):
        b = images.shape[0]
        patches = images.view(b, GRID, PATCH, GRID, PATCH).permute(0, 1, 3, 2, 4).reshape(b, GRID * GRID, -1)
        x = torch.cat([self.cls.expand(b, -1, -1), self.embed(patches)], 1) + self.position
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, 0]))


def median_ms(run, repeats, warmup):
    times = []
    for i in range(warmup + repeats):
        start = time.perf_counter()
        run()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return 1e3 * sorted(times)[len(times) // 2]


def main():
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    torch.manual_seed(0)
    model = ViT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    images, labels = torch.randn(BATCH, 1, IMAGE, IMAGE), torch.randint(0, CLASSES, (BATCH,))

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    train = median_ms(train_step, 10, 3)
    with torch.no_grad():
        one = median_ms(lambda: model(images[:1]), 200, 20)
    params = sum(p.numel() for p in model.parameters())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op thread(s), {params} parameters")
    print(f"train, batch {BATCH}: {train:.1f} ms/step ({1e3 * BATCH / train:.0f} img/s); one image: {one:.2f} ms")


if __name__ == "__main__":
    main()
