#!/usr/bin/env python3
"""tests/fs/compress-load.py - workloads for tests/fs/check-compress.sh.

A tree of compressed and plain files through the mount, with a model of
every byte kept here (in the state file between runs), and the checks the
shell script asks for:

  write MNT STATE         text, random and mixed files (compress_extension
                          =txt makes the .txt ones compressed), a plain .bin
                          of text; overwrites inside clusters and across
                          their edges, truncates into clusters, growth past
                          EOF, appends, a hard link written through; prints
                          per file: logical blocks, i_compr_blocks (F2FS's
                          GET_COMPRESS_BLOCKS), blocks actually written
  verify MNT STATE        every file byte for byte against the model
  fill MNT STATE PCT      files of text and random data (1 MiB each, half and
                          half) until PCT of the volume is used
  churn MNT STATE ROUNDS  ROUNDS x the tree's size in partial overwrites at
                          random offsets (4 KiB .. 64 KiB), text over text,
                          random over random
Exit 0, or 1 with the first mismatch named.
"""
import fcntl
import os
import pickle
import random
import struct
import sys

GET_COMPRESS_BLOCKS = 0x8008F511
WORDS = [b"log", b"structured ", b"zone ", b"write ", b"pointer ", b"cluster ", b"f2fs ",
         b"checkpoint\n", b"node ", b"segment ", b"the ", b"of "]


def text(n, seed):
    r = random.Random(seed)
    out = bytearray()
    while len(out) < n:
        out += b"".join(r.choice(WORDS) for _ in range(512))
    return bytes(out[:n])


def noise(n, seed):
    return random.Random(seed).randbytes(n)


def saved(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return struct.unpack("Q", fcntl.ioctl(fd, GET_COMPRESS_BLOCKS, b"\0" * 8))[0]
    except OSError:
        return -1
    finally:
        os.close(fd)


class Model:
    def __init__(self):
        self.files = {}     # name -> bytearray

    def write(self, root, name, data, off):
        b = self.files.setdefault(name, bytearray())
        with open(os.path.join(root, name), "r+b" if os.path.exists(os.path.join(root, name))
                  else "wb") as f:
            f.seek(off)
            f.write(data)
        if off > len(b):
            b += bytes(off - len(b))
        b[off:off + len(data)] = data

    def truncate(self, root, name, size):
        os.truncate(os.path.join(root, name), size)
        b = self.files[name]
        if size < len(b):
            del b[size:]
        else:
            b += bytes(size - len(b))

    def verify(self, root):
        for name, want in sorted(self.files.items()):
            with open(os.path.join(root, name), "rb") as f:
                got = f.read()
            if got != bytes(want):
                at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                          min(len(got), len(want)))
                sys.exit("%s: %d bytes read, %d expected, first difference at %d"
                         % (name, len(got), len(want), at))


def load(state):
    if os.path.exists(state):
        with open(state, "rb") as f:
            return pickle.load(f)
    return Model()


def save(m, state):
    with open(state, "wb") as f:
        pickle.dump(m, f)


def cmd_write(root, state):
    m = Model()
    m.write(root, "text.txt", text(3 << 20, 1), 0)
    m.write(root, "rand.txt", noise(1 << 20, 2), 0)
    mix = b"".join(text(65536, i) if i % 2 == 0 else noise(65536, i) for i in range(32))
    m.write(root, "mix.txt", mix, 0)
    m.write(root, "plain.bin", text(1 << 20, 3), 0)
    # overwrites inside clusters and across their edges (any cluster size up to 1 MiB)
    for name in ("text.txt", "mix.txt", "rand.txt"):
        for off in (5, 4093, 16384 - 100, 131072 - 7, 700001):
            m.write(root, name, b"OVERWRITE" * 50, off)
    # truncate into a cluster, grow past EOF, append
    m.truncate(root, "text.txt", 2000001)
    m.truncate(root, "text.txt", 2500000)
    m.write(root, "text.txt", text(300000, 4), 2500000)
    m.truncate(root, "mix.txt", 1234567)
    m.write(root, "mix.txt", text(70000, 5), 1234567 + 3)
    # a hard link, written through
    os.link(os.path.join(root, "text.txt"), os.path.join(root, "link.txt"))
    m.files["link.txt"] = m.files["text.txt"]
    m.write(root, "link.txt", b"THROUGH THE LINK", 1000)
    # small appends, as a log file grows
    for i in range(200):
        m.write(root, "log.txt", text(1000, 100 + i), i * 1000)
    m.verify(root)
    for name in ("text.txt", "rand.txt", "mix.txt", "plain.bin", "log.txt"):
        st = os.stat(os.path.join(root, name))
        logical = (st.st_size + 4095) // 4096
        s = saved(os.path.join(root, name))
        print("%s logical=%d saved=%d written=%d st_blocks=%d" % (
            name, logical, s, logical - max(s, 0), st.st_blocks))
    save(m, state)


def cmd_fill(root, state, pct):
    m = Model()
    st = os.statvfs(root)
    goal = st.f_blocks * st.f_frsize * pct // 100
    i = 0
    while True:
        st = os.statvfs(root)
        if (st.f_blocks - st.f_bfree) * st.f_frsize >= goal:
            break
        name = "f%04d.txt" % i
        data = text(1 << 20, 1000 + i) if i % 2 == 0 else noise(1 << 20, 1000 + i)
        m.write(root, name, data, 0)
        i += 1
    print("files=%d" % i)
    save(m, state)


def cmd_churn(root, state, rounds):
    m = load(state)
    r = random.Random(7)
    names = sorted(m.files)
    total = sum(len(b) for b in m.files.values()) * rounds
    done = 0
    while done < total:
        name = r.choice(names)
        n = r.choice((4096, 16384, 65536, 5000))
        off = r.randrange(0, max(1, len(m.files[name]) - n))
        idx = int(name[1:5])
        data = text(n, r.randrange(1 << 30)) if idx % 2 == 0 else noise(n, r.randrange(1 << 30))
        m.write(root, name, data, off)
        done += n
    save(m, state)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    what, root, state = sys.argv[1:4]
    if what == "write":
        cmd_write(root, state)
    elif what == "verify":
        load(state).verify(root)
    elif what == "fill":
        cmd_fill(root, state, int(sys.argv[4]))
    elif what == "churn":
        cmd_churn(root, state, int(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
