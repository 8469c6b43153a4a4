#!/usr/bin/env python3
"""An independent reader of PyTorch memory snapshots, for tests.

Loads the pickle with an Unpickler whose find_class refuses every import,
then replays each device's trace on its own and prints, per device, the
largest total size of live blocks and the number of blocks:

    cuda:0 lower_bound=N buffers=M

With segments, each line also gives the most memory reserved at once:

    cuda:0 lower_bound=N buffers=M reserved_peak=R

Semantics (the issue's, written without looking at the C reader): a block
lives from `alloc` to the next `free_completed` (or `free`) at the same
address of the same device; a free with no alloc before it was allocated
before the trace and lives from the start; an active block of the final
`segments` whose address the trace leaves unallocated lives the whole time;
an alloc at an address still live ends the block there first.
"""
import pickle
import sys


class PlainOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: {module}.{name}")


def device_figures(snap, dev):
    trace = snap.get("device_traces") or []
    entries = trace[dev] if dev < len(trace) else []
    live = {}      # addr -> size
    before = []    # sizes of blocks freed before any alloc
    for e in entries:
        a = e["action"]
        if a == "alloc":
            live[e["addr"]] = e["size"]
        elif a in ("free_completed", "free"):
            if e["addr"] in live:
                del live[e["addr"]]
            else:
                before.append(e["size"])
    ghosts = []
    for seg in snap.get("segments") or []:
        if seg.get("device", 0) != dev:
            continue
        addr = seg["address"]
        for b in seg.get("blocks") or []:
            baddr = b.get("address", addr)
            addr = baddr + b["size"]
            if b.get("state") in ("active_allocated", "active_pending_free") \
                    and baddr not in live:
                ghosts.append(b["size"])
    cur = sum(before) + sum(ghosts)
    peak = cur
    count = len(before) + len(ghosts)
    live = {}
    freed_before = 0
    for e in entries:
        a = e["action"]
        if a == "alloc":
            if e["addr"] in live:
                cur -= live.pop(e["addr"])
            live[e["addr"]] = e["size"]
            cur += e["size"]
            count += 1
            peak = max(peak, cur)
        elif a in ("free_completed", "free"):
            if e["addr"] in live:
                cur -= live.pop(e["addr"])
            elif freed_before < len(before):
                cur -= e["size"]
                freed_before += 1
    return peak, count


def reserved_peak(snap, dev):
    """The most memory the allocator held reserved at once on `dev`: the
    device's final segments with the trace undone give what was reserved
    before it (as memory_viz does), then each segment entry in order."""
    trace = snap.get("device_traces") or []
    entries = trace[dev] if dev < len(trace) else []
    final = sum(seg["total_size"] for seg in snap.get("segments") or []
                if seg.get("device", 0) == dev)
    opened = {}    # addr -> size of ranges the trace reserved
    deltas = []
    for e in entries:
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            opened[e["addr"]] = e["size"]
            deltas.append(e["size"])
        elif a in ("segment_free", "segment_unmap"):
            size = e.get("size") or opened.get(e["addr"], 0)
            opened.pop(e["addr"], None)
            deltas.append(-size)
    cur = final - sum(deltas)
    peak = cur
    for d in deltas:
        cur += d
        peak = max(peak, cur)
    return peak


def has_segments(snap):
    if snap.get("segments"):
        return True
    return any(e["action"].startswith("segment_")
               for entries in snap.get("device_traces") or []
               for e in entries)


def main():
    with open(sys.argv[1], "rb") as f:
        snap = PlainOnly(f).load()
    ndev = len(snap.get("device_traces") or [])
    for seg in snap.get("segments") or []:
        ndev = max(ndev, seg.get("device", 0) + 1)
    segs = has_segments(snap)
    for dev in range(max(ndev, 1)):
        peak, count = device_figures(snap, dev)
        line = f"cuda:{dev} lower_bound={peak} buffers={count}"
        if segs:
            line += f" reserved_peak={reserved_peak(snap, dev)}"
        print(line)


if __name__ == "__main__":
    main()
