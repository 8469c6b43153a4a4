#!/usr/bin/env python3
"""An independent reference for `allocscope explain`: the live set at each
space's peak, by brute force, grouped by whole stack.

    explain_ref.py FILE                 the reference's figures as JSON
    explain_ref.py --check EXE FILE...  TAP: EXE explain FILE --json - agrees
    explain_ref.py --gen DIR            write generated inputs (below)

Written from the formats' semantics (docs/trace-format.md, the issue), not
from the C reader. Reads PyTorch snapshots (Python's pickle with every
import refused) and heaptrack's interpreted files (plain, .gz or .zst
through the zstd program).

The peak of a space is the most bytes live after any event (the earliest
such moment wins); the live set there is every block allocated and not yet
freed, 0-byte blocks included. Groups are the whole stack's text; a block
without frames is in "(no frames)". Groups sort by bytes, then count (both
largest first), then text. The check compares each space's peak bytes and
the top 10 groups: the same texts, bytes and counts, in the same order.

Snapshots (per device, in the device's own order; one step per alloc,
free_requested and free_completed / free): a block lives from `alloc` to
the next free_completed (or free) at its address; a free with no block
live at its address frees a block allocated before the trace (live from
the start, with the free's frames); an active block of the final segments
at an address the trace leaves unallocated lives the whole time (frames
of the block, or of its history's first entry); an alloc at a live
address ends the block there first. A stack is the frames as
"file:line:name", the frames memory_viz hides left out (the unwinder,
the interpreter's machinery), Python files (.py) first, then the others,
innermost first in each part.

heaptrack (interpreted): `+ I` allocates a block of allocation info I
(`a SIZE TRACE`), `- I` frees one live block of info I (blocks of one info
are alike: which one does not matter); each takes a step. A stack is the
trace node's instructions up to the root, innermost first: an instruction
`i IP MODULE [FN [FILE LINE]] [FN FILE LINE]...` reads "FN FILE:LINE" per
frame (inlined ones after it), "FN" without a file, "0xIP MODULE" (the
module's file name) without a function.

--gen DIR writes gen_annotated.pickle (two devices with stages, ghosts,
blocks freed before the trace, frames, compile contexts) and
gen.heaptrack (an interpreted heaptrack file with inlined frames, an
unsymbolised frame and shared stacks), deterministic.
"""
import gzip
import io
import json
import os
import pickle
import random
import subprocess
import sys


class PlainOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: {module}.{name}")


