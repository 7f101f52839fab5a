/*
 * The kernel floor of a cross-priority hand-off, in C with no runtime around it: two
 * SCHED_FIFO threads (priorities 1 and 2, the process pinned to CPU 0) hand a turn back and
 * forth through one private futex word, FUTEX_WAIT_BITSET / FUTEX_WAKE, exactly as
 * `raw_futex_ping_pong` in crates/preempt/benches/switch.rs and bench/peers'
 * `raw_futex_pingpong` do (each side always calls FUTEX_WAKE after storing the turn).
 *
 * A third implementation of the same floor, built with the system C compiler, so that a
 * floor inflated by the binary it is built into shows (scripts/bench_cross_floors.py runs
 * the three side by side; docs/PERFORMANCE.md, "Which floor").
 *
 *   cc -O2 -o futex_pingpong bench/floor/futex_pingpong.c -lpthread
 *   ./futex_pingpong HANDOFFS        prints: figure=c_futex_pingpong_pinned ns_per_op=<f> samples=<n>
 *
 * Needs SCHED_FIFO (root or CAP_SYS_NICE); exits 1 with the reason otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned turn; /* 0: A (priority 1) hands off next; 1: B (priority 2) */
static long rounds;

static void die(const char *what, int err)
{
	fprintf(stderr, "futex_pingpong: %s: %s\n", what, strerror(err));
	exit(1);
}

static void futex_wait(unsigned expected)
{
	long r = syscall(SYS_futex, &turn, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected,
			 NULL, NULL, FUTEX_BITSET_MATCH_ANY);
	if (r < 0 && errno != EAGAIN && errno != EINTR)
		die("FUTEX_WAIT_BITSET", errno);
}

static void futex_wake(void)
{
	if (syscall(SYS_futex, &turn, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0) < 0)
		die("FUTEX_WAKE", errno);
}

static void fifo(int priority)
{
	struct sched_param sp = { .sched_priority = priority };
	int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (err)
		die("SCHED_FIFO (run as root or grant CAP_SYS_NICE)", err);
}

static void *player_b(void *unused)
{
	(void)unused;
	fifo(2);
	for (long i = 0; i < rounds; i++) {
		while (atomic_load_explicit(&turn, memory_order_acquire) == 0)
			futex_wait(0);
		atomic_store_explicit(&turn, 0, memory_order_release);
		futex_wake();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long handoffs = argc > 1 ? atol(argv[1]) : 1000000;
	if (handoffs < 2) {
		fprintf(stderr, "usage: futex_pingpong HANDOFFS (>= 2)\n");
		return 2;
	}
	rounds = handoffs / 2;
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof cpus, &cpus))
		die("pinning to CPU 0", errno);
	pthread_t b;
	int err = pthread_create(&b, NULL, player_b, NULL);
	if (err)
		die("pthread_create", err);
	fifo(1);
	usleep(1000); /* B reaches its first wait */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < rounds; i++) {
		atomic_store_explicit(&turn, 1, memory_order_release);
		futex_wake();
		while (atomic_load_explicit(&turn, memory_order_acquire) == 1)
			futex_wait(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(b, NULL);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("figure=c_futex_pingpong_pinned ns_per_op=%.3f samples=%ld\n", ns / (2.0 * rounds),
	       2 * rounds);
	return 0;
}
