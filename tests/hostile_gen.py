#!/usr/bin/env python3
"""Write the large hostile inputs of tests/hostile_test.sh into DIR.

    hostile_gen.py DIR [NAME...]

Each case is a small file (a few KB to a few MB, most of them compressed)
that once cost minutes or gigabytes, and for the hash floods a
control with random addresses. DIR/MANIFEST lists one case a line:

    NAME KIND [CONTROL]

KIND is `refused` (exit status 2), `loads` (exit status 0), `either`, or
`control` (exit status 0, no limit: another case's yardstick); CONTROL
names the control case a flood must stay within 5 times of. The
zstd files are written frame by frame here (raw and RLE blocks), so no
compressor is needed and a 60 GiB expansion takes 2 MB; the cases that need
real compression pipe through the `zstd` program, and are left out (with a
line on stderr) when it is missing. Deterministic: the same bytes each run.
"""
import os
import random
import shutil
import struct
import subprocess
import sys

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15

# ---- zstd frames by hand ----

BLOCK = 128 << 10


def zstd_frame(pieces):
    """A zstd frame of `pieces`: (b'bytes') raw, or (byte, count) RLE."""
    out = bytearray(b"\x28\xb5\x2f\xfd")
    out += b"\x00"             # no content size, no checksum, no dict
    out += bytes([(17 - 10) << 3])  # window 128 KiB
    blocks = []
    for p in pieces:
        if isinstance(p, (bytes, bytearray)):
            for i in range(0, len(p), BLOCK):
                blocks.append((0, p[i:i + BLOCK], len(p[i:i + BLOCK])))
        else:
            byte, count = p
            while count > 0:
                n = min(count, BLOCK)
                blocks.append((1, bytes([byte]), n))
                count -= n
    if not blocks:
        blocks.append((0, b"", 0))
    for i, (kind, data, size) in enumerate(blocks):
        last = 1 if i == len(blocks) - 1 else 0
        hdr = last | kind << 1 | size << 3
        out += struct.pack("<I", hdr)[:3]
        out += data
    return bytes(out)


def zstd_skippable(data, magic_low=0):
    return struct.pack("<II", 0x184D2A50 | magic_low, len(data)) + data


def have_zstd():
    return shutil.which("zstd") is not None


def zstd_pipe(path, chunks, level=3):
    """Compress the byte strings `chunks` yields with the zstd program."""
    with open(path, "wb") as out:
        p = subprocess.Popen(["zstd", "-q", "-%d" % level, "-c"],
                             stdin=subprocess.PIPE, stdout=out)
        for c in chunks:
            p.stdin.write(c)
        p.stdin.close()
        if p.wait() != 0:
            raise SystemExit("zstd failed")
    WRITTEN.append(os.path.basename(path))


# ---- pickles by hand (protocol 4 opcodes) ----

def pk_int(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -(1 << 31) <= v < (1 << 31):
        return b"J" + struct.pack("<i", v)
    n = (v.bit_length() + 8) // 8
    return b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)


def pk_str(s):
    b = s.encode() if isinstance(s, str) else s
    if len(b) < 256:
        return b"\x8c" + bytes([len(b)]) + b
    return b"X" + struct.pack("<I", len(b)) + b


def pk_dict(pairs):
    """A dict of already pickled (key, value) byte strings."""
    return b"}(" + b"".join(k + v for k, v in pairs) + b"u"


def pk_refs(item, n):
    """A list of n references to one object: the item, then DUPs."""
    if n == 0:
        return b"]"
    return b"](" + item + b"2" * (n - 1) + b"e"


def pk_doc(pairs):
    return b"\x80\x04" + pk_dict(pairs) + b"."


def entry(action, addr, size, extra=b""):
    return pk_dict([(pk_str("action"), pk_str(action)),
                    (pk_str("addr"), pk_int(addr)),
                    (pk_str("size"), pk_int(size))]
                   + ([(pk_str("frames"), extra)] if extra else []))


# ---- the invertible mixes the readers used before keyed hashing ----

def inv64(a):
    return pow(a, -1, 1 << 64)


