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
import functools
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


ACTIONS = ("alloc", "free_completed", "free", "free_requested")


def number_entries(traces):
    """Every entry of every device in one time order (ties: device, then
    position), numbered: _seq; an alloc's _end is the _seq of the entry that
    ends it (its free, or an alloc at its address), else infinity."""
    merged = []
    for dev, entries in enumerate(traces):
        for k, e in enumerate(entries):
            if e.get("action") in ACTIONS:
                merged.append((e.get("time_us", 0), dev, k, e))
    merged.sort(key=lambda x: x[:3])
    for seq, (_, _, _, e) in enumerate(merged):
        e["_seq"] = seq + 1
    for entries in traces:
        cur = {}
        for e in entries:
            a = e.get("action")
            if a == "alloc":
                if e["addr"] in cur:
                    cur[e["addr"]]["_end"] = e["_seq"]
                cur[e["addr"]] = e
                e["_end"] = float("inf")
            elif a in ("free_completed", "free") and e["addr"] in cur:
                cur.pop(e["addr"])["_end"] = e["_seq"]
    return sorted(e["_seq"] for _, _, _, e in merged
                  if e["action"] == "alloc" and e["size"] > 0)


def snapshot_spaces(snap):
    traces = snap.get("device_traces") or []
    segs = snap.get("segments") or []
    ndev = max([len(traces)] + [s.get("device", 0) + 1 for s in segs] + [1])
    alloc_seqs = number_entries(traces)
    for dev, entries in enumerate(traces):
        for e in entries:
            e["_dev"] = dev
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
                start.append(Block(b["size"], snapshot_stack(frames), dev))
        # Frees with nothing live at their address: blocks from before.
        cur = {}
        for e in entries:
            a = e["action"]
            if a == "alloc":
                cur[e["addr"]] = 1
            elif a in ("free_completed", "free"):
                if e["addr"] not in cur:
                    start.append(Block(e.get("size", 0),
                                       snapshot_stack(e.get("frames")), dev))
                cur.pop(e["addr"], None)
        events = [e for e in entries
                  if e["action"] in ("alloc", "free_completed", "free",
                                     "free_requested")]
        out.append((f"cuda:{dev}", snapshot_replay(start, events)))
    any_stack = any(snapshot_stack(e.get("frames"))
                    for entries in traces for e in entries
                    if e.get("action") in ACTIONS) or \
        any(b.stack for _, (_, live) in out for b in live)
    ctx = {"snapshot": True, "alloc_seqs": alloc_seqs, "any_stack": any_stack,
           "stages": snapshot_stages(snap.get("external_annotations") or [])}
    return out, ctx


def snapshot_stages(anns):
    """(device, name, start_us, end_us): a START and the next END of its
    name on its device; an END alone from the start, a START alone to the
    end."""
    out, open_ = [], {}
    for a in sorted(anns, key=lambda a: a.get("time_us", 0)):
        key = (a.get("device", 0), a.get("name", ""))
        if a.get("stage") == "START":
            open_.setdefault(key, []).append(a.get("time_us", 0))
        elif a.get("stage") == "END":
            st = open_.get(key)
            t0 = st.pop() if st else float("-inf")
            out.append((key[0], key[1], t0, a.get("time_us", 0)))
    for (dev, name), starts in open_.items():
        out += [(dev, name, t0, float("inf")) for t0 in starts]
    return out


class Block:
    """A block live at the peak: its size, stack text, device, and its
    alloc entry (None: allocated before the recording)."""
    def __init__(self, size, stack, dev, entry=None):
        self.size, self.stack, self.dev, self.entry = size, stack, dev, entry


