#!/usr/bin/env python3
# flags-ops.py ROOT - what the chattr flags allow and forbid, as one line
# per operation ("what: ok" or "what: ERRNO"), for check-flags.sh to run on
# zlfs and on the kernel's tmpfs and compare.  Run as root.  ROOT must be
# an empty directory.
#
# Immutable and append-only files and directories, every operation the VFS
# judges by those flags (open modes, truncate, times, mode and owner,
# xattrs, link, rename, unlink, rmdir, creating in a directory,
# fallocate), noatime, and that only the flags' owner or root change them
# and only CAP_LINUX_IMMUTABLE sets i and a.
import errno
import fcntl
import os
import struct
import sys
import time

ROOT = sys.argv[1]
GET, SET = 0x80086601, 0x40086602            # FS_IOC_GETFLAGS, FS_IOC_SETFLAGS
FL = {"i": 0x10, "a": 0x20, "d": 0x40, "A": 0x80}
out = []


def getflags(p):
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return struct.unpack("i", fcntl.ioctl(fd, GET, struct.pack("i", 0)))[0]
    finally:
        os.close(fd)


def chattr(p, add="", drop=""):
    fl = getflags(p)
    for c in add:
        fl |= FL[c]
    for c in drop:
        fl &= ~FL[c]
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, SET, struct.pack("i", fl))
    finally:
        os.close(fd)


def op(what, fn):
    try:
        fn()
        out.append(f"{what}: ok")
    except OSError as e:
        out.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")


def p(*names):
    return os.path.join(ROOT, *names)


def write_open(path, flags, data=b"x"):
    def fn():
        fd = os.open(path, flags)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    return fn


def content(path):
    with open(path, "rb") as f:
        return f.read()


def mk(path, data=b"data\n"):
    with open(path, "wb") as f:
        f.write(data)


# ---- an immutable file ----
mk(p("imm"))
os.setxattr(p("imm"), "user.k", b"v")
chattr(p("imm"), "i")
out.append(f"imm flags: {getflags(p('imm')) & 0xf0:#x}")
for name, fl in [("O_WRONLY", os.O_WRONLY), ("O_RDWR", os.O_RDWR),
                 ("O_WRONLY|O_APPEND", os.O_WRONLY | os.O_APPEND),
                 ("O_WRONLY|O_TRUNC", os.O_WRONLY | os.O_TRUNC),
                 ("O_RDWR|O_APPEND|O_TRUNC", os.O_RDWR | os.O_APPEND | os.O_TRUNC)]:
    op(f"imm open {name}", write_open(p("imm"), fl))
op("imm open O_RDONLY and read", lambda: content(p("imm")))
op("imm truncate", lambda: os.truncate(p("imm"), 0))
op("imm utime epoch", lambda: os.utime(p("imm"), (0, 0)))
op("imm utime now", lambda: os.utime(p("imm")))
op("imm chmod", lambda: os.chmod(p("imm"), 0o600))
op("imm chown", lambda: os.chown(p("imm"), 1, 1))
op("imm setxattr", lambda: os.setxattr(p("imm"), "user.k", b"w"))
op("imm setxattr new", lambda: os.setxattr(p("imm"), "user.n", b"w"))
op("imm removexattr", lambda: os.removexattr(p("imm"), "user.k"))
op("imm link", lambda: os.link(p("imm"), p("imm-link")))
op("imm rename", lambda: os.rename(p("imm"), p("imm-moved")))
op("imm unlink", lambda: os.unlink(p("imm")))
op("imm rename over it", lambda: (mk(p("other")), os.rename(p("other"), p("imm"))))
out.append(f"imm content: {content(p('imm'))!r}")

# ---- an append-only file ----
mk(p("app"))
chattr(p("app"), "a")
op("app open O_WRONLY", write_open(p("app"), os.O_WRONLY))
op("app open O_RDWR", write_open(p("app"), os.O_RDWR))
op("app open O_WRONLY|O_TRUNC|O_APPEND", write_open(p("app"), os.O_WRONLY | os.O_TRUNC | os.O_APPEND))
op("app open O_WRONLY|O_APPEND, write", write_open(p("app"), os.O_WRONLY | os.O_APPEND, b"more\n"))


def seek_write():
    fd = os.open(p("app"), os.O_RDWR | os.O_APPEND)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b"end\n")
        try:
            os.ftruncate(fd, 0)
        except OSError as e:
            out.append(f"app ftruncate: {errno.errorcode[e.errno]}")
    finally:
        os.close(fd)


op("app lseek 0 and write", seek_write)
op("app truncate", lambda: os.truncate(p("app"), 0))
op("app utime epoch", lambda: os.utime(p("app"), (0, 0)))
op("app utime now", lambda: os.utime(p("app")))
op("app chmod", lambda: os.chmod(p("app"), 0o600))
op("app chown", lambda: os.chown(p("app"), 1, 1))
op("app setxattr", lambda: os.setxattr(p("app"), "user.n", b"w"))
op("app link", lambda: os.link(p("app"), p("app-link")))
op("app rename", lambda: os.rename(p("app"), p("app-moved")))
op("app unlink", lambda: os.unlink(p("app")))