def unxorshift(y, s):
    x = y
    for _ in range(64 // s + 1):
        x = y ^ (x >> s)
    return x & MASK64


def inv_fmix_murmur(h):
    """Inverse of x ^= x>>33; x *= C; x ^= x>>33 (heap.c's hash_u64)."""
    x = unxorshift(h, 33)
    x = (x * inv64(0xFF51AFD7ED558CCD)) & MASK64
    return unxorshift(x, 33)


def inv_splitmix_final(h):
    """Inverse of splitmix64's output mix (without the increment)."""
    z = unxorshift(h, 31)
    z = (z * inv64(0x94D049BB133111EB)) & MASK64
    z = unxorshift(z, 27)
    z = (z * inv64(0xBF58476D1CE4E5B9)) & MASK64
    return unxorshift(z, 30)


def crafted(n, invert, ok):
    """n inputs whose old hash has 32 zero low bits (one slot)."""
    out, k = [], 1
    while len(out) < n:
        x = invert((k << 32) & MASK64)
        k += 1
        if ok(x):
            out.append(x)
    return out


# ---- the cases ----

CASES = []


def case(kind, control=None):
    def wrap(fn):
        CASES.append((fn.__name__.replace("_", "-"), fn, kind, control))
        return fn
    return wrap


N_FLOOD = 200000


def mtrace_lines(addrs):
    yield b"= Start\n"
    for a in addrs:
        yield b"@ ./prog:[0x401136] + 0x%x 0x10\n" % a
    yield b"= End\n"


@case("control")
def mtrace_random(d):
    rng = random.Random(40)
    addrs = [rng.randrange(1 << 44, 1 << 47) & ~15 for _ in range(N_FLOOD)]
    write(d, "mtrace-random.mtrace", b"".join(mtrace_lines(addrs)))


@case("loads", control="mtrace-random.mtrace")
def mtrace_flood(d):
    addrs = crafted(N_FLOOD, inv_fmix_murmur,
                    lambda x: 16 < x < (1 << 63))
    write(d, "mtrace-flood.mtrace", b"".join(mtrace_lines(addrs)))


def snapshot_allocs(addrs):
    items = b"".join(entry("alloc", a, 512) for a in addrs)
    traces = b"](" + b"](" + items + b"e" + b"e"
    return pk_doc([(pk_str("device_traces"), traces),
                   (pk_str("segments"), b"]")])


@case("control")
def snapshot_random(d):
    rng = random.Random(41)
    addrs = [rng.randrange(1 << 44, 1 << 47) & ~511 for _ in range(N_FLOOD)]
    write(d, "snapshot-random.pickle", snapshot_allocs(addrs))


@case("loads", control="snapshot-random.pickle")
def snapshot_flood(d):
    # as_snap_mix(a, 0) = splitmix64 of a: the output mix of a + GOLDEN
    addrs = crafted(N_FLOOD,
                    lambda h: (inv_splitmix_final(h) - GOLDEN) & MASK64,
                    lambda x: x < (1 << 63))
    write(d, "snapshot-flood.pickle", snapshot_allocs(addrs))


@case("refused")
def pickle_shared_traces(d):
    """device_traces: 1,024 references to one list of 40,000 references
    to one dict (41M entries from 40 KB)."""
    e = entry("alloc", 1 << 40, 512)
    inner = pk_refs(e, 40000)
    outer = b"](" + inner + b"2" * 1023 + b"e"
    write(d, "pickle-shared-traces.pickle",
          pk_doc([(pk_str("device_traces"), outer),
                  (pk_str("segments"), b"]")]))


@case("refused")
def pickle_shared_blocks(d):
    """segments: 1,024 references to one segment whose blocks are 40,000
    references to one active block."""
    blk = pk_dict([(pk_str("size"), pk_int(512)),
                   (pk_str("address"), pk_int(1 << 40)),
                   (pk_str("state"), pk_str("active_allocated"))])
    seg = pk_dict([(pk_str("device"), pk_int(0)),
                   (pk_str("address"), pk_int(1 << 40)),
                   (pk_str("total_size"), pk_int(1 << 20)),
                   (pk_str("blocks"), pk_refs(blk, 40000))])
    segs = b"](" + seg + b"2" * 1023 + b"e"
    write(d, "pickle-shared-blocks.pickle",
          pk_doc([(pk_str("segments"), segs),
                  (pk_str("device_traces"), b"]")]))


def pickle_pairs(d, name, pair, mi=100):
    """`mi` Mi one-value opcode pairs (2 bytes each), compressed."""
    if not have_zstd():
        return skip(name, "no zstd program")

    def chunks():
        yield b"\x80\x04"
        block = pair * (1 << 20)
        for _ in range(mi):
            yield block
        yield pk_dict([(pk_str("segments"), b"]")]) + b"."
    zstd_pipe(os.path.join(d, name), chunks(), level=19)


@case("either")
def pickle_newtrue_pop(d):
    """100M NEWTRUE/POP pairs (200 MB at 1000:1; no ratio is refused since
    and shared values cost little)."""
    return pickle_pairs(d, "pickle-newtrue-pop.pickle.zst", b"\x880")


@case("either")
def pickle_empty_lists(d):
    """The same with EMPTY_LIST/POP, values that cannot be shared: 25M
    pairs (50 MB). A compressed pickle costs what the plain one does (about
    14 bytes of memory a byte here, the value budget 12 x + 16 MiB), so
    200 MB of these would take 2.7 GB; --max-input-bytes bounds that."""
    return pickle_pairs(d, "pickle-empty-lists.pickle.zst", b"]0", 25)


@case("refused")
def pickle_empty_lists_edge(d):
    """EMPTY_LIST/POP pairs just under the ratio rule (30 MiB from a few
    KB): refused by the pickle's value budget, in well under 1 GB."""
    if not have_zstd():
        return skip("pickle-empty-lists-edge.pickle.zst", "no zstd program")

    def chunks():
        yield b"\x80\x04"
        for _ in range(15):
            yield b"]0" * (1 << 20)
        yield pk_dict([(pk_str("segments"), b"]")]) + b"."
    zstd_pipe(os.path.join(d, "pickle-empty-lists-edge.pickle.zst"),
              chunks(), level=19)


@case("refused")
def pickle_stack_edge(d):
    """16M EMPTY_LISTs left on the stack (its limit is 2^24)."""
    if not have_zstd():
        return skip("pickle-stack-edge.pickle.zst", "no zstd program")

    def chunks():
        yield b"\x80\x04"
        for _ in range(16):
            yield b"]" * ((1 << 20) - 64)
        yield pk_dict([(pk_str("segments"), b"]")]) + b"."
    zstd_pipe(os.path.join(d, "pickle-stack-edge.pickle.zst"), chunks(),
              level=19)


MEMO_BIG = 300000000


@case("either")
def pickle_memo_index_zst(d):
    """A memo index near 3e8 after 3e8 bytes of zeros, in a .zst (no
    ratio is refused: it costs what the plain file below costs)."""
    head = b"\x80\x04\x8e" + struct.pack("<Q", MEMO_BIG) 
    tail = b"0Nr" + struct.pack("<I", MEMO_BIG - 7) + b"0" + \
        pk_dict([(pk_str("segments"), b"]")]) + b"."
    write(d, "pickle-memo-index.pickle.zst",
          zstd_frame([head, (0, MEMO_BIG), tail]))


@case("either")
def pickle_memo_index_plain(d):
    """The same, not compressed (a sparse file: no disk taken)."""
    head = b"\x80\x04\x8e" + struct.pack("<Q", MEMO_BIG)
    tail = b"0Nr" + struct.pack("<I", MEMO_BIG - 7) + b"0" + \
        pk_dict([(pk_str("segments"), b"]")]) + b"."
    path = os.path.join(d, "pickle-memo-index-plain.pickle")
    with open(path, "wb") as f:
        f.write(head)
        f.seek(MEMO_BIG, os.SEEK_CUR)
        f.write(tail)
    WRITTEN.append(os.path.basename(path))


@case("either")
def pickle_shared_frames(d):
    """20,000 allocations sharing one list of 2,000,000 frames."""
    fr = pk_dict([(pk_str("name"), pk_str("forward")),
                  (pk_str("filename"), pk_str("model.py")),
                  (pk_str("line"), pk_int(54))])
    frames = pk_refs(fr, 2000000) + b"r" + struct.pack("<I", 1)
    first = entry("alloc", 1 << 40, 512, frames)
    rest = b"".join(entry("alloc", (1 << 40) + 4096 * i, 512,
                          b"j" + struct.pack("<I", 1))
                    for i in range(1, 20000))
    traces = b"](](" + first + rest + b"ee"
    write(d, "pickle-shared-frames.pickle",
          pk_doc([(pk_str("device_traces"), traces),
                  (pk_str("segments"), b"]")]))


def ht_string(s):
    return b"s %x %s\n" % (len(s), s)


def interpreted(d, name, parent):
    """350,000 allocations over 1,000 instructions of 250-byte names, trace
    node j's parent given by parent(j)."""
    out = [b"v 10400 3\n", b"X ./prog\n", ht_string(b"prog")]
    for k in range(1000):
        out.append(ht_string(b"f%04d_" % k + b"x" * 244))
    for k in range(1000):
        out.append(b"i %x 1 %x\n" % (0x1000 + k, k + 2))
    rng = random.Random(42)
    n = 350000
    for j in range(1, n + 1):
        out.append(b"t %x %x\n" % (rng.randrange(1000) + 1, parent(j)))
    for j in range(1, n + 1):
        out.append(b"a 10 %x\n" % j)
    for j in range(n):
        out.append(b"+ %x\n" % j)
    write(d, name, b"".join(out))


def raw(d, name, parent):
    """The same in a raw file: 350,000 nodes, each allocated once."""
    rng = random.Random(43)
    out = [b"v 10400 3\n", b"x 6 ./prog\n",
           b"m 6 ./prog 400000 0 100000\n"]
    n = 350000
    for j in range(1, n + 1):
        out.append(b"t %x %x\n" % (0x400000 + rng.randrange(1 << 20),
                                   parent(j)))
    for j in range(1, n + 1):
        out.append(b"+ 10 %x %x\n" % (j, 0x10000000 + 16 * j))
    write(d, name, b"".join(out))


@case("control")
def heaptrack_flat(d):
    """The control of the next two: the same 350,000 allocations, each
    with a stack of one frame."""
    interpreted(d, "heaptrack-flat.heaptrack", lambda j: 0)


@case("control")
def heaptrack_raw_flat(d):
    """The control of the raw one: one frame a stack."""
    raw(d, "heaptrack-raw-flat.heaptrack", lambda j: 0)


@case("either", control="heaptrack-flat.heaptrack")
def heaptrack_distinct_stacks(d):
    """350,000 distinct stacks of 16 KB (64 frames of 250 bytes) from a
    chain of trace nodes over 1,000 instructions."""
    interpreted(d, "heaptrack-distinct-stacks.heaptrack", lambda j: j - 1)


@case("either", control="heaptrack-raw-flat.heaptrack")
def heaptrack_raw_distinct_stacks(d):
    """The same in a raw file: 350,000 nodes, each allocated once."""
    raw(d, "heaptrack-raw-distinct-stacks.heaptrack", lambda j: j - 1)


@case("control")
def heaptrack_one_module(d):
    """The control of the next: the same stacks, one module."""
    rng = random.Random(44)
    out = [b"v 10400 3\n", b"x 6 ./prog\n"]
    top = 0x10000000 + 0x1000 * 4095
    out.append(b"m a lib4095.so %x 0 1000\n" % top)
    n = 20000
    for j in range(1, n + 1):
        out.append(b"t %x %x\n" % (top + rng.randrange(0x1000), j - 1))
    for j in range(1, n + 1):
        out.append(b"+ 10 %x %x\n" % (j, 0x20000000 + 16 * j))
    write(d, "heaptrack-one-module.heaptrack", b"".join(out))


@case("either", control="heaptrack-one-module.heaptrack")
def heaptrack_modules(d):
    """4,096 modules, 20,000 stacks of 256 frames in the last one."""
    rng = random.Random(44)
    out = [b"v 10400 3\n", b"x 6 ./prog\n"]
    for k in range(4096):
        name = b"lib%04d.so" % k
        out.append(b"m %x %s %x 0 1000\n" % (len(name), name,
                                             0x10000000 + 0x1000 * k))
    top = 0x10000000 + 0x1000 * 4095
    n = 20000
    for j in range(1, n + 1):
        out.append(b"t %x %x\n" % (top + rng.randrange(0x1000), j - 1))
    for j in range(1, n + 1):
        out.append(b"+ 10 %x %x\n" % (j, 0x20000000 + 16 * j))
    write(d, "heaptrack-modules.heaptrack", b"".join(out))


@case("refused")
def blank_lines(d):
    """60 GiB of blank lines in 2 MB of zstd."""
    write(d, "blank-lines.ops.zst",
          zstd_frame([b"alloc a 16\n", (0x0a, 60 << 30), b"free a\n"]))


@case("refused")
def blank_lines_gz(d):
    """The same in gzip (its ratio stops near 1,000): 512 MiB of blank
    lines in 500 KB."""
    import zlib
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(b"alloc a 16\n")]
    block = b"\n" * (1 << 20)
    for _ in range(512):
        out.append(z.compress(block))
    out.append(z.compress(b"free a\n"))
    out.append(z.flush())
    write(d, "blank-lines.ops.gz", b"".join(out))


