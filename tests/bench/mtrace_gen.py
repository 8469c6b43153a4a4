#!/usr/bin/env python3
"""Write a synthetic glibc mtrace file of about N events (seeded).

Usage: mtrace_gen.py N FILE [SEED]

Like a real program's trace: 300 call sites, sizes mostly small with a tail
of large blocks (mmap'ed, far above the heap), addresses reused through
per-size free lists as malloc does, 5% reallocs (a "<" and a ">" line, two
events), frees of addresses allocated before tracing, no "= End" (the
program was killed). Prints "EVENTS BLOCKS PEAK" (the count allocscope must
find) on stdout.
"""
import random
import sys


def main():
    n = int(sys.argv[1])
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 42)
    callers = ["@ /usr/bin/prog:(fn_%d+0x%x)[0x%x]" % (i, 16 + i, 0x401000 + 64 * i)
               for i in range(300)]
    heap_top = 0x55d0c0a01000
    mmap_top = 0x7f3a00000000
    free_lists = {}
    live_addr = []
    live_size = {}
    cur = peak = blocks = events = 0
    out = open(sys.argv[2], "w", buffering=1 << 20)
    w = out.write
    w("= Start\n")
    for i in range(50):
        w("- 0x%x\n" % (0x55d0c09f0000 + 32 * i))
        events += 1

    def place(size):
        nonlocal heap_top, mmap_top
        if size >= 128 * 1024:
            pages = (size + 16 + 4095) >> 12
            fl = free_lists.get(-pages)
            if fl:
                return fl.pop()
            mmap_top -= pages << 12
            return mmap_top + 16
        cls = (size + 15) >> 4
        fl = free_lists.get(cls)
        if fl:
            return fl.pop()
        a = heap_top
        heap_top += ((size + 15) & ~15) + 16
        return a

    def release(addr, size):
        if size >= 128 * 1024:
            free_lists.setdefault(-((size + 16 + 4095) >> 12), []).append(addr)
        else:
            free_lists.setdefault((size + 15) >> 4, []).append(addr)

    target = 20000
    while events < n:
        r = rnd.random()
        caller = callers[int(rnd.paretovariate(1.2)) % 300]
        if live_addr and (r < 0.40 or len(live_addr) > 2 * target):
            k = rnd.randrange(len(live_addr))
            addr = live_addr[k]
            live_addr[k] = live_addr[-1]
            live_addr.pop()
            size = live_size.pop(addr)
            cur -= size
            release(addr, size)
            w("%s - 0x%x\n" % (caller, addr))
            events += 1
        elif live_addr and r < 0.45:
            k = rnd.randrange(len(live_addr))
            old = live_addr[k]
            osize = live_size.pop(old)
            cur -= osize
            release(old, osize)
            size = osize * 2 + rnd.randrange(64)
            addr = place(size)
            live_addr[k] = addr
            live_size[addr] = size
            cur += size
            blocks += 1
            peak = max(peak, cur)
            w("%s < 0x%x\n%s > 0x%x 0x%x\n" % (caller, old, caller, addr, size))
            events += 2
        else:
            size = int(rnd.paretovariate(1.1) * 24) if rnd.random() < 0.999 \
                else rnd.randrange(128 * 1024, 4 << 20)
            addr = place(size)
            live_addr.append(addr)
            live_size[addr] = size
            cur += size
            blocks += 1
            peak = max(peak, cur)
            w("%s + 0x%x 0x%x\n" % (caller, addr, size))
            events += 1
    out.close()
    print(events, blocks, peak)


if __name__ == "__main__":
    main()