def read_bytes(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return subprocess.run(["zstd", "-dc", path], check=True,
                              stdout=subprocess.PIPE).stdout
    return data


# ---- Snapshots ----

HIDDEN_NAMES = ["unwind::unwind", "CapturedTraceback::gather",
                "gather_with_cpp", "_start", "__libc_start_main", "PyEval_",
                "PyObject_", "PyFunction_"]
HIDDEN_FILES = ["core/boxing", "/Register", "/Redispatch", "pythonrun.c",
                "Modules/main.c", "Objects/call.c", "Objects/methodobject.c",
                "pycore_ceval.h", "ceval.c", "cpython/abstract.h"]


def snapshot_stack(frames):
    py, other = [], []
    for f in frames or []:
        name = f.get("name") if isinstance(f.get("name"), str) else "??"
        file = f.get("filename") if isinstance(f.get("filename"), str) else "??"
        line = f.get("line") if isinstance(f.get("line"), int) else 0
        if any(h in name for h in HIDDEN_NAMES) or \
                any(h in file for h in HIDDEN_FILES):
            continue
        (py if file.endswith(".py") else other).append(f"{file}:{line}:{name}")
    return "\n".join(py + other) or None


def snapshot_spaces(snap):
    traces = snap.get("device_traces") or []
    segs = snap.get("segments") or []
    ndev = max([len(traces)] + [s.get("device", 0) + 1 for s in segs] + [1])
    out = []
    for dev in range(ndev):
        entries = traces[dev] if dev < len(traces) else []
        # Which addresses the trace leaves allocated (for the ghosts).
        live = set()
        for e in entries:
            a = e["action"]
            if a == "alloc":
                live.add(e["addr"])
            elif a in ("free_completed", "free"):
                live.discard(e["addr"])
        start = []   # blocks live at the start: (size, stack)
        for seg in segs:
            if seg.get("device", 0) != dev:
                continue
            addr = seg["address"]
            for b in seg.get("blocks") or []:
                baddr = b.get("address", addr)
                addr = baddr + b["size"]
                if b.get("state") not in ("active_allocated",
                                          "active_pending_free"):
                    continue
                if baddr in live:
                    continue
                frames = b.get("frames")
                if frames is None:
                    hist = b.get("history") or [{}]
                    frames = hist[0].get("frames")
                start.append((b["size"], snapshot_stack(frames)))
        # Frees with nothing live at their address: blocks from before.
        cur = {}
        for e in entries:
            a = e["action"]
            if a == "alloc":
                cur[e["addr"]] = 1
            elif a in ("free_completed", "free"):
                if e["addr"] not in cur:
                    start.append((e.get("size", 0),
                                  snapshot_stack(e.get("frames"))))
                cur.pop(e["addr"], None)
        events = [e for e in entries
                  if e["action"] in ("alloc", "free_completed", "free",
                                     "free_requested")]
        out.append((f"cuda:{dev}", snapshot_replay(start, events)))
    return out


def snapshot_replay(start, events):
    """The peak and its live set, replaying twice: find, then rebuild."""
    def run(stop):
        pre = list(start)         # blocks from before, until their free
        blocks = {}               # addr -> (size, stack)
        cur = sum(s for s, _ in pre)
        best, best_at = cur, -1
        if stop == -1:
            return pre, blocks
        for k, e in enumerate(events):
            a, addr = e["action"], e["addr"]
            if a == "alloc":
                if addr in blocks:
                    cur -= blocks.pop(addr)[0]
                blocks[addr] = (e["size"], snapshot_stack(e.get("frames")))
                cur += e["size"]
            elif a in ("free_completed", "free"):
                if addr in blocks:
                    cur -= blocks.pop(addr)[0]
                else:  # the matching block from before
                    stack = snapshot_stack(e.get("frames"))
                    for i, (s, st) in enumerate(pre):
                        if (s, st) == (e.get("size", 0), stack):
                            cur -= s
                            del pre[i]
                            break
            if k == stop:
                return pre, blocks
            if cur > best:
                best, best_at = cur, k
        return best, best_at

    best, best_at = run(None)
    pre, blocks = run(best_at)
    live = pre + list(blocks.values())
    return best, live


# ---- heaptrack ----

def heaptrack_spaces(data):
    strs, ips, nodes, infos = [""], [""], [(0, 0)], []
    ops = []
    version = 2
    for raw in data.decode("utf-8", "replace").split("\n"):
        line = raw.rstrip("\r")
        if not line or line[0] == "#":
            continue
        kind, rest = line[0], line[2:]
        if kind == "v":
            version = int(line.split()[2], 16)
        elif kind == "s":
            if version >= 3:
                n, _, text = rest.partition(" ")
                strs.append(text)
            else:
                strs.append(rest)
        elif kind == "i":
            f = rest.split()
            ip = int(f[0], 16)

            def frame(fn, fl, ln):
                text = strs[fn] if fn else f"0x{ip:x}"
                return f"{text} {strs[fl]}:{ln}" if fl else text
            parts = []
            if len(f) == 2:
                mod = strs[int(f[1], 16)]
                parts.append(f"0x{ip:x} {mod.rsplit('/', 1)[-1]}")
            i = 2
            if i < len(f):
                fn = int(f[i], 16)
                i += 1
                if (len(f) - i) % 3 == 2:
                    parts.append(frame(fn, int(f[i], 16), int(f[i + 1], 16)))
                    i += 2
                else:
                    parts.append(frame(fn, 0, 0))
            while i + 3 <= len(f):
                parts.append(frame(*(int(x, 16) for x in f[i:i + 3])))
                i += 3
            ips.append("\n".join(parts))
        elif kind == "t":
            ip, parent = (int(x, 16) for x in rest.split())
            nodes.append((ip, parent))
        elif kind == "a":
            size, trace = (int(x, 16) for x in rest.split())
            infos.append((size, trace))
        elif kind in "+-":
            ops.append((kind, int(rest, 16)))
    stacks = {}

    def stack(t):
        if t == 0:
            return None
        if t not in stacks:
            parts, v, n = [], t, 0
            while v != 0 and n < 256:
                ip, parent = nodes[v]
                parts.append(ips[ip] if 0 < ip < len(ips) else f"0x{ip:x}")
                v, n = parent, n + 1
            stacks[t] = "\n".join(parts)
        return stacks[t]

    def run(stop):
        live = {}                 # info -> blocks live
        cur = best = 0
        best_at = -1
        for k, (kind, i) in enumerate(ops):
            if kind == "+":
                live[i] = live.get(i, 0) + 1
                cur += infos[i][0]
            elif live.get(i):
                live[i] -= 1
                cur -= infos[i][0]
            if k == stop:
                return live
            if cur > best:
                best, best_at = cur, k
        return best, best_at

    best, best_at = run(None)
    live = run(best_at) if best_at >= 0 else {}
    blocks = []
    for i, n in live.items():
        blocks += [(infos[i][0], stack(infos[i][1]))] * n
    return [("default", (best, blocks))]


# ---- Groups ----

def figures(path):
    data = read_bytes(path)
    if data[:1] == b"\x80":
        spaces = snapshot_spaces(PlainOnly(io.BytesIO(data)).load())
    else:
        spaces = heaptrack_spaces(data)
    out = []
    for name, (peak, live) in spaces:
        groups = {}
        for size, st in live if peak > 0 else []:
            key = st if st else "(no frames)"
            b, c = groups.get(key, (0, 0))
            groups[key] = (b + size, c + 1)
        order = sorted(groups.items(), key=lambda kv: (-kv[1][0], -kv[1][1],
                                                       kv[0].encode()))
        out.append({"space": name, "peak_bytes": peak,
                    "groups": [{"key": k, "bytes": b, "count": c}
                               for k, (b, c) in order[:10]]})
    return out


def check(exe, files):
    n = fails = 0
    print(f"1..{len(files)}")
    for path in files:
        n += 1
        try:
            ref = figures(path)
            r = subprocess.run([exe, "explain", path, "--json", "-",
                                "--top", "10"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, check=True)
            ours = json.loads(r.stdout)["traces"][0]["spaces"]
        except Exception as e:  # noqa: BLE001 - reported as a failure
            print(f"not ok {n} - {path}: {e}")
            fails += 1
            continue
        problems = []
        byname = {s["space"]: s for s in ours}
        for s in ref:
            o = byname.get(s["space"]) or (ours[0] if len(ours) == 1 and
                                           len(ref) == 1 else None)
            if o is None:
                if s["peak_bytes"]:
                    problems.append(f"{s['space']}: missing")
                continue
            if o["peak_bytes"] != s["peak_bytes"]:
                problems.append(f"{s['space']}: peak {o['peak_bytes']}, "
                                f"reference {s['peak_bytes']}")
            og = [(g["key"], g["bytes"], g["count"]) for g in o["groups"]]
            rg = [(g["key"], g["bytes"], g["count"]) for g in s["groups"]]
            for k, (a, b) in enumerate(zip(og, rg)):
                if a != b:
                    problems.append(f"{s['space']} group {k + 1}: "
                                    f"{a[1]} B x{a[2]} vs reference "
                                    f"{b[1]} B x{b[2]} ({a[0][:60]!r} / "
                                    f"{b[0][:60]!r})")
                    break
            if len(og) != len(rg):
                problems.append(f"{s['space']}: {len(og)} groups, "
                                f"reference {len(rg)}")
        summary = "; ".join(f"{s['space']} peak {s['peak_bytes']}, "
                            f"{len(s['groups'])} groups" for s in ref)
        if problems:
            fails += 1
            print(f"not ok {n} - {path}")
            for p in problems[:10]:
                print(f"#   {p}")
        else:
            print(f"ok {n} - {path}: {summary or 'nothing live'}")
    return 1 if fails else 0


# ---- Generated inputs ----

def gen(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(38)
    MB = 1 << 20
    sites = [[{"name": "torch::unwind::unwind()", "filename": "??", "line": 0},
              {"name": "c10::cuda::CUDACachingAllocator::Native::malloc",
               "filename": "CUDACachingAllocator.cpp", "line": 0},
              {"name": f"layer{k}", "filename": "model.py", "line": 10 + k},
              {"name": "_PyEval_EvalFrameDefault", "filename": "??", "line": 0},
              {"name": "main", "filename": "train.py", "line": 3}]
             for k in range(8)]
    traces, segs, anns = [], [], []
    clock = [1_700_000_000_000_000]
    for dev in range(2):
        base = (0x7f0000000000 if dev == 0 else 0x7e0000000000)
        entries = []

        def entry(action, addr, size, frames):
            clock[0] += rng.randint(1, 40)
            entries.append({"action": action, "addr": addr, "size": size,
                            "stream": 0, "time_us": clock[0],
                            "frames": frames,
                            "compile_context": f"[0/{dev}]" if dev else "N/A",
                            "user_metadata": ""})
        # Two blocks from before the trace, freed early.
        entry("free_requested", base, MB, sites[7])
        entry("free_completed", base, MB, sites[7])
        entry("free_completed", base + MB, 2 * MB, sites[6])
        live = {}
        nxt = base + 8 * MB
        for step in range(400):
            for at, stage, name in ((50, "START", "forward"),
                                    (150, "END", "forward"),
                                    (200, "START", "backward"),
                                    (250, "START", "backward.inner"),
                                    (300, "END", "backward.inner"),
                                    (330, "END", "backward")):
                if step == at:
                    anns.append({"stage": stage, "name": name,
                                 "device": dev, "time_us": clock[0] + 1})
            if live and (rng.random() < 0.45 or len(live) > 40):
                addr = rng.choice(sorted(live))
                size, fr = live.pop(addr)
                entry("free_requested", addr, size, fr)
                entry("free_completed", addr, size, fr)
            else:
                k = rng.randrange(8)
                size = (k + 1) * rng.choice([512, 4096, MB // 2])
                addr = nxt
                nxt += size + 512
                live[addr] = (size, sites[k])
                entry("alloc", addr, size, sites[k])
        traces.append(entries)
        # Final segments: the blocks still live, and ghosts (weights).
        blocks = [{"address": a, "size": s, "state": "active_allocated",
                   "frames": f} for a, (s, f) in sorted(live.items())]
        ghosts = [{"address": base + 4 * MB + i * MB, "size": MB,
                   "state": "active_allocated",
                   "frames": sites[i] if i else []} for i in range(3)]
        segs.append({"device": dev, "address": base,
                     "total_size": nxt - base, "stream": 0,
                     "blocks": ghosts + blocks})
    # A stage left open and one nested stage.
    anns.append({"stage": "START", "name": "open", "device": 1,
                 "time_us": clock[0] - 50})
    snap = {"segments": segs, "device_traces": traces,
            "external_annotations": anns,
            "allocator_settings": {"expandable_segments": False}}
    with open(os.path.join(out_dir, "gen_annotated.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)

    # heaptrack, interpreted: 3 modules, inlined frames, shared stacks.
    w = ["v 10400 3", "X ./prog", "I 1000 100000"]
    strings = ["/usr/bin/prog", "libc.so.6", "main", "prog.c", "work",
               "helper", "inl.h", "alloc_node", "tree.c"]
    for s in strings:
        w.append(f"s {len(s.encode()):x} {s}")
    # instructions: 1 main prog.c:10, 2 work prog.c:20 + inlined helper,
    # 3 alloc_node tree.c:5, 4 unsymbolised in libc, 5 work prog.c:20 again
    w += ["i 401000 1 3 4 a", "i 401100 1 5 4 14 6 7 3",
          "i 401200 1 8 9 5", "i 7f0000001234 2", "i 401104 1 5 4 14 6 7 3"]
    w += ["t 1 0", "t 2 1", "t 3 2", "t 4 3", "t 5 1", "t 3 5"]
    w += ["a 40 4", "a 1000 3", "a 20 2", "a 0 1", "a 1000 6", "a 300 5"]
    live = []
    for step in range(3000):
        if live and rng.random() < 0.47:
            w.append(f"- {live.pop(rng.randrange(len(live))):x}")
        else:
            i = rng.randrange(6)
            live.append(i)
            w.append(f"+ {i:x}")
        if step % 500 == 0:
            w.append(f"c {step:x}")
    with open(os.path.join(out_dir, "gen.heaptrack"), "w") as f:
        f.write("\n".join(w) + "\n")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--gen":
        gen(sys.argv[2])
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "--check":
        return check(sys.argv[2], sys.argv[3:])
    if len(sys.argv) == 2:
        json.dump(figures(sys.argv[1]), sys.stdout, indent=1)
        print()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
