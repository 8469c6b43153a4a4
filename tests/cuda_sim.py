#!/usr/bin/env python3
"""Write synthetic PyTorch memory snapshots for tests of cuda-caching.

A small, separate model of the caching allocator (from
../shared/specs/pytorch-caching-allocator.md, plain lists, no speed) runs a
seeded random workload on one or more devices and streams, with or without
expandable segments and with a device capacity (OOM entries), and writes
what torch.cuda.memory._dump_snapshot() writes: the final `segments` with
their blocks, and `device_traces` of which only the last `keep` entries
survive (the ring buffer), so the recording starts mid-run.

    cuda_sim.py OUT.pickle SEED [--expandable] [--devices N] [--streams N]
                [--capacity BYTES] [--keep N] [--ops N]
"""
import argparse
import pickle
import random

MIN, SMALL, SBUF, LBUF, MINLARGE, RLARGE = 512, 1 << 20, 2 << 20, 20 << 20, \
    10 << 20, 2 << 20


def rup(n, a):
    return (n + a - 1) // a * a


class Blk:
    def __init__(s, seg, addr, size, mapped=True):
        s.seg, s.addr, s.size, s.mapped = seg, addr, size, mapped
        s.alloc, s.req = False, 0


class Seg:
    def __init__(s, addr, size, stream, small, exp):
        s.addr, s.size, s.stream, s.small, s.exp = addr, size, stream, \
            small, exp
        s.blocks = []