def snapshot_replay(start, events):
    """The peak and its live set, replaying twice: find, then rebuild."""
    def run(stop):
        pre = list(start)         # blocks from before, until their free
        blocks = {}               # addr -> Block
        cur = sum(b.size for b in pre)
        best, best_at = cur, -1
        if stop == -1:
            return pre, blocks
        for k, e in enumerate(events):
            a, addr = e["action"], e["addr"]
            if a == "alloc":
                if addr in blocks:
                    cur -= blocks.pop(addr).size
                blocks[addr] = Block(e["size"], snapshot_stack(e.get("frames")),
                                     e.get("_dev", 0), e)
                cur += e["size"]
            elif a in ("free_completed", "free"):
                if addr in blocks:
                    cur -= blocks.pop(addr).size
                else:  # the matching block from before
                    stack = snapshot_stack(e.get("frames"))
                    for i, b in enumerate(pre):
                        if (b.size, b.stack) == (e.get("size", 0), stack):
                            cur -= b.size
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
        blocks += [Block(infos[i][0], stack(infos[i][1]), 0)] * n
    return [("default", (best, blocks))], {
        "snapshot": False, "any_stack": any(stack(t) for _, t in infos)}


# ---- Groups ----

# ---- Frames and categories (docs/explain.md) ----

MACHINERY = ["malloc", "calloc", "realloc", "memalign", "valloc",
             "aligned_alloc", "operator new", "CachingAllocator",
             "at::detail::", "at::empty", "at::native::empty",
             "at::_ops::empty", "_empty_generic", "_empty_strided",
             "empty_cuda", "wrapper_CUDA_memory_format_empty",
             "wrapper_CUDA_empty", "create_out", "set_output_raw_strided",
             "set_output_strided", "allocate_or_resize_outputs",
             "c10::impl::", "c10::Dispatcher", "c10::BoxedKernel",
             "c10::KernelFunction", "::redispatch", "PyMem_",
             "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
             "_PyObject_GC_", "PyType_GenericAlloc", "_PyEval_EvalFrame",
             "heaptrack", "std::allocator", "new_allocator", "_M_allocate",
             "_M_create", "/torch/nn/modules/module.py"]
GENERATED = ["torchinductor_", "/.triton/", "/triton/cache/",
             "<eval_with_key", "/torch/_dynamo/", "/torch/fx/",
             "torch_compile_debug/"]
LIBRARY = ["/site-packages/", "/dist-packages/", "/lib/python3",
           "/lib64/python3", "/Lib/", "<frozen ", "/torch/"]
RUNTIME_PREFIXES = ["std::", "__gnu_cxx::", "__cxxabiv1::", "__libc",
                    "__GI_", "_dl_", "pthread_", "at::", "c10::", "torch::",
                    "caffe2::", "pybind11::", "??", "0x"]
RUNTIME_NAMES = ["_start", "start_thread", "clone", "clone3", "__clone",
                 "execute_native_thread_routine"]


def runtime_name(n):
    """A name of the C runtime's, the C++ library's, CPython's or torch's:
    a namespace or reserved prefix, a whole startup name, or CPython's API
    (Py or _Py and a capital or an underscore)."""
    import re
    return any(n.startswith(p) for p in RUNTIME_PREFIXES) or \
        n.split("(")[0] in RUNTIME_NAMES or re.match(r"_?Py[A-Z_]", n) is not None


RUNTIME_FILES = ["libc.so", "libstdc++", "ld-linux", "libpthread",
                 "libpython", "libtorch", "libc10", "/usr/include/",
                 "/usr/lib/gcc/"]


