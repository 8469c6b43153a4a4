#!/usr/bin/env python3
"""Write hand-made PyTorch memory snapshots with Python's own pickle.

    gen_snapshots.py DIR

three_devices.pickle (protocol 5): three devices; device 0 has blocks freed
before the trace began and ghost blocks (model weights never allocated in
the trace), device 1 grows an expandable segment (segment_map) and gives
part of it back (segment_unmap), device 2 runs out of memory (an `oom`
entry). Every device pairs free_requested with a later free_completed, on
two streams, with frames memory_viz would filter.

old_writer.pickle (protocol 2): an older writer: `free` actions, no
time_us, blocks without addresses (they abut) and frames in `history`.

segment_churn.pickle (protocol 4): segments reserved and given back
between two block events (a segment allocated and freed at once, another
allocated while an older one is freed, an expandable range mapped and
unmapped): the reserved peak counts them (90 MiB on cuda:0, 24 MiB on
cuda:1).

two_holes.pickle and divergence.pickle (protocol 4): the device gives
the second of two 20 MiB segments the lower address; each gets two 9 MiB
blocks, then a 2 MiB request goes to a 2 MiB hole. In two_holes it goes
where PyTorch puts it (the lower address, of the later segment); in
divergence, an edited recording, to the other hole: cuda-caching's check
names that allocation.

Deterministic (seeded), so the test's figures never move.
"""
import os
import pickle
import random
import sys

MB = 1 << 20
FRAMES = [
    {"name": "torch::unwind::unwind()", "filename": "??", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::malloc",
     "filename": "CUDACachingAllocator.cpp", "line": 1200},
    {"name": "_PyEval_EvalFrameDefault", "filename": "ceval.c", "line": 10},
    {"name": "forward", "filename": "model.py", "line": 54},
    {"name": "main", "filename": "train.py", "line": 9},
]


def device_trace(rng, dev, base, clock, expandable, oom):
    """Entries and final segment of one device; clock is a shared [t]."""
    entries = []
    weights = [(base + i * 4 * MB, 4 * MB) for i in range(3)]  # ghosts
    early_base = base + 12 * MB
    early = [(early_base + i * MB, MB) for i in range(2)]      # pre-trace
    bump = base + 16 * MB
    live = {}
    freed = []
    mapped = bump if expandable else None
    stream_of = {}

    def tick():
        clock[0] += rng.randint(1, 50)
        return clock[0]

    def entry(action, addr, size, stream=0, **kw):
        e = {"action": action, "addr": addr, "size": size, "stream": stream,
             "time_us": tick(), "frames": FRAMES}
        e.update(kw)
        entries.append(e)

    if not expandable:
        entry("segment_alloc", base + 16 * MB, 64 * MB)
    for addr, size in early:
        entry("free_requested", addr, size)
        entry("free_completed", addr, size)
    oom_done = not oom
    for step in range(300):
        if not oom_done and step >= 150:
            oom_done = True
            entries.append({"action": "oom", "size": 80 << 30,
                            "device_free": 123 * MB, "stream": 0,
                            "time_us": tick(), "frames": FRAMES})
        if live and (rng.random() < 0.45 or len(live) > 40):
            addr = rng.choice(sorted(live))
            size = live.pop(addr)
            stream = stream_of.pop(addr)
            entry("free_requested", addr, size, stream)
            entry("free_completed", addr, size, stream)
            freed.append((addr, size))
            continue
        size = rng.choice([512, 4096, 65536, MB, 2 * MB])
        reuse = [f for f in freed if f[1] == size]
        if reuse and rng.random() < 0.7:
            addr = reuse[0][0]
            freed.remove(reuse[0])
        else:
            if bump + size > base + 80 * MB:
                continue
            addr = bump
            bump += size
            if expandable:
                while mapped < bump:
                    entry("segment_map", mapped, 2 * MB)
                    mapped += 2 * MB
        stream = rng.choice([0, 0, 0, 0x55aa55aa00])
        live[addr] = size
        stream_of[addr] = stream
        entry("alloc", addr, size, stream)
    if expandable:
        # Give back the last 2 MiB when nothing lives there.
        top = mapped - 2 * MB
        if all(a + s <= top for a, s in live.items()) and top >= bump:
            entry("segment_unmap", top, 2 * MB)
            mapped = top
    seg_addr = base + 16 * MB
    seg_size = 64 * MB if not expandable else mapped - seg_addr
    blocks = []
    cur = seg_addr
    for addr in sorted(live):
        if addr > cur:
            blocks.append({"address": cur, "size": addr - cur,
                           "requested_size": 0, "state": "inactive",
                           "frames": []})
        blocks.append({"address": addr, "size": live[addr],
                       "requested_size": live[addr] - 7,
                       "state": "active_allocated", "frames": FRAMES})
        cur = addr + live[addr]
    if cur < seg_addr + seg_size:
        blocks.append({"address": cur, "size": seg_addr + seg_size - cur,
                       "requested_size": 0, "state": "inactive",
                       "frames": []})
    segs = [{"device": dev, "address": seg_addr, "total_size": seg_size,
             "allocated_size": 0, "active_size": 0, "requested_size": 0,
             "stream": 0, "segment_type": "large",
             "segment_pool_id": (0, 0), "is_expandable": expandable,
             "frames": [], "blocks": blocks}]
    # The weights' segment existed before the trace and stays.
    segs.append({"device": dev, "address": base, "total_size": 12 * MB,
                 "stream": 0, "is_expandable": False, "frames": [],
                 "blocks": [{"address": a, "size": s, "requested_size": s,
                             "state": "active_allocated", "frames": []}
                            for a, s in weights]})
    return entries, segs


