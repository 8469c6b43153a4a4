#!/usr/bin/env python3
"""Generate MiniMalloc-CSV traces (id,lower,upper,size) for the placement
benchmark (tests/bench/place_bench.sh). Deterministic for a given seed.

  malloc N LIVE [SEED]   a malloc stream: one allocation per step, heavy-
                         tailed sizes (mostly 16 B-4 KiB size classes, a
                         Pareto tail up to 64 MiB), lifetimes mostly short
                         with a long-lived minority, about LIVE blocks live
                         at once (Little's law: mean lifetime = LIVE);
  random N [SEED]        one allocation per step, lifetimes uniform in
                         1-5000 steps, sizes uniform in 1 B-1 MiB;
  compiler N MODEL [SEED] an ML compiler's tensors built from a real model
                         (MODEL: a MiniMalloc CSV such as idealloc's
                         resnet50.csv or G_1.csv): its activation pattern
                         repeated stage after stage until N tensors, each
                         stage's tensors scaled by a batch factor drawn
                         from {1, 2, 4} (real shapes, equal sizes repeat),
                         neighbouring stages overlapping by a fifth, and
                         the model's long-lived tensors (weights, optimiser
                         state) live from their stage's first use to the
                         end of the program.
"""
import csv
import random
import sys


def size_class(rng):
    r = rng.random()
    if r < 0.85:
        return rng.choices([16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512,
                            1024, 2048, 4096],
                           [14, 8, 14, 9, 10, 6, 8, 4, 6, 3, 5, 4, 3, 2])[0]
    # Pareto tail from 4 KiB, alpha 1.1, capped at 64 MiB.
    s = int(4096 / (1.0 - rng.random()) ** (1 / 1.1))
    return min(s, 64 << 20)


def malloc(n, live, rng, out):
    # 90% short (mean 0.1 * live), 10% long, tuned for mean lifetime LIVE.
    short_mean = max(1.0, 0.1 * live)
    long_mean = (live - 0.9 * short_mean) / 0.1
    for i in range(n):
        if rng.random() < 0.9:
            life = 1 + int(rng.expovariate(1 / short_mean))
        else:
            life = 1 + int(rng.expovariate(1 / long_mean))
        out.write("%d,%d,%d,%d\n" % (i, i, i + life, size_class(rng)))


def rand(n, rng, out):
    for i in range(n):
        out.write("%d,%d,%d,%d\n" % (i, i, i + rng.randint(1, 5000),
                                       rng.randint(1, 1 << 20)))


def compiler(n, path, rng, out):
    base = [(int(r["lower"]), int(r["upper"]), int(r["size"]))
            for r in csv.DictReader(open(path))]
    t0 = min(a for a, _, _ in base)
    base = [(a - t0, b - t0, s) for a, b, s in base]
    span = max(b for _, b, _ in base)
    step = span - span // 5
    stages = (n + len(base) - 1) // len(base)
    end = (stages - 1) * step + span + 1
    k = 0
    for st in range(stages):
        shift = st * step
        scale = rng.choice([1, 2, 4])
        for (a, b, s) in base:
            if k == n:
                return
            if b - a > span // 2:
                lo, hi = shift + a, end          # weights, optimiser state
            else:
                lo, hi = shift + a, shift + b    # activations, workspaces
            out.write("%d,%d,%d,%d\n" % (k, lo, hi, s * scale))
            k += 1


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        sys.exit(__doc__)
    kind, n = a[0], int(a[1])
    out = sys.stdout
    out.write("id,lower,upper,size\n")
    if kind == "malloc":
        malloc(n, int(a[2]), random.Random(int(a[3]) if len(a) > 3 else 1),
               out)
    elif kind == "random":
        rand(n, random.Random(int(a[2]) if len(a) > 2 else 1), out)
    elif kind == "compiler":
        compiler(n, a[2], random.Random(int(a[3]) if len(a) > 3 else 1),
                 out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