def strip_params(s):
    """C++ parameter lists "(...)" after a name made "()"."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        prev = s[i - 1] if i else " "
        if c == "(" and (prev.isalnum() or prev in "_>]") and \
                not s.startswith("(anonymous namespace)", i) and \
                not s[:i].endswith("operator"):
            depth, j = 0, i
            while j < len(s):
                depth += {"(": 1, ")": -1}.get(s[j], 0)
                if depth == 0:
                    break
                j += 1
            if j < len(s):
                out.append("()")
                i = j + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def frame_parts(f):
    """(file, function) of "FILE:LINE:FUNCTION" or "FUNCTION FILE:LINE"."""
    import re
    m = re.search(r":(\d+):", f)
    if m:
        return f[:m.start()], f[m.end():]
    head, _, tok = f.rpartition(" ")
    m = re.fullmatch(r"(.*):(\d+)", tok)
    if head and m:
        return m.group(1), head
    if head and f.startswith("0x"):
        return tok, head
    return "", f


def frame_kind(f, python_stack):
    if any(m in strip_params(f) for m in MACHINERY):
        return "allocator"
    if any(g in f.replace("\\", "/") for g in GENERATED):
        return "generated"
    file, func = frame_parts(f)
    file = file.replace("\\", "/")
    if file.endswith(".py") or file.startswith("<"):
        return "library" if any(x in file for x in LIBRARY) else "user"
    if python_stack:
        return "library"
    name = strip_params(func)
    name = name.rpartition(" ")[2] or name
    if runtime_name(func) or runtime_name(name) or not func or \
            any(x in file for x in RUNTIME_FILES):
        return "library"
    return "user"


@functools.lru_cache(maxsize=None)
def user_frame(stack, snapshot):
    """The first user frame of a stack, else its first frame that is not
    the allocator's, else its first; and whether it is a user frame. In a
    snapshot (a Python program) native frames are never the user's."""
    frames = [f for f in stack.split("\n") if f]
    py = snapshot or ".py:" in stack
    kinds = [frame_kind(f, py) for f in frames]
    for f, k in zip(frames, kinds):
        if k == "user":
            return f, True
    for f, k in zip(frames, kinds):
        if k != "allocator":
            return f, False
    return frames[0], False


def no_frames_key(b, ctx):
    if ctx["snapshot"] and b.entry is None:
        return "(no frames: allocated before the recording)"
    if ctx["any_stack"]:
        return "(no frames: recorded without a stack)"
    return "(no frames: recorded without stacks)"


def category(b, ctx, rules):
    import bisect
    import re
    frames = [frame_parts(f) for f in (b.stack or "").split("\n") if f]
    for name, rx in rules:
        if any((fi and re.search(rx, fi)) or re.search(rx, fn)
               for fi, fn in frames):
            return name
    if b.entry is None:
        return "parameters"
    for fi, fn in frames:
        if fn in ("__init__", "reset_parameters", "load_state_dict") or \
                "torch/nn/init.py" in fi or \
                (fi.endswith("torch/nn/modules/module.py") and
                 fn in ("to", "cuda", "_apply", "to_empty")):
            return "parameters"
    seqs = ctx["alloc_seqs"]
    start, end = b.entry["_seq"], b.entry["_end"]
    k = bisect.bisect_right(seqs, start)
    if b.size > 0 and end != float("inf") and \
            (k == len(seqs) or seqs[k] >= end):
        return "temporaries"
    t = b.entry.get("time_us", 0)
    stage_cls = {"optimizer": ("optimizer.step", "optimizer_step",
                               "## optimizer"),
                 "gradients": ("backward",), "activations": ("forward",)}
    frame_cls = {
        "optimizer": lambda fi, fn: "/torch/optim/" in fi,
        "gradients": lambda fi, fn: "backward" in fn or
        "autograd::Engine::" in fn,
        "activations": lambda fi, fn: fn == "forward"}
    for cat in ("optimizer", "gradients", "activations"):
        if any(frame_cls[cat](fi, fn) for fi, fn in frames):
            return cat
        for dev, name, t0, t1 in ctx["stages"]:
            low = name.lower()
            cls = next((c for c in ("optimizer", "gradients", "activations")
                        if any(w in low for w in stage_cls[c])), None)
            if cls == cat and dev == b.dev and t0 <= t < t1:
                return cat
    return "unknown"


LOADED = {}   # path -> (spaces, ctx): each file is read and replayed once


def figures(path, by="stack", rules=()):
    if path not in LOADED:
        data = read_bytes(path)
        if data[:1] == b"\x80":
            LOADED.clear()
            LOADED[path] = snapshot_spaces(PlainOnly(io.BytesIO(data)).load())
        else:
            LOADED.clear()
            LOADED[path] = heaptrack_spaces(data)
    spaces, ctx = LOADED[path]
    out = []
    for name, (peak, live) in spaces:
        groups, user = {}, {}
        for b in live if peak > 0 else []:
            if by == "category":
                key = category(b, ctx, rules)
            elif not b.stack:
                key = no_frames_key(b, ctx)
            elif by == "frame":
                key, is_user = user_frame(b.stack, ctx["snapshot"])
                user[key] = user.get(key, False) or is_user
            else:
                key = b.stack
            x, c = groups.get(key, (0, 0))
            groups[key] = (x + b.size, c + 1)
        order = sorted(groups.items(), key=lambda kv: (-kv[1][0], -kv[1][1],
                                                       kv[0].encode()))
        top = order if by == "category" else order[:10]
        out.append({"space": name, "peak_bytes": peak,
                    "groups": [{"key": k, "bytes": x, "count": c,
                                "user": user.get(k)}
                               for k, (x, c) in top]})
    return out