def three_devices():
    rng = random.Random(12)
    clock = [1_700_000_000_000_000]
    traces, segments = [], []
    for dev in range(3):
        entries, segs = device_trace(rng, dev, 0x7f0000000000 + dev * (1 << 36),
                                     clock, expandable=dev == 1, oom=dev == 2)
        traces.append(entries)
        segments += segs
    # Interleave the devices' clocks: shift each device's times.
    for dev, entries in enumerate(traces):
        for k, e in enumerate(entries):
            e["time_us"] = 1_700_000_000_000_000 + 10 * k + dev
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": {"expandable_segments": True,
                                   "max_split_size": -1,
                                   "PYTORCH_CUDA_ALLOC_CONF":
                                       "expandable_segments:True"}}


def old_writer():
    base = 0x7f5000000000
    trace = []
    for k in range(6):
        trace.append({"action": "alloc", "addr": base + k * 1024,
                      "size": 1024, "stream": 0})
    for k in range(0, 6, 2):
        trace.append({"action": "free", "addr": base + k * 1024,
                      "size": 1024, "stream": 0})
    blocks = []
    for k in range(6):
        state = "active_allocated" if k % 2 else "inactive"
        blocks.append({"size": 1024, "state": state,
                       "history": [{"addr": base + k * 1024,
                                    "real_size": 1000,
                                    "frames": FRAMES[3:]}]})
    blocks.append({"size": 2048, "state": "active_allocated",
                   "history": [{"addr": base + 6 * 1024, "real_size": 2000,
                                "frames": FRAMES[3:]}]})
    return {"segments": [{"device": 0, "address": base,
                          "total_size": 8 * 1024, "stream": 0,
                          "blocks": blocks}],
            "device_traces": [trace]}


def segment_churn():
    s0, s1, s2, s3 = (0x7f6000000000 + k * (1 << 30) for k in range(4))
    x = 0x7f7000000000
    t = [1_700_000_000_000_000]

    def e(action, addr, size, dev=0):
        t[0] += 7
        return {"action": action, "addr": addr, "size": size, "stream": 0,
                "time_us": t[0], "frames": FRAMES[3:]}

    dev0 = [
        e("alloc", s0, 2 * MB),
        e("segment_alloc", s1, 40 * MB),    # reserved and given back
        e("segment_free", s1, 40 * MB),     # before the next block event
        e("segment_alloc", s2, 10 * MB),    # while s3 (from before the
        e("segment_free", s3, 30 * MB),     # trace) still is
        e("free_completed", s0, 2 * MB),
        e("alloc", s2, MB),
    ]
    dev1 = [
        e("alloc", x, 4 * MB),
        e("segment_map", x + 8 * MB, 16 * MB),
        e("segment_unmap", x + 8 * MB, 16 * MB),
        e("free_completed", x, 4 * MB),
    ]

    def seg(dev, addr, size, blocks, expandable=False):
        return {"device": dev, "address": addr, "total_size": size,
                "stream": 0, "is_expandable": expandable,
                "blocks": blocks}
    inactive = {"size": 0, "state": "inactive"}
    return {"segments": [
        seg(0, s0, 20 * MB, [dict(inactive, address=s0, size=20 * MB)]),
        seg(0, s2, 10 * MB, [{"address": s2, "size": MB,
                              "requested_size": MB,
                              "state": "active_allocated"},
                             dict(inactive, address=s2 + MB, size=9 * MB)]),
        seg(1, x, 8 * MB, [dict(inactive, address=x, size=8 * MB)], True),
    ], "device_traces": [dev0, dev1]}


def two_holes(divergent):
    a, b = 0x7f8010000000, 0x7f8008000000   # b, reserved later, is lower
    x = (a if divergent else b) + 18 * MB
    t = [1_700_000_000_000_000]

    def e(action, addr, size):
        t[0] += 11
        return {"action": action, "addr": addr, "size": size, "stream": 0,
                "time_us": t[0], "frames": FRAMES[3:]}

    trace = [e("segment_alloc", a, 20 * MB), e("alloc", a, 9 * MB),
             e("alloc", a + 9 * MB, 9 * MB),
             e("segment_alloc", b, 20 * MB), e("alloc", b, 9 * MB),
             e("alloc", b + 9 * MB, 9 * MB),
             e("alloc", x, 2 * MB), e("free_requested", x, 2 * MB),
             e("free_completed", x, 2 * MB)]

    def seg(addr):
        blocks = [{"address": addr + k * 9 * MB, "size": 9 * MB,
                   "requested_size": 9 * MB, "state": "active_allocated"}
                  for k in range(2)]
        blocks.append({"address": addr + 18 * MB, "size": 2 * MB,
                       "requested_size": 0, "state": "inactive"})
        return {"device": 0, "address": addr, "total_size": 20 * MB,
                "stream": 0, "segment_type": "large",
                "is_expandable": False, "blocks": blocks}
    return {"segments": [seg(b), seg(a)], "device_traces": [trace],
            "allocator_settings": {"max_split_size": -1,
                                   "expandable_segments": False,
                                   "PYTORCH_CUDA_ALLOC_CONF": ""}}


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__.split("\n\n")[1])
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "three_devices.pickle"), "wb") as f:
        pickle.dump(three_devices(), f, protocol=5)
    with open(os.path.join(out, "old_writer.pickle"), "wb") as f:
        pickle.dump(old_writer(), f, protocol=2)
    with open(os.path.join(out, "segment_churn.pickle"), "wb") as f:
        pickle.dump(segment_churn(), f, protocol=4)
    with open(os.path.join(out, "two_holes.pickle"), "wb") as f:
        pickle.dump(two_holes(False), f, protocol=4)
    with open(os.path.join(out, "divergence.pickle"), "wb") as f:
        pickle.dump(two_holes(True), f, protocol=4)


if __name__ == "__main__":
    main()