@case("loads")
def zstd_skippable_frame(d):
    """A trace behind a skippable frame, as pzstd writes one first."""
    write(d, "zstd-skippable-frame.ops.zst",
          zstd_skippable(b"\x00" * 12) +
          zstd_frame([b"alloc a 16\nalloc b 32\nfree a\nfree b\n"]))


@case("refused")
def json_metadata_string(d):
    """A JSON trace whose metadata is one string of 1000 MiB."""
    head = b'{"format": "allocscope-trace", "version": 1, ' \
           b'"metadata": {"m": "'
    tail = b'"}, "events": [{"op": "alloc", "name": "a", "size": 16}]}\n'
    write(d, "json-metadata-string.json.zst",
          zstd_frame([head, (ord("a"), 1000 << 20), tail]))


@case("loads")
def config_budget(d):
    """A trace that asks for an hour of strip's exact search."""
    rng = random.Random(45)
    out = ["config budget_ms=3600000 search=exact rounds=1000 "
           "exact_max=6000"]
    live = []
    for i in range(260):
        out.append("alloc b%d %d" % (i, 64 * rng.randrange(1, 64)))
        live.append(i)
        if len(live) > 12:
            out.append("free b%d" % live.pop(rng.randrange(len(live))))
    write(d, "config-budget.ops", ("\n".join(out) + "\n").encode())


