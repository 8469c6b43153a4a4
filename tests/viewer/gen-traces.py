#!/usr/bin/env python3
"""Large, real-shaped traces for the pictures in docs/reports.md and
docs/viewer.md and for the viewer's frame-time benchmark (seeded, so the
same bytes every run). Writes CSV traces (id,lower,upper,size):

  compiler  a training step of a 24-layer transformer as a compiler
            schedules it: weights and optimizer state live throughout,
            activations saved in the forward pass until their backward,
            two 256 MiB attention-score buffers per layer alive a few
            steps, and many small temporaries (about 20k tensors)
  malloc    a long-running server's heap: request-scoped blocks of
            log-normal sizes, caches that grow and are flushed, a few
            huge buffers, names from call sites (N blocks, default 10^6)

usage: gen-traces.py compiler OUT.csv | malloc OUT.csv [N]
"""
import random
import sys

MiB = 1 << 20


def compiler(out):
    rnd = random.Random(16)
    rows = []
    t = 0
    layers, d, tokens, heads, seq = 24, 2048, 8192, 16, 2048

    def op(n=1):
        nonlocal t
        t += n
        return t

    def tmp(prefix, k):
        for j in range(k):
            s = int(rnd.lognormvariate(11, 2.2)) // 256 * 256 + 256
            a = op()
            rows.append((f"{prefix}.tmp{j}", a, a + 1 + rnd.randrange(3),
                         min(s, 64 * MiB)))

    weights = []
    for li in range(layers):
        for w in ("wq", "wk", "wv", "wo", "w1", "w2"):
            sz = d * d * 2 * (4 if w in ("w1", "w2") else 1)
            weights.append((f"layer{li}.{w}", sz))
    # weights and Adam state: live the whole step (end fixed later)
    long_lived = [(n, sz) for n, sz in weights]
    long_lived += [(n + ".adam_m", sz * 2) for n, sz in weights[::3]]
    start = op()
    saved = {}
    act = tokens * d * 2
    for li in range(layers):
        p = f"layer{li}"
        a = op()
        rows.append((f"{p}.ln1.out", a, a + 3, act))
        for x in ("q", "k", "v"):
            s = op()
            saved[f"{p}.attn.{x}"] = s
        for h in range(2):
            s = op()
            rows.append((f"{p}.attn.scores{h}", s, s + 5 + rnd.randrange(3),
                         heads * seq * seq * 2 * 4 // 2))
            tmp(f"{p}.attn.softmax{h}", 12)
        saved[f"{p}.attn.out"] = op()
        tmp(f"{p}.attn.proj", 30)
        saved[f"{p}.mlp.in"] = op()
        saved[f"{p}.mlp.hidden"] = op(2)
        tmp(f"{p}.mlp.gelu", 40)
        a = op()
        rows.append((f"{p}.residual", a, a + 6, act))
        tmp(f"{p}.misc", 260)
    a = op()
    rows.append(("loss.logits", a, a + 40, tokens * 32000 * 2))
    tmp("loss", 200)
    grads = {}
    for li in reversed(range(layers)):
        p = f"layer{li}"
        g = op()
        rows.append((f"{p}.grad.act", g, g + 30, act))
        for key in [k for k in saved if k.startswith(p + ".")]:
            e = op()
            sz = act * (4 if key.endswith("hidden") else 1)
            rows.append((key, saved.pop(key), e, sz))
            tmp(f"{p}.grad.{key.split('.')[-1]}", 40)
        for w in ("wq", "wk", "wv", "wo", "w1", "w2"):
            grads[f"{p}.{w}.grad"] = op()
        s = op()
        rows.append((f"{p}.grad.scores", s, s + 6, heads * seq * seq * 2 * 2))
        tmp(f"{p}.grad.misc", 280)
    opt = op()
    for n, sz in weights:
        s = grads.pop(n + ".grad")
        e = op()
        rows.append((n + ".grad", s, e, sz))
        tmp(n + ".adam", 6)
    end = op(2)
    for n, sz in long_lived:
        rows.append((n, 0, end, sz))
    del opt, start
    write(out, rows)


def malloc(out, n):
    rnd = random.Random(17)
    sites = [f"{m}:{rnd.randrange(40, 900)}" for m in (
        "http_parse", "json_decode", "cache_put", "strdup", "vec_grow",
        "tls_read", "log_format", "db_row", "gzip_inflate", "route_match",
        "session_new", "buf_append")]
    rows, live_cache = [], []
    t = 0
    while len(rows) < n:
        t += 1
        site = rnd.choice(sites)
        r = rnd.random()
        size = max(16, int(rnd.lognormvariate(6, 1.6)))
        if r < 0.75:    # request scoped
            life = 1 + int(rnd.expovariate(1 / 30))
        elif r < 0.97:  # cache entries: long, flushed in waves
            life = 1 + int(rnd.expovariate(1 / 20000))
        elif r < 0.9999:
            life = 1 + int(rnd.expovariate(1 / 400))
        else:           # a huge buffer, briefly
            size = rnd.randrange(64, 512) * MiB
            life = 2 + rnd.randrange(20)
        rows.append((f"{site}#{len(rows)}", t, t + life, size))
    write(out, rows)
    del live_cache


def write(out, rows):
    with open(out, "w") as f:
        f.write("id,lower,upper,size\n")
        for name, a, b, s in rows:
            f.write(f"{name},{a},{b},{s}\n")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("compiler", "malloc"):
        sys.exit(__doc__)
    if sys.argv[1] == "compiler":
        compiler(sys.argv[2])
    else:
        malloc(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10**6)
