#!/usr/bin/env python3
"""An independent count of a glibc mtrace file (allocscope's tests compare
against it): blocks allocated and the peak of live bytes.

Usage: mtrace_count.py FILE  ->  prints "BLOCKS PEAK"

Every successful "+" or ">" is a block; "-" and "<" free the live block at
their address (frees of unknown addresses are ignored); a "+" at an address
still live frees the old block first. The peak is the most bytes live at
once, frees counted before the allocation that follows them. A last line
without its newline (the writer stopped mid-line) is not an event.
"""
import gzip
import sys


def words(line):
    parts = line.split()
    if parts and parts[0] == "@":
        # "@ CALLER OP ...": the caller ends with "]" (file names may hold
        # spaces); the operation is the first word after it.
        end = line.rfind("] ")
        rest = line[end + 2:] if end >= 0 else " ".join(parts[2:])
        parts = rest.split()
    return parts


def main():
    path = sys.argv[1]
    opener = gzip.open if path.endswith(".gz") else open
    live = {}
    cur = peak = blocks = 0
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # cut mid-line (exec, kill): not an event
            w = words(line)
            if not w:
                continue
            op = w[0]
            if op in ("+", ">"):
                if w[1] == "(nil)":
                    continue
                addr, size = int(w[1], 16), int(w[2], 16)
                if addr in live:
                    cur -= live.pop(addr)
                live[addr] = size
                cur += size
                blocks += 1
                peak = max(peak, cur)
            elif op in ("-", "<"):
                if w[1] == "(nil)":
                    continue
                addr = int(w[1], 16)
                if addr in live:
                    cur -= live.pop(addr)
    print(blocks, peak)


if __name__ == "__main__":
    main()