@case("control")
def spaces_one(d):
    """20,000 buffers in one space: the control of spaces-20000."""
    out = []
    for i in range(20000):
        out.append(b"alloc b%d 4096 pool=p0\nfree b%d\n" % (i, i))
    write(d, "spaces-one.ops", b"".join(out))


@case("loads", control="spaces-one.ops")
def spaces_20000(d):
    """20,000 spaces of one buffer each (518 KB)."""
    out = []
    for i in range(20000):
        out.append(b"alloc b%d 4096 pool=p%d\nfree b%d\n" % (i, i, i))
    write(d, "spaces-20000.ops", b"".join(out))


@case("refused")
def numa_cores(d):
    """A 450-byte NUMA trace: 4,096 cores (spaces), 2^23 blocks."""
    edges = ", ".join('{"name": "e%d", "to": 0, "volume": 64}' % k
                      for k in range(8))
    text = ('{"format": "allocscope-trace", "version": 1, "numa": '
            '{"cores": 4096, "capacity": 0, "align": 64, '
            '"schedule": "round-robin", "parents": [{"name": "p", '
            '"subtasks": 1048576, "ops": 1, "edges": [%s]}]}}\n' % edges)
    write(d, "numa-cores.json", text.encode())


@case("refused")
def spaces_65536(d):
    """One space more than a trace may have."""
    out = []
    for i in range(65536):
        out.append(b"alloc b%d 16 pool=p%d\nfree b%d\n" % (i, i, i))
    write(d, "spaces-65536.ops", b"".join(out))


WRITTEN = []


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    WRITTEN.append(name)


def skip(name, why):
    print("hostile_gen: %s left out: %s" % (name, why), file=sys.stderr)
    return "skip"


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        # "--help" or a typo is no directory to fill with 90 MB of cases.
        raise SystemExit(__doc__)
    d = sys.argv[1]
    want = set(sys.argv[2:])
    os.makedirs(d, exist_ok=True)
    lines = []
    for name, fn, kind, control in CASES:
        if want and name not in want:
            continue
        del WRITTEN[:]
        if fn(d) == "skip":
            continue
        for f in WRITTEN:
            lines.append("%s %s %s" % (f, kind, control or "-"))
    with open(os.path.join(d, "MANIFEST"), "w") as m:
        m.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
