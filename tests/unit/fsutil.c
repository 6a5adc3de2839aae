/*
 * fsutil.c - helpers of the filesystem modules' unit tests (see fsutil.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zlfs.h"
#include "segment.h"
#include "inode.h"
#include "namei.h"
#include "file.h"
#include "dir.h"
#include "fsutil.h"
#include "testutil.h"

const char *tu_mkfs_opts;
bool tu_noinline;

static char *volume(const char *name, uint32_t nr_conv)
{
	const char *mkfs = getenv("ZLFS_MKFS");
	char *img = tu_path(name), cmd[1200];
	struct zlfs_image_params p = { 512ull << 20, 16ull << 20, 0, nr_conv, 0, 0, 4096 };

	ck_assert_msg(mkfs && *mkfs, "ZLFS_MKFS not set");
	ck_assert_int_eq(zlfs_image_create(img, &p, true), 0);
	snprintf(cmd, sizeof(cmd), "'%s' -f %s '%s' >/dev/null", mkfs,
		 tu_mkfs_opts ? tu_mkfs_opts : "", img);
	ck_assert_int_eq(system(cmd), 0);
	return img;
}

/* 512 MiB, 16 MiB zones, 4 conventional: 28 sections */
char *tu_fs_volume(const char *name)
{
	return volume(name, 4);
}

char *tu_fs_volume_flat(const char *name)
{
	return volume(name, 32);
}

void tu_fsck_clean(const char *img)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "fsck.f2fs --dry-run '%s' >/dev/null 2>&1", img);
	int st = system(cmd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fsck.f2fs on %s: %d", img, st);
}

struct zlfs_sb *tu_fs_mount(const char *img, uint32_t cache_mb)
{
	struct zlfs_opts o;
	struct zlfs_sb *sbi;
	char err[256];

	zlfs_opts_inprocess(&o);
	o.cache_mb = cache_mb;
	o.noinline_data = o.noinline_dentry = o.noinline_xattr = tu_noinline;
	ck_assert_msg(zlfs_mount(img, &o, &sbi, err, sizeof(err)) == 0, "mount: %s", err);
	pthread_mutex_lock(&sbi->lock);
	return sbi;
}

void tu_fs_unmount(struct zlfs_sb *sbi)
{
	pthread_mutex_unlock(&sbi->lock);
	ck_assert_int_eq(zlfs_unmount(sbi), 0);
}

uint32_t tu_lookup(struct zlfs_sb *sbi, uint32_t dir, const char *name)
{
	struct zinode *d;
	uint32_t ino = 0;
	uint8_t ft;

	ck_assert_int_eq(zlfs_iget(sbi, dir, &d), 0);
	int ret = zlfs_dir_lookup(sbi, d, name, strlen(name), &ino, &ft);
	ck_assert_msg(ret == 0, "lookup %s: %d", name, ret);
	return ino;
}

void tu_blk_read(const char *img, uint64_t blk, void *buf)
{
	int fd = open(img, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, ZF_BLKSIZE, (off_t)(blk * ZF_BLKSIZE)), ZF_BLKSIZE);
	close(fd);
}

void tu_blk_write(const char *img, uint64_t blk, const void *buf)
{
	int fd = open(img, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, ZF_BLKSIZE, (off_t)(blk * ZF_BLKSIZE)), ZF_BLKSIZE);
	close(fd);
}

void tu_make_tree(const char *img, struct tu_tree *t)
{
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	struct zlfs_cred c = { 0, 0, 0 };
	struct zinode *zi;
	static char buf[1 << 20];

	memset(buf, 'z', sizeof(buf));
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "d", S_IFDIR | 0755, 0, NULL, &zi), 0);
	t->dir = zi->ino;
	for (int i = 0; i < 300; i++) {   /* dentry blocks, not inline */
		char name[32];
		snprintf(name, sizeof(name), "entry-%d", i);
		ck_assert_int_eq(zlfs_create(sbi, &c, t->dir, name, S_IFREG | 0644, 0, NULL, &zi), 0);
	}
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "f", S_IFREG | 0644, 0, NULL, &zi), 0);
	t->file = zi->ino;
	ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, 65536, 0), 0);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "big", S_IFREG | 0644, 0, NULL, &zi), 0);
	t->big = zi->ino;
	for (int k = 0; k < 6; k++)
		ck_assert_int_eq(zlfs_file_write(sbi, zi, buf, sizeof(buf), (uint64_t)k << 20), 0);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "l", S_IFLNK | 0777, 0, "target", &zi), 0);
	t->link = zi->ino;
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "i", S_IFREG | 0644, 0, NULL, &zi), 0);
	t->inl = zi->ino;
	ck_assert_int_eq(zlfs_file_write(sbi, zi, "tiny", 4, 0), 0);
	/* device numbers in i_addr, F2FS's old encoding and its new one: no block addresses */
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "c", S_IFCHR | 0644, makedev(1, 3), NULL,
				     &zi), 0);
	ck_assert_int_eq(zlfs_create(sbi, &c, ZF_ROOT_INO, "b", S_IFBLK | 0644, makedev(259, 70000),
				     NULL, &zi), 0);
	tu_fs_unmount(sbi);
}

uint32_t tu_node_addr(const char *img, uint32_t nid)
{
	struct zlfs_sb *sbi = tu_fs_mount(img, 0);
	uint32_t a = zlfs_nat(sbi, nid)->blkaddr;
	ck_assert(zlfs_is_main_blkaddr(sbi, a));
	tu_fs_unmount(sbi);
	return a;
}
