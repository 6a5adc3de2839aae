/*
 * svc.h - the service model of the emulated devices: hardware queues that
 * hold commands for a service time and then execute them.
 *
 * A command submitted to queue q becomes ready lat_ns after its
 * submission (commands are pipelined: up to qd per queue are in service at
 * once), and not before its data has crossed the device's one data link:
 * with mbps set, transfers take len / bandwidth each, one after another
 * in submission order across all queues (null_blk's mbps).  A queue's worker executes ready commands in queue order by
 * calling exec(); execution is where the zone rules are checked, so
 * anything that changes the order on a queue turns into real unaligned-
 * write errors:
 *   reorder       probability that the command due next is requeued
 *                 behind the later ones instead of executing;
 *   hibernate_ns  a periodic event that shuffles the commands pending on
 *                 a queue (UFS legacy mode losing order on auto-hibernate).
 * An idle queue's worker sleeps on a condition variable: no timers run.
 *
 * Locks: one mutex per queue, never held while exec() runs; the link's
 * mutex nests inside a queue's.
 */
#ifndef ZLFS_SVC_H
#define ZLFS_SVC_H

#include <pthread.h>
#include <stdatomic.h>

#include "zdev_int.h"

struct svc;

typedef void (*svc_exec_fn)(void *ctx, struct zlfs_cmd *cmd);

int svc_create(const struct svc_params *p, svc_exec_fn exec, void *ctx, struct svc **out);
/* Executes nothing more; commands still queued are executed first. */
void svc_destroy(struct svc *s);
/* Queue a command; -EBUSY if every queue is full. */
int svc_submit(struct svc *s, struct zlfs_cmd *cmd);

struct svc_counters {
	uint64_t requeues, hibernations, reordered;
};
void svc_counters(struct svc *s, struct svc_counters *c);

#endif
