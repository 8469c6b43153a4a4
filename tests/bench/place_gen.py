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
                         end of the program;
  compiler-vary N MODEL [SEED] as `compiler`, but the stages' overlap
                         drawn once from {1/3, 1/5, 1/8} and every tensor
                         scaled on its own by a factor from {1, 2, 3, 4, 6}
                         (per-tensor shapes vary, few sizes repeat): the
                         v-r50 traces of strip's quality-vs-budget curve
                         (docs/benchmarks.md, issue 39; seed 2);
  transformer N MODEL [SEED] the training step of a decoder-only
                         transformer with real shapes (MODEL: gpt2,
                         gpt2-medium, llama-1b), one operator a time step,
                         bf16: weights, gradient accumulators and Adam's
                         state live throughout; micro-batch after
                         micro-batch (gradient accumulation, sequence
                         lengths from padding buckets 256-1024) until at
                         least N tensors, each forward saving what backward
                         reads and backward freeing it in reverse, with
                         short-lived workspaces beside the matrix products.
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


def compiler_vary(n, path, rng, out):
    base = [(int(r["lower"]), int(r["upper"]), int(r["size"]))
            for r in csv.DictReader(open(path))]
    t0 = min(a for a, _, _ in base)
    base = [(a - t0, b - t0, s) for a, b, s in base]
    span = max(b for _, b, _ in base)
    step = span - span // rng.choice([3, 5, 8])
    stages = (n + len(base) - 1) // len(base)
    end = (stages - 1) * step + span + 1
    k = 0
    for st in range(stages):
        shift = st * step
        rng.choice([1, 2, 4])  # the stage's scale, unused: keeps the stream
        for (a, b, s) in base:
            if k == n:
                return
            sc = rng.choice([1, 2, 3, 4, 6])
            if b - a > span // 2:
                lo, hi = shift + a, end
            else:
                lo, hi = shift + a, shift + b
            out.write("%d,%d,%d,%d\n" % (k, lo, hi, s * sc))
            k += 1


# layers, model width, heads, feed-forward width, vocabulary, micro-batch
TRANSFORMERS = {
    "gpt2": (12, 768, 12, 3072, 50257, 8),
    "gpt2-medium": (24, 1024, 16, 4096, 50257, 4),
    "llama-1b": (16, 2048, 32, 8192, 32000, 2),
}


def transformer(n, model, rng, out):
    layers, d, heads, ff, vocab, batch = TRANSFORMERS[model]
    bf16, fp32 = 2, 4
    rows = []          # [lo, hi, size]; hi None while live
    t = [1]            # time 0: the program's inputs

    def new(size, lo=None):
        rows.append([t[0] if lo is None else lo, None, size])
        return len(rows) - 1

    def free(*ids):
        for i in ids:
            rows[i][1] = t[0]

    def op(*outs):
        """One operator: its outputs, a workspace beside a product."""
        ids = [new(s) for s in outs]
        t[0] += 1
        return ids

    def matmul(m, k, nn):
        ws = new(rng.choice([4, 8, 16, 32]) << 20)
        (y,) = op(m * nn * bf16)
        free(ws)
        return y

    # Program inputs: weights, gradient accumulators, Adam's m and v.
    shapes = [vocab * d, 2 * d]                  # embedding, final norm
    for _ in range(layers):
        shapes += [d * 3 * d, 3 * d, d * d, d, d * ff, ff, ff * d, d,
                   2 * d, 2 * d]
    for sz in shapes:
        for b in (bf16, fp32, fp32, fp32):
            new(sz * b, lo=0)
    while len(rows) < n:
        seq = rng.choice([256, 512, 768, 1024])
        bs = batch * seq
        (tok,) = op(bs * 8)
        (x,) = op(bs * d * bf16)                 # embedding
        saved = []
        for _ in range(layers):
            (st1,) = op(bs * fp32 * 2)          # layer norm statistics
            (ln1,) = op(bs * d * bf16)
            qkv = matmul(bs, d, 3 * d)
            (scores,) = op(batch * heads * seq * seq * bf16)
            (probs,) = op(batch * heads * seq * seq * bf16)
            free(scores)
            ctx = matmul(bs, seq, d)
            ao = matmul(bs, d, d)
            (x2,) = op(bs * d * bf16)
            free(ao)
            (st2,) = op(bs * fp32 * 2)
            (ln2,) = op(bs * d * bf16)
            h = matmul(bs, d, ff)
            (g,) = op(bs * ff * bf16)
            f = matmul(bs, ff, d)
            (x3,) = op(bs * d * bf16)
            free(f)
            saved.append((x, st1, ln1, qkv, probs, ctx, x2, st2, ln2, h, g))
            x = x3
        (lnf,) = op(bs * d * bf16)
        logits = matmul(bs, d, vocab)
        (loss,) = op(fp32)
        (dlogits,) = op(bs * vocab * bf16)
        free(logits, loss)
        dx = matmul(bs, vocab, d)
        free(dlogits, lnf, x)
        for (x, st1, ln1, qkv, probs, ctx, x2, st2, ln2, h, g) in reversed(
                saved):
            dg = matmul(bs, d, ff)
            free(g)
            (dh,) = op(bs * ff * bf16)
            free(dg, h)
            dln2 = matmul(bs, ff, d)
            free(dh, ln2)
            (dx2,) = op(bs * d * bf16)
            free(dln2, x2, st2, dx)
            dctx = matmul(bs, d, d)
            (dprobs,) = op(batch * heads * seq * seq * bf16)
            (dscores,) = op(batch * heads * seq * seq * bf16)
            free(dprobs, probs)
            (dqkv,) = op(bs * 3 * d * bf16)
            free(dscores, dctx, ctx, qkv)
            dln1 = matmul(bs, 3 * d, d)
            free(dqkv, ln1)
            (dx,) = op(bs * d * bf16)
            free(dln1, dx2, st1, x)
        free(dx, tok)
    t[0] += 1
    for k, (lo, hi, size) in enumerate(rows):
        out.write("%d,%d,%d,%d\n" % (k, lo, t[0] if hi is None else hi,
                                       size))


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
    elif kind == "compiler-vary":
        compiler_vary(n, a[2], random.Random(int(a[3]) if len(a) > 3 else 1),
                      out)
    elif kind == "transformer" and len(a) > 2 and a[2] in TRANSFORMERS:
        transformer(n, a[2],
                    random.Random(int(a[3]) if len(a) > 3 else 1), out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