class Dev:
    def __init__(s, idx, exp, cap, out):
        s.idx, s.exp, s.cap, s.out = idx, exp, cap, out
        s.segs, s.reserved = [], 0
        s.next_addr = 0x7f0000000000 + idx * (1 << 40)
        s.ranges = {}

    def rec(s, action, addr, size, stream, **kw):
        e = {"action": action, "addr": addr, "size": size,
             "stream": stream, "time_us": len(s.out), "frames": []}
        e.update(kw)
        s.out.append(e)

    def free_blocks(s, small, stream):
        r = [b for g in s.segs if g.small == small and g.stream == stream
             for b in g.blocks if b.mapped and not b.alloc]
        r.sort(key=lambda b: (b.size, b.addr))
        return r

    def merge(s, g):
        i = 0
        while i + 1 < len(g.blocks):
            a, b = g.blocks[i], g.blocks[i + 1]
            if not a.alloc and not b.alloc and a.mapped == b.mapped:
                a.size += b.size
                del g.blocks[i + 1]
            else:
                i += 1

    def new_seg(s, size, stream, small):
        if s.reserved + size > s.cap:
            return None
        g = Seg(s.next_addr, size, stream, small, False)
        s.next_addr += rup(size, RLARGE) + (64 << 20)
        g.blocks = [Blk(g, g.addr, size)]
        s.segs.append(g)
        s.reserved += size
        s.rec("segment_alloc", g.addr, size, stream)
        return g.blocks[0]

    def expand(s, size, stream, small):
        page = SBUF if small else LBUF
        key = (stream, small)
        if key not in s.ranges:
            g = Seg(s.next_addr, 1 << 36, stream, small, True)
            s.next_addr += 1 << 37
            g.blocks = [Blk(g, g.addr, g.size, mapped=False)]
            s.segs.append(g)
            s.ranges[key] = g
        g = s.ranges[key]

        def free(x):
            return x is not None and not x.alloc

        def nxt(x):
            k = g.blocks.index(x)
            return g.blocks[k + 1] if k + 1 < len(g.blocks) else None

        def prv(x):
            k = g.blocks.index(x)
            return g.blocks[k - 1] if k else None

        # the lowest unmapped block (with a free block before it) from
        # which enough unallocated address space follows
        cand = None
        for b in [x for x in g.blocks if not x.mapped]:
            c = prv(b) if free(prv(b)) else b
            have, x = 0, c
            while have < size and free(x):
                have += x.size
                x = nxt(x)
            if have >= size:
                cand = c
                break
        if cand is None:
            return None

        def map_block(b, n):
            n = min(rup(n, page), b.size)
            if s.reserved + n > s.cap:
                return None
            s.reserved += n
            s.rec("segment_map", b.addr, n, stream)
            if n < b.size:
                g.blocks.insert(g.blocks.index(b) + 1,
                                Blk(g, b.addr + n, b.size - n, mapped=False))
                b.size = n
            b.mapped = True
            k = g.blocks.index(b)
            lo = k - 1 if k and free(g.blocks[k - 1]) and \
                g.blocks[k - 1].mapped else k
            hi = k + 1 if k + 1 < len(g.blocks) and \
                free(g.blocks[k + 1]) and g.blocks[k + 1].mapped else k
            m = Blk(g, g.blocks[lo].addr,
                    sum(x.size for x in g.blocks[lo:hi + 1]))
            g.blocks[lo:hi + 1] = [m]
            return m

        c = cand
        if not c.mapped:
            c = map_block(c, min(c.size, size))
            if c is None:
                return None
        while c.size < size:
            n2 = nxt(c)
            c = map_block(n2, min(size - c.size, n2.size))
            if c is None:
                return None
        return c

    def release_all(s):
        for g in list(s.segs):
            if g.exp:
                continue
            if len(g.blocks) == 1 and not g.blocks[0].alloc:
                s.segs.remove(g)
                s.reserved -= g.size
                s.rec("segment_free", g.addr, g.size, g.stream)
        for g in s.ranges.values():
            page = SBUF if g.small else LBUF
            for i, b in enumerate(list(g.blocks)):
                if b.alloc or not b.mapped:
                    continue
                lo = g.addr + rup(b.addr - g.addr, page)
                hi = g.addr + (b.addr + b.size - g.addr) // page * page
                if hi <= lo:
                    continue
                k = g.blocks.index(b)
                parts = []
                if lo > b.addr:
                    parts.append(Blk(g, b.addr, lo - b.addr))
                parts.append(Blk(g, lo, hi - lo, mapped=False))
                if hi < b.addr + b.size:
                    parts.append(Blk(g, hi, b.addr + b.size - hi))
                g.blocks[k:k + 1] = parts
                s.reserved -= hi - lo
                s.rec("segment_unmap", lo, hi - lo, g.stream)
            s.merge(g)

    def malloc(s, orig, stream):
        size = MIN if orig < MIN else rup(orig, MIN)
        small = size <= SMALL
        asize = SBUF if small else LBUF if size < MINLARGE else \
            rup(size, RLARGE)
        cand = [b for b in s.free_blocks(small, stream) if b.size >= size]
        b = cand[0] if cand else None

        def exp_size(x):
            g = x.seg
            k = g.blocks.index(x)
            nxt = g.blocks[k + 1] if k + 1 < len(g.blocks) else None
            return x.size + (nxt.size if nxt and not nxt.mapped else 0)
        # best fit by the size a block at the end of a range can grow to
        k = 0
        while b is not None and b.seg.exp and k + 1 < len(cand) and \
                exp_size(cand[k + 1]) < exp_size(b):
            k += 1
            b = cand[k]
        if b is None:
            for attempt in range(2):
                b = (s.expand(size, stream, small) if s.exp else
                     s.new_seg(asize, stream, small))
                if b is not None or attempt:
                    break
                s.release_all()
        if b is None:
            s.rec("oom", 0, asize, stream, device_free=s.cap - s.reserved)
            return None
        g = b.seg
        rem = b.size - size
        if (rem >= MIN) if (small or s.exp) else (rem > SMALL):
            k = g.blocks.index(b)
            g.blocks.insert(k + 1, Blk(g, b.addr + size, rem))
            b.size = size
        b.alloc, b.req = True, orig
        s.rec("alloc", b.addr, orig, stream)
        return b

    def free(s, b, stream):
        s.rec("free_requested", b.addr, b.req, stream)
        s.rec("free_completed", b.addr, b.req, stream)
        b.alloc = False
        s.merge(b.seg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("seed", type=int)
    ap.add_argument("--expandable", action="store_true")
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--capacity", type=int, default=1 << 40)
    ap.add_argument("--keep", type=int, default=3000)
    ap.add_argument("--ops", type=int, default=3000)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    traces = [[] for _ in range(a.devices)]
    devs = [Dev(d, a.expandable, a.capacity, traces[d])
            for d in range(a.devices)]
    live = []
    for _ in range(a.ops):
        d = rnd.randrange(a.devices)
        if live and (len(live) > 60 or rnd.random() < 0.45):
            dv, b, st = live.pop(rnd.randrange(len(live)))
            dv.free(b, st)
            continue
        k = rnd.random()
        n = (rnd.randrange(1, 4096) if k < 0.3 else
             rnd.randrange(1, 1 << 20) if k < 0.5 else
             rnd.randrange(1 << 20, 12 << 20) if k < 0.8 else
             rnd.randrange(1, 96 << 20))
        st = rnd.randrange(a.streams)
        b = devs[d].malloc(n, st)
        if b is not None:
            live.append((devs[d], b, st))
    segments = []
    for dv in devs:
        for g in sorted(dv.segs, key=lambda g: g.addr):
            runs = []
            for b in g.blocks:
                if not b.mapped:
                    runs.append(None)
                    continue
                if not runs or runs[-1] is None:
                    runs.append([])
                runs[-1].append(b)
            for r in runs:
                if not r:
                    continue
                segments.append({
                    "device": dv.idx, "address": r[0].addr,
                    "total_size": sum(b.size for b in r),
                    "stream": g.stream,
                    "segment_type": "small" if g.small else "large",
                    "is_expandable": g.exp, "frames": [],
                    "blocks": [{"address": b.addr, "size": b.size,
                                "requested_size": b.req,
                                "state": "active_allocated" if b.alloc
                                else "inactive", "frames": []}
                               for b in r]})
    snap = {"segments": segments,
            "device_traces": [t[-a.keep:] for t in traces],
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF":
                    "expandable_segments:True" if a.expandable else "",
                "max_split_size": -1,
                "garbage_collection_threshold": 0.0,
                "expandable_segments": a.expandable,
                "roundup_power2_divisions": {str(1 << i): 0
                                             for i in range(16)}}}
    with open(a.out, "wb") as f:
        pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main()
