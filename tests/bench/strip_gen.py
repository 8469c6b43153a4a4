#!/usr/bin/env python3
"""Generate large MiniMalloc-CSV traces for the strip benchmark.

Kinds (all deterministic for a given seed):
  train N   training step of a deep network: forward activations live until
            their backward op, gradients and workspaces are short, sizes come
            from a few shapes, so many buffers have equal sizes;
  infer N   inference over a network with skip connections, repeated blocks
            of equal-sized tensors;
  malloc N  a recorded malloc stream: many small size classes, mostly short
            lifetimes, some long-lived buffers, a few large ones;
  tile N FILE  copies of a real MiniMalloc CSV (e.g. idealloc's resnet50)
            until N buffers, each copy shifted by a third of the file's span
            so neighbouring copies overlap: real sizes, many equal ones.
"""
import random
import sys


def train(n, rng):
    rows = []
    t = 0
    layers = max(1, n // 6)
    widths = [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20]
    batch = 8
    stack = []
    # Forward: each layer makes an activation kept for backward and a
    # short-lived workspace.
    for i in range(layers):
        size = rng.choice(widths) * batch // 8
        stack.append((t, size))
        ws = rng.choice([16 << 10, 32 << 10, 64 << 10])
        rows.append([t, t + 2, ws])
        t += 1
    # Backward: activations die in reverse order; gradients live briefly.
    for (start, size) in reversed(stack):
        g = size
        rows.append([t, t + 3, g])
        rows.append([t, t + 1, rng.choice([16 << 10, 32 << 10])])
        rows.append([start, t + 1, size])
        t += 1
        if len(rows) >= n:
            break
    while len(rows) < n:
        a = rng.randrange(0, t)
        rows.append([a, a + rng.randrange(1, 4), rng.choice(widths) // 4])
    return rows[:n]


def infer(n, rng):
    rows = []
    t = 0
    shapes = [(56 << 10) * k for k in (1, 2, 4, 8)]
    while len(rows) < n:
        block = rng.randrange(4, 12)
        size = rng.choice(shapes)
        skip_start = t
        for _ in range(block):
            rows.append([t, t + rng.choice([1, 2, 2, 3]), size])
            if rng.random() < 0.3:
                rows.append([t, t + 1, size // 2])
            t += 1
        rows.append([skip_start, t + 1, size])  # the residual branch
    return rows[:n]


def malloc(n, rng):
    rows = []
    classes = [16, 32, 48, 64, 96, 128, 256, 512, 1024, 4096]
    weights = [20, 25, 10, 15, 8, 8, 6, 4, 3, 1]
    t = 0
    for _ in range(n):
        r = rng.random()
        if r < 0.001:
            size = rng.choice([1 << 16, 1 << 18, 1 << 20])
        else:
            size = rng.choices(classes, weights)[0]
        if rng.random() < 0.02:
            life = rng.randrange(1000, 200000)
        else:
            life = 1 + int(rng.expovariate(1 / 40.0))
        rows.append([t, t + life, size])
        t += 1
    end = t + 1
    for r in rows:
        r[1] = min(r[1], end)
    return rows


def tile(n, rng, path):
    import csv
    base = [(int(r["lower"]), int(r["upper"]), int(r["size"]))
            for r in csv.DictReader(open(path))]
    span = max(b for _, b, _ in base)
    step = max(1, span // 3)
    rows = []
    k = 0
    while len(rows) < n:
        shift = k * step + rng.randrange(0, max(1, step // 4))
        for (a, b, s) in base:
            rows.append([a + shift, b + shift, s])
        k += 1
    return rows[:n]


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: strip_gen.py train|infer|malloc N [SEED] > out.csv\n"
                 "       strip_gen.py tile N FILE.csv > out.csv")
    kind, n = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 and kind != "tile" else 1
    rng = random.Random(seed)
    if kind == "tile":
        rows = tile(n, random.Random(1), sys.argv[3])
    else:
        rows = {"train": train, "infer": infer, "malloc": malloc}[kind](n, rng)
    out = sys.stdout
    out.write("id,lower,upper,size\n")
    for i, (a, b, s) in enumerate(rows):
        out.write("%d,%d,%d,%d\n" % (i, a, b, s))


if __name__ == "__main__":
    main()