def falloc(mode):
    def fn():
        fd = os.open(p("app"), os.O_WRONLY | os.O_APPEND)
        try:
            os.posix_fallocate(fd, 0, 8192) if mode == 0 else _keep_size(fd)
        finally:
            os.close(fd)
    return fn


def _keep_size(fd):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(8192)) != 0:   # FALLOC_FL_KEEP_SIZE
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


op("app fallocate", falloc(0))
op("app fallocate KEEP_SIZE", falloc(1))
c = content(p("app"))
out.append(f"app content: {c[:14]!r}, {len(c)} bytes, then {'zeros' if not c[14:].strip(bytes(1)) else c[14:40]!r}")

# ---- an immutable directory ----
os.mkdir(p("idir"))
mk(p("idir", "child"))
os.mkdir(p("idir", "sub"))
mk(p("outside"))
chattr(p("idir"), "i")
op("idir create", lambda: mk(p("idir", "new")))
op("idir mkdir", lambda: os.mkdir(p("idir", "newdir")))
op("idir symlink", lambda: os.symlink("child", p("idir", "sl")))
op("idir mkfifo", lambda: os.mkfifo(p("idir", "fifo")))
op("idir link into", lambda: os.link(p("outside"), p("idir", "ln")))
op("idir rename into", lambda: os.rename(p("outside"), p("idir", "moved")))
op("idir unlink child", lambda: os.unlink(p("idir", "child")))
op("idir rename child out", lambda: os.rename(p("idir", "child"), p("child-out")))
op("idir rename child inside", lambda: os.rename(p("idir", "child"), p("idir", "child2")))
op("idir rmdir sub", lambda: os.rmdir(p("idir", "sub")))
op("idir write child", write_open(p("idir", "child"), os.O_WRONLY | os.O_TRUNC, b"new\n"))
op("idir create existing O_EXCL", lambda: os.close(os.open(p("idir", "child"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)))
op("idir rename itself", lambda: os.rename(p("idir"), p("idir2")))
os.mkdir(p("emptyi"))
chattr(p("emptyi"), "i")
op("rmdir an immutable empty dir", lambda: os.rmdir(p("emptyi")))
op("idir listdir", lambda: sorted(os.listdir(p("idir"))))

# ---- an append-only directory ----
os.mkdir(p("adir"))
mk(p("adir", "child"))
os.mkdir(p("adir", "sub"))
mk(p("outside2"))
chattr(p("adir"), "a")
op("adir create", lambda: mk(p("adir", "new")))
op("adir mkdir", lambda: os.mkdir(p("adir", "newdir")))
op("adir symlink", lambda: os.symlink("child", p("adir", "sl")))
op("adir link into", lambda: os.link(p("outside2"), p("adir", "ln")))
op("adir rename into", lambda: os.rename(p("outside2"), p("adir", "moved")))
op("adir unlink child", lambda: os.unlink(p("adir", "child")))
op("adir rename child out", lambda: os.rename(p("adir", "child"), p("child-out2")))
op("adir rename over child", lambda: (mk(p("x2")), os.rename(p("x2"), p("adir", "child"))))
op("adir rmdir sub", lambda: os.rmdir(p("adir", "sub")))
op("adir write child", write_open(p("adir", "child"), os.O_WRONLY | os.O_TRUNC, b"new\n"))
out.append(f"adir list: {sorted(os.listdir(p('adir')))}")

# ---- noatime ----
for name, flags in [("atime-plain", ""), ("atime-A", "A")]:
    mk(p(name))
    if flags:
        chattr(p(name), flags)
    os.utime(p(name), (1000, os.stat(p(name)).st_mtime))
    content(p(name))
    out.append(f"{name}: read moved atime: {os.stat(p(name)).st_atime != 1000}")

# ---- ctime (of a directory: a regular file's ctime is the kernel's own
# under FUSE's writeback cache, which fileattr_set does not stamp) ----
mk(p("ct"))
os.mkdir(p("ctd"))
before = os.stat(p("ctd")).st_ctime_ns
time.sleep(0.05)
chattr(p("ctd"), "d")
out.append(f"chattr moves a directory's ctime: {os.stat(p('ctd')).st_ctime_ns > before}")

# ---- who may set them: the owner (not i or a without CAP_LINUX_IMMUTABLE), not others ----
mk(p("owned"))
os.chown(p("owned"), 65534, 65534)
os.chmod(ROOT, 0o755)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    res = []
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)
    for what, path, fl in [("owner sets d", "owned", "d"), ("owner sets i", "owned", "i"),
                           ("owner sets a", "owned", "a"), ("other sets d", "ct", "d")]:
        try:
            chattr(p(path), fl)
            res.append(f"{what}: ok")
        except OSError as e:
            res.append(f"{what}: {errno.errorcode[e.errno]}")
    os.write(w, "\n".join(res).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
out.extend(os.read(r, 65536).decode().splitlines())

# ---- undo, so the tree can go ----
for path in ["imm", "app", "idir", "emptyi", "adir"]:
    chattr(p(path), "", "ia")
op("imm unlink after chattr -i", lambda: os.unlink(p("imm")))
op("app unlink after chattr -a", lambda: os.unlink(p("app")))
op("idir create after chattr -i", lambda: mk(p("idir", "new")))
print("\n".join(out))