def run_explain(exe, path, by, rules):
    args = [exe, "explain", path, "--json", "-", "--by", by,
            "--top", "0" if by == "category" else "10"]
    for name, rx in rules:
        args += ["--rule", f"{name}={rx}"]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=True)
    return json.loads(r.stdout)["traces"][0]["spaces"]


def compare(by, ref, ours, problems, snapshot):
    """Peaks and groups of one grouping; by frame also: a key that is not
    a user frame only where its blocks have none; by category: every
    group, summing to the peak."""
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
        if by == "category":
            og, rg = sorted(og), sorted(rg)
            if s["peak_bytes"] and sum(g[1] for g in og) != s["peak_bytes"]:
                problems.append(f"{s['space']}: categories sum to "
                                f"{sum(g[1] for g in og)}, not the peak")
        for k, (a, b) in enumerate(zip(og, rg)):
            if a != b:
                problems.append(f"{s['space']} by {by}, group {k + 1}: "
                                f"{a[1]} B x{a[2]} vs reference "
                                f"{b[1]} B x{b[2]} ({a[0][:70]!r} / "
                                f"{b[0][:70]!r})")
                break
        if len(og) != len(rg):
            problems.append(f"{s['space']} by {by}: {len(og)} groups, "
                            f"reference {len(rg)}")
        # By frame: a row names a generated or library file only when
        # none of its blocks has a user frame.
        user = {g["key"]: g["user"] for g in s["groups"]}
        for g in o["groups"] if by == "frame" else []:
            if g["key"].startswith("(no frame"):
                continue
            kind = frame_kind(g["key"], snapshot)
            if kind in ("generated", "library") and user.get(g["key"]):
                problems.append(f"by frame: {g['key'][:80]} is {kind} "
                                f"though its blocks have user frames")


def check(exe, files, rules=()):
    n = fails = 0
    print(f"1..{len(files)}")
    for path in files:
        n += 1
        problems = []
        try:
            snapshot = read_bytes(path)[:1] == b"\x80"
            # Categories need each block's allocation and free (its
            # stages, whether it is a temporary): snapshots only.
            for by in ("stack", "frame", "category")[:3 if snapshot else 2]:
                ref = figures(path, by, rules)
                compare(by, ref, run_explain(exe, path, by, rules), problems,
                        snapshot)
                if by == "stack":
                    summary = "; ".join(
                        f"{s['space']} peak {s['peak_bytes']}, "
                        f"{len(s['groups'])} groups" for s in ref)
                if by == "category" and snapshot:
                    summary += "; categories " + ", ".join(
                        f"{g['key']} {g['bytes']}" for s in ref
                        for g in s["groups"])
        except Exception as e:  # noqa: BLE001 - reported as a failure
            print(f"not ok {n} - {path}: {e}")
            fails += 1
            continue
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
    # Frames the categories read: an optimizer's, a constructor's.
    sites[4].insert(2, {"name": "_single_tensor_adamw", "line": 300,
                        "filename": "/venv/lib/python3.11/site-packages/"
                                    "torch/optim/adamw.py"})
    sites[5].insert(3, {"name": "__init__", "filename": "model.py",
                        "line": 5})
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
        args, rules = sys.argv[3:], []
        while len(args) >= 2 and args[0] == "--rule":
            name, _, rx = args[1].partition("=")
            rules.append((name, rx))
            args = args[2:]
        return check(sys.argv[2], args, rules)
    if len(sys.argv) == 2:
        json.dump(figures(sys.argv[1]), sys.stdout, indent=1)
        print()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
