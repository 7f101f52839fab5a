#!/usr/bin/env python3
"""Boots Debian's PREEMPT_RT kernels (arm64 and amd64) and the matching non-RT amd64 kernel
under qemu-system (software emulation: KVM is not usable here) from an initramfs holding
busybox and the project's binaries, runs a fixed suite inside and checks what comes back
over the serial console.

    scripts/rt_guests.py [--guests rt-arm64,rt-amd64,amd64] [--out target/rt-guests]
                         [--kernel-abi 6.1.0-56] [--timeout-s 600] [--skip-build]
                         [--steps check,latency,explain,uav] [--except amd64:explain]
                         [--repeat N] [--diag-after S] [--reboot-hung N]

What the guests prove: the project's binaries run on the real kernels its users boot (the
arm64 generic timer, arm64 syscall numbers, PI futexes on rt_mutex, threaded interrupt
handlers, `preempt check`'s PREEMPT_RT items). What they cannot: timing. The CPU is emulated
(qemu TCG), so every latency figure is the emulator's; the suite checks bookkeeping
(samples + missed = releases) and that preempt *says* the machine is emulated, never figures.

The suite (one step per `@@BEGIN name` ... `@@END name rc=N` block on the console):
  check        `preempt check --json`: the preemption-model item PASSes on an RT kernel and
               fails on the non-RT one; the virtualisation item reports an emulated CPU (FAIL);
               the RCU kthread item PASSes on an RT kernel naming RT_APPEND's priority (INFO
               on the non-RT one)
  conformance  the thesis listings' and RTIC's example apps (the `thesis_listings`,
               `examples_output` and `rtic_conformance` test binaries of crate preempt);
               the golden outputs are compared for function: the demonstrator's closed-loop
               angle depends on its 10 kHz loop keeping time, which TCG cannot, so only its
               form is checked there (PREEMPT_EXAMPLES_TIMING_FREE=1)
  pcp-stress   the PCP mutex stress test (`pcp_stress` of preempt-sync): PI futexes on the
               RT kernel's rt_mutex; a tenth of its native rounds under watchdogs three
               times as long (PREEMPT_EMULATED_CPU=1): progress and exclusion, not throughput
  latency      `preempt latency --duration 3s --json`: samples + missed = releases on every
               thread, and a ledger verdict that is not `clean`
  explain      `preempt latency --cpus 1 --priority 40 --explain=1` with an interrupt pinned
               to CPU 1 and kept busy (arm64: the UART's, the host typing into it while the
               guest floods the console; amd64: the virtio RNG's, a reader of /dev/hwrng on
               CPU 0): on an RT kernel its handler runs in its `irq/N-...` thread at
               SCHED_FIFO 50, above the measured loop, and must be among the causes, named
               as the threaded handler of IRQ N; on the non-RT kernel the same interrupt
               must show as hard-interrupt time `N:<name>` and no such thread
  uav          `preempt demo uav --duration 2s`

The RT kernels boot with `rcutree.kthread_prio=20` (RT_APPEND: RCU's kthreads above the PCP
stress test's CPU-bound FIFO threads), the amd64 ones with `noirqdebug no_timer_check`.

A test whose watchdog fires (a deadlock or livelock of the code under test) fails its guest
(check `no-watchdog`), and that guest is never booted again. Only a guest whose console goes
silent with no test watchdog's report (its emulated kernel hung: rt-amd64's `explain` once in
~50 runs) is booted again, up to `--reboot-hung N` times (default 1); the hang is printed as
the kernel's, its console kept as GUEST.console.hung-K.log and listed in summary.json (check
`kernel-hung`), and every check is judged on the last boot. Nothing in the guest depends on
the checkout's path (the golden outputs go to /t/expected). To catch a rare hang: `--repeat N` runs each step N times per boot; `--diag-after S` writes
the state of a step still running after S s (its threads' /proc stat, wchan, kernel stack and
sched; every task's stat; sysrq w, l, t; the runqueues) to the console log.

Needs: apt-get (arm64 packages need `dpkg --add-architecture arm64`, done here), qemu-system-arm,
qemu-system-x86, cpio, and the arm64 cross toolchain of scripts/arm64_qemu_user.sh. The
binaries come from the cargo invocations of CI's earlier stages (RELEASE_PACKAGES,
TEST_PACKAGES), so after those stages this compiles nothing. Exit
status 0 when every check of every guest passed; the per-guest console logs, step outputs
and a summary.json are written to --out.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The RT kernels' RCU kthreads (rcuc/N, which invokes RCU callbacks; rcub/N, which boosts
# preempted RCU readers) run at SCHED_FIFO `rcutree.kthread_prio`, 1 by default: below the
# CPU-bound FIFO 11-13 threads the PCP stress test pins to CPU 0, so a preempted rcuc/0 could
# never finish its read-side section (an RCU stall that never ends). 20 is above every
# CPU-bound thread of the suite and below what it measures (explain's loop at 40, the
# interrupt threads at 50, latency's at 80); see docs/MEASURING.md, "PREEMPT_RT guests".
RT_APPEND = "rcutree.kthread_prio=20"
GUESTS = {
    "rt-arm64": {"arch": "arm64", "flavour": "rt-arm64", "rt": True, "append": RT_APPEND},
    "rt-amd64": {"arch": "amd64", "flavour": "rt-amd64", "rt": True, "append": RT_APPEND},
    "amd64": {"arch": "amd64", "flavour": "amd64", "rt": False},
}

ARCH = {
    "arm64": {
        "triple": "aarch64-unknown-linux-gnu",
        "libdir": "/usr/aarch64-linux-gnu/lib",
        "loader": "ld-linux-aarch64.so.1",
        "qemu": ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72"],
        "console": "ttyAMA0",
    },
    "amd64": {
        "triple": None,  # native: target/release
        "libdir": "/lib/x86_64-linux-gnu",
        "loader": "ld-linux-x86-64.so.2",
        # A virtio RNG: the explain step's interrupt source (see INIT's explain_run).
        # One host thread for both vCPUs (`thread=single`): under qemu's multi-threaded TCG
        # (the default) the explain step hung rt-amd64 in 8 of 34 runs (2026-11-28, qemu 7.2,
        # AMD EPYC host), both vCPU threads spinning at ~90 % CPU with the console silent, as
        # preempt enabled its trace events (the kernel patches its text and waits for the other
        # CPU to acknowledge); single-threaded, 0 hangs in 30 runs, and a boot 27 s against
        # 36-40 s (docs/MEASURING.md, "PREEMPT_RT guests").
        "qemu": ["qemu-system-x86_64", "-cpu", "qemu64", "-device", "virtio-rng-pci",
                 "-accel", "tcg,thread=single"],
        "console": "ttyS0",
        # The emulated 16550 raises transmit interrupts that the threaded handler then finds
        # already served: under the console flood the kernel's spurious-interrupt detector
        # counted 99 900 of 100 000 unhandled and disabled IRQ 4 ("irq 4: nobody cared",
        # 9 s after boot), after which the console crawled (4212 lines in 300 s).
        # And the boot-time check of the timer interrupt (setup_IO_APIC's check_timer) counts
        # ticks within a delay loop, which a starved emulated CPU can miss: "Kernel panic -
        # not syncing: IO-APIC + timer doesn't work!" at 0.04 s (rt-amd64 beside stress-ng,
        # 2026-11-28); the kernel sets the same itself in KVM and Hyper-V guests.
        "append": "noirqdebug no_timer_check",
        # Loaded in this order by INIT (each module's `depends=` before it), from the
        # booted kernel's package.
        "modules": ["drivers/virtio/virtio_ring", "drivers/virtio/virtio",
                    "drivers/virtio/virtio_pci_modern_dev", "drivers/virtio/virtio_pci_legacy_dev",
                    "drivers/virtio/virtio_pci", "drivers/char/hw_random/virtio-rng"],
    },
}

# The libraries every Rust binary of the workspace links (checked with readelf below).
LIBS = ["libc.so.6", "libm.so.6", "libgcc_s.so.1"]

TESTS = [("preempt", "thesis_listings"), ("preempt", "examples_output"),
         ("preempt", "rtic_conformance"), ("preempt-sync", "pcp_stress")]


def log(msg):
    print(f"rt_guests: {msg}", flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, check=True, **kw)


def nice(cmd):
    return ["nice", "-n", "10"] + cmd


def fetch_kernels(cache, abi, guests):
    """apt-get download + dpkg-deb -x of each guest's kernel and busybox-static per arch."""
    os.makedirs(cache, exist_ok=True)
    archs = {GUESTS[g]["arch"] for g in guests}
    if "arm64" in archs:
        foreign = subprocess.run(["dpkg", "--print-foreign-architectures"],
                                 capture_output=True, text=True, check=True).stdout.split()
        if "arm64" not in foreign:
            run(["dpkg", "--add-architecture", "arm64"])
            run(["apt-get", "update", "-qq"])
    pkgs = []
    for g in guests:
        a = GUESTS[g]["arch"]
        pkgs.append((f"linux-image-{abi}-{GUESTS[g]['flavour']}", a))
    for a in sorted(archs):
        pkgs.append(("busybox-static", a))
    out = {}
    for name, a in pkgs:
        dest = os.path.join(cache, f"{name}_{a}")
        if not os.path.isdir(dest):
            debs = glob.glob(os.path.join(cache, f"{name}_*_{a}.deb"))
            if not debs:
                run(["apt-get", "download", f"{name}:{a}"], cwd=cache)
                debs = glob.glob(os.path.join(cache, f"{name}_*_{a}.deb"))
            run(["dpkg-deb", "-x", debs[0], dest + ".tmp"])
            os.rename(dest + ".tmp", dest)
        out[(name, a)] = dest
    return out


def cargo_json(args):
    """Runs cargo with --message-format=json and returns the executables it reports:
    (target name, target kinds, path, package directory)."""
    p = subprocess.run(nice(["cargo"] + args + ["--message-format=json"]), cwd=ROOT,
                       stdout=subprocess.PIPE, check=True, text=True)
    exes = []
    for line in p.stdout.splitlines():
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        if m.get("reason") == "compiler-artifact" and m.get("executable"):
            exes.append((m["target"]["name"], m["target"]["kind"], m["executable"],
                         os.path.dirname(m["manifest_path"])))
    return exes


# The cargo invocations of CI's earlier stages (scripts/build_deb.sh; `cargo test --workspace`
# and scripts/arm64_qemu_user.sh), the same packages so the same features: after them this
# compiles nothing and only collects the executables.
RELEASE_PACKAGES = ["-p", "preempt-cli", "-p", "preempt-gimbal", "-p", "preempt-uav",
                    "-p", "preempt-imu-sim", "--bins"]
TEST_PACKAGES = {
    "amd64": ["--workspace"],
    "arm64": ["-p", "preempt", "-p", "preempt-sync", "-p", "preempt-io", "-p", "preempt-stats",
              "-p", "preempt-trace", "-p", "preempt-macros"],
}


def build(arch):
    """The binaries a guest runs: the release `preempt` (as packaged), and the debug test
    binaries of TESTS with the preempt crate's examples beside them (the profile `cargo test`
    builds). Returns {"preempt": path, "examples": [...], "tests": {name: path}}."""
    triple = ARCH[arch]["triple"]
    tgt = ["--target", triple] if triple else []
    bins = [e for name, _, e, _ in cargo_json(["build", "--release", *tgt, *RELEASE_PACKAGES])
            if name == "preempt"]
    tests, examples = {}, []
    wanted = {t for _, t in TESTS}
    preempt_dir = os.path.join(ROOT, "crates", "preempt")
    for name, kind, exe, pkg in cargo_json(["test", *tgt, *TEST_PACKAGES[arch], "--no-run"]):
        if name in wanted and "test" in kind:
            tests[name] = exe
        elif "example" in kind and pkg == preempt_dir and "/examples/" in exe:
            examples.append(exe)
    missing = sorted(wanted - set(tests))
    if missing or not bins:
        sys.exit(f"rt_guests: cargo reported no executable for {missing or ['preempt']}")
    return {"preempt": bins[-1], "examples": examples, "tests": tests}


INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /tmp /run; mount -t devpts devpts /dev/pts; mount -t tmpfs tmp /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
export PATH=/usr/local/bin:/bin:/usr/bin HOME=/tmp PREEMPT_REQUIRE_PRIVILEGED=1 RUST_BACKTRACE=1
# The CPU is emulated: the examples' golden outputs are compared for function, not for the
# values a closed control loop reaches in time (crates/preempt/tests/examples_output.rs).
export PREEMPT_EXAMPLES_TIMING_FREE=1
# The golden outputs lie at a fixed guest path, not the checkout's: a clone under /tmp would
# have them under this init's tmpfs on /tmp, and a path may hold spaces.
export PREEMPT_EXAMPLES_EXPECTED=/t/expected
# The PCP stress tests prove progress there, not throughput: a tenth of their rounds under
# watchdogs three times as long (crates/preempt-sync/tests/common/mod.rs, rounds()).
export PREEMPT_EMULATED_CPU=1
# The demos wait 5 s for their plant process's loop; an emulated CPU on a loaded host took
# longer (crates/preempt-rig/src/harness.rs, start_plant).
export PREEMPT_PLANT_START_TIMEOUT=120
ulimit -l unlimited
# The kernel modules of make_initramfs (amd64: the virtio RNG), in their order.
[ -f /lib/modules/order ] && for m in $(cat /lib/modules/order); do
  insmod /lib/modules/$(uname -r)/$m.ko || echo "insmod $m failed"; done
# No echo of what the host types during the explain step (scripts/rt_guests.py, boot), and a
# reader that takes it.
stty -echo; cat >/dev/null &
# rt_steps=a,b (kernel command line, --steps): run only those steps; rt_repeat=N (--repeat):
# each of them N times.
want() { [ -z "$rt_steps" ] || case ",$rt_steps," in *,"$1",*) ;; *) return 1 ;; esac; }
# rt_diag=S (--diag-after): a step still running after S s gets its threads' state, every
# task's scheduling state and the kernel's stacks (sysrq t, w, l) and runqueues written to the
# console, once, from CPU 1 (the pinned tests load CPU 0).
diag() { pid=$1; n=0
  while [ -d /proc/$pid ] && [ $n -lt $rt_diag ]; do sleep 1; n=$((n + 1)); done
  [ -d /proc/$pid ] || return 0
  echo "@@DIAG $name: pid $pid still running after $rt_diag s"
  threads() { for p in $pid $(cat /proc/$pid/task/*/children 2>/dev/null); do
    for t in /proc/$p/task/*; do echo "@@DIAG task $t: $(cat $t/stat) wchan=$(cat $t/wchan)"
      cat $t/stack $t/sched; done; done; }
  threads
  echo "@@DIAG all tasks (pid (comm) state ... processor rt_priority policy):"
  for s in /proc/[0-9]*/task/*/stat; do cat $s; done 2>/dev/null
  echo 8 > /proc/sys/kernel/printk
  for k in w l t; do echo "@@DIAG sysrq $k"; echo $k > /proc/sysrq-trigger; sleep 2; done
  echo "@@DIAG sched debug"; cat /sys/kernel/debug/sched/debug /proc/sched_debug 2>/dev/null
  echo "@@DIAG the step's threads again (progress: utime, stime, nr_switches)"; threads
  # What a thread spinning in the kernel does (its stack cannot be read while it runs, and
  # /proc/TID/syscall says only "running"): 1 s of every system call's entry and exit
  # (number, arguments, return value) and of the futex and rt_mutex functions, all CPUs.
  tr=/sys/kernel/tracing
  if [ -w $tr/current_tracer ]; then
    echo 0 > $tr/tracing_on; echo > $tr/trace; echo 2048 > $tr/buffer_size_kb
    for f in '*futex*' '*pi_state*' '*rt_mutex*' '*proxy_lock*' try_to_take_rt_mutex \
      '*rtlock*' '*rt_spin*'; do echo "$f" >> $tr/set_ftrace_filter 2>/dev/null; done
    echo function > $tr/current_tracer; echo 1 > $tr/events/raw_syscalls/enable
    echo 1 > $tr/tracing_on; sleep 1; echo 0 > $tr/tracing_on
    echo "@@DIAG ftrace: 1 s of system calls and futex/rt_mutex functions (last 400 lines)"
    tail -400 $tr/trace
    echo 0 > $tr/events/raw_syscalls/enable; echo nop > $tr/current_tracer
    echo > $tr/set_ftrace_filter
  else
    echo "@@DIAG ftrace: $tr not writable"
  fi
  echo 4 > /proc/sys/kernel/printk
  echo "@@DIAG end"; }
step() { name=$1; shift; want $name || return 0; i=0
  while [ $i -lt ${rt_repeat:-1} ]; do i=$((i + 1))
    echo "@@BEGIN $name"; "$@" 2>&1 & pid=$!
    [ -n "$rt_diag" ] && { diag $pid & mon=$!; taskset -p -c 1 $mon >/dev/null; }
    wait $pid; rc=$?
    [ -n "$rt_diag" ] && { kill $mon; wait $mon; } 2>/dev/null
    echo "@@END $name rc=$rc"; done; }
echo "@@GUEST $(uname -r) $(uname -m) $(nproc) cpus; RCU kthreads at SCHED_FIFO $(cat /sys/module/rcutree/parameters/kthread_prio)"
step check preempt check --json
step thesis_listings /t/deps/thesis_listings --test-threads=1
step examples_output /t/deps/examples_output --test-threads=1 --nocapture
step rtic_conformance /t/deps/rtic_conformance --test-threads=1
# --nocapture: the pinned Listing 2 test prints how many rounds found the lock contended
# (a waiter in FUTEX_LOCK_PI, the kernel's rt_mutex on PREEMPT_RT).
step pcp-stress /t/deps/pcp_stress --test-threads=1 --nocapture
step latency preempt latency --duration 3s --no-history --no-progress --json
# An interrupt source is pinned to CPU 1 and kept busy for the whole run, so its handler (on an
# RT kernel the SCHED_FIFO 50 thread irq/N-<action>) keeps cutting into the loop measured on
# CPU 1 at priority 40; every sample above 1 us is a candidate and the worst 200 are explained.
# amd64: the virtio RNG's queue interrupt, kept busy by a reader of /dev/hwrng on CPU 0 (64
# bytes a request, one interrupt each). arm64: the UART's, the host typing into it
# (@@RX-FLOOD, see boot()) and the console flooded from CPU 0 (qemu's PL011 raises interrupts
# only for received characters). The JSON goes to a file and is printed after the floods.
explain_run() {
  irq=$(awk '/virtio[0-9]+-input/ {sub(":", "", $1); print $1; exit}' /proc/interrupts)
  if [ -n "$irq" ]; then
    echo 1 > /proc/irq/$irq/smp_affinity_list
    taskset -c 0 sh -c 'while :; do cat /dev/hwrng; done' >/dev/null &
  else
    irq=$(awk '/uart-pl011/ {sub(":", "", $1); print $1; exit}' /proc/interrupts)
    echo 1 > /proc/irq/$irq/smp_affinity_list
    echo "@@RX-FLOOD on"
    taskset -c 0 sh -c 'while :; do echo "flood ................................................................"; done' >/dev/console &
  fi
  flood=$!
  echo "source irq $irq ($(grep -E "^ *$irq:" /proc/interrupts | awk '{print $NF}')), effective affinity $(cat /proc/irq/$irq/effective_affinity_list)"
  before=$(grep -E "^ *$irq:" /proc/interrupts)
  preempt latency --cpus 1 --duration 4s --priority 40 --explain=1 --no-history --no-progress \
    --json >/tmp/explain.json 2>/tmp/explain.err
  rc=$?
  kill $flood; wait $flood 2>/dev/null
  echo; echo "@@RX-FLOOD off"
  cat /tmp/explain.err /tmp/explain.json
  echo "$before"; grep -E "^ *$irq:" /proc/interrupts
  return $rc
}
step explain explain_run
step uav preempt demo uav --duration 2s --out /tmp/uav --no-history
echo "@@DONE"
poweroff -f
"""


def make_initramfs(arch, built, busybox_dir, kernel_dirs, out):
    """Writes the gzipped initramfs `out` of `built`'s binaries, busybox and the ARCH's kernel
    modules of each kernel package in `kernel_dirs`; returns its size."""
    a = ARCH[arch]
    root = out + ".root"
    shutil.rmtree(root, ignore_errors=True)
    for d in ["bin", "usr/bin", "lib", "t/deps", "t/examples", "proc", "sys", "dev"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(os.path.join(busybox_dir, "bin/busybox"), os.path.join(root, "bin/busybox"))
    shutil.copy(built["preempt"], os.path.join(root, "usr/bin/preempt"))
    for e in built["examples"]:
        shutil.copy(e, os.path.join(root, "t/examples", os.path.basename(e)))
    for name, exe in built["tests"].items():
        shutil.copy(exe, os.path.join(root, "t/deps", name))
    for lib in LIBS + [a["loader"]]:
        shutil.copy(os.path.realpath(os.path.join(a["libdir"], lib)), os.path.join(root, "lib", lib))
    if arch == "amd64":
        os.makedirs(os.path.join(root, "lib64"), exist_ok=True)
        os.symlink("/lib/" + a["loader"], os.path.join(root, "lib64", a["loader"]))
    if a.get("modules"):
        for kdir in kernel_dirs:
            for mdir in glob.glob(os.path.join(kdir, "lib/modules/*")):
                dest = os.path.join(root, "lib/modules", os.path.basename(mdir))
                os.makedirs(dest, exist_ok=True)
                for m in a["modules"]:
                    shutil.copy(os.path.join(mdir, "kernel", m + ".ko"), dest)
        with open(os.path.join(root, "lib/modules/order"), "w") as f:
            f.write("\n".join(os.path.basename(m) for m in a["modules"]) + "\n")
    with open(os.path.join(root, "init"), "w") as f:
        f.write(INIT)
    # The RTIC conformance test pins its apps with `taskset -c 0` and first checks that
    # `taskset --version` runs (util-linux); busybox's taskset pins the same way.
    os.makedirs(os.path.join(root, "usr/local/bin"), exist_ok=True)
    shim = os.path.join(root, "usr/local/bin/taskset")
    with open(shim, "w") as f:
        f.write('#!/bin/sh\n[ "$1" = --version ] && { echo "taskset (busybox)"; exit 0; }\n'
                'exec /bin/busybox taskset "$@"\n')
    os.chmod(shim, 0o755)
    # examples_output reads the expected outputs from PREEMPT_EXAMPLES_EXPECTED (INIT), a
    # fixed path: the checkout's own path may lie under the guest's tmpfs /tmp.
    expected = os.path.join(ROOT, "crates/preempt/examples/expected")
    shutil.copytree(expected, os.path.join(root, "t/expected"))
    os.chmod(os.path.join(root, "init"), 0o755)
    strip = "aarch64-linux-gnu-strip" if arch == "arm64" else "strip"
    for d in ["usr/bin", "t/deps", "t/examples"]:
        for f in glob.glob(os.path.join(root, d, "*")):
            subprocess.run([strip, "--strip-debug", f], check=True)
    files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
    cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=files,
                          capture_output=True, check=True).stdout
    with open(out, "wb") as f:
        f.write(subprocess.run(["gzip", "-1"], input=cpio, capture_output=True,
                               check=True).stdout)
    return os.path.getsize(out)


# Input the host types into the guest's UART while the guest asks for it: qemu's PL011 sends
# at once, so the console flood (transmit) raises no interrupt there (0 on both CPUs in a 5 s
# flood, 6.1.0-56-rt-arm64); received characters do, on both machines. Printable and
# newline-terminated: no Ctrl-A (the escape of qemu's -nographic mux), and the guest's
# reader of the console consumes it line by line.
RX_FLOOD_ON, RX_FLOOD_OFF = b"@@RX-FLOOD on", b"@@RX-FLOOD off"
RX_LINE = b"rx " + b"." * 60 + b"\n"


# A guest whose console stays silent (but for kernel messages) this long is stopped: longer
# than the longest quiet step (the PCP stress test's watchdogs on an emulated CPU, 180 s),
# shorter than --timeout-s. Seen twice in five runs of the non-RT amd64 guest (2026-11-28):
# the explain step's console flood stopped for good, the kernel reporting a soft lockup of
# CPU 0 in `preempt` and an RCU stall of CPU 1 (where the UART's interrupt is pinned) every
# ~30 s, until --timeout-s.
STALL_S = 240
KERNEL_MESSAGE = re.compile(rb"^\[ *\d+\.\d+\] ")


def boot(guest, kernel, initrd, log_path, timeout_s, steps, repeat=1, diag_after=None):
    """Boots `guest`, writes its console to `log_path` and types RX_LINEs into its UART between
    the guest's RX_FLOOD_ON and RX_FLOOD_OFF lines. Returns (seconds, why it was stopped: None
    when it powered off)."""
    a = ARCH[GUESTS[guest]["arch"]]
    # `quiet` keeps the kernel's warnings out of the suite's JSON on the console (a diagnosing
    # run raises the console's log level only for its dump, see INIT's diag).
    extra = ["quiet"] + ([f"rt_repeat={repeat}"] if repeat > 1 else [])
    extra += [f"rt_diag={diag_after}"] if diag_after else []
    cmd = nice(a["qemu"] + ["-smp", "2", "-m", "1024", "-nographic", "-no-reboot",
                           "-kernel", kernel, "-initrd", initrd, "-append",
                           " ".join([f"console={a['console']}", "panic=-1", *extra,
                                     a.get("append", ""), GUESTS[guest].get("append", ""),
                                     f"rt_steps={','.join(steps)}"])])
    log(f"{guest}: $ {' '.join(cmd)}")
    t0 = time.monotonic()
    last_line = [t0]
    flooding = threading.Event()
    stop = threading.Event()
    with open(log_path, "wb") as f:
        q = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        os.set_blocking(q.stdin.fileno(), False)

        def read_console():
            for line in q.stdout:
                # The kernel's own reports (a soft lockup's, every ~30 s) are not the suite
                # making progress.
                if not KERNEL_MESSAGE.match(line):
                    last_line[0] = time.monotonic()
                f.write(line)
                f.flush()  # a stalled guest's last lines are on disk while it stalls
                if RX_FLOOD_ON in line:
                    flooding.set()
                elif RX_FLOOD_OFF in line:
                    flooding.clear()
            stop.set()

        def type_input():
            block = RX_LINE * 64
            while not stop.is_set():
                if not flooding.wait(0.1):
                    continue
                try:
                    os.write(q.stdin.fileno(), block)
                except BlockingIOError:
                    time.sleep(0.001)  # qemu takes input as fast as the guest's UART does
                except OSError:
                    return

        threads = [threading.Thread(target=read_console), threading.Thread(target=type_input)]
        for t in threads:
            t.start()
        stopped = None
        while q.poll() is None:
            now = time.monotonic()
            if now - t0 > timeout_s:
                stopped = f"no poweroff within {timeout_s} s"
            elif now - last_line[0] > STALL_S:
                stopped = (f"console silent (but for kernel messages) for {STALL_S} s after "
                           f"{last_line[0] - t0:.0f} s, no poweroff")
            if stopped:
                q.kill()
                break
            time.sleep(0.5)
        q.wait()
        stop.set()
        for t in threads:
            t.join()
    return time.monotonic() - t0, stopped


def split_steps(console):
    """{step: [{"rc", "output"} of each run, in order]} (a step runs --repeat times)."""
    steps, cur, buf = {}, None, []
    for line in console.replace("\r", "").splitlines():
        m = re.match(r"^@@BEGIN (\S+)$", line)
        if m:
            cur, buf = m.group(1), []
            continue
        # A step that dies mid-line (a test binary's watchdog exit after "test x ... ")
        # leaves its last output on the line of the marker.
        m = re.match(r"^(.*)@@END (\S+) rc=(\d+)$", line)
        if m and cur == m.group(2):
            if m.group(1):
                buf.append(m.group(1))
            steps.setdefault(cur, []).append({"rc": int(m.group(3)), "output": "\n".join(buf)})
            cur = None
            continue
        if cur:
            buf.append(line)
    return steps


def first_json(text):
    """The first JSON object of a step's output (stderr lines may come before or after)."""
    for m in re.finditer(r"^\{", text, re.M):
        try:
            return json.JSONDecoder().raw_decode(text[m.start():])[0]
        except ValueError:
            continue
    raise ValueError("no JSON object in the output")


def explain_check(ex, rt):
    """(passed, detail) of the `--explain` step: the UART's interrupt work is among the causes,
    named as what it is: on an RT kernel the thread `irq/N-<action>` and "threaded handler of
    IRQ N"; on a non-RT kernel hard-interrupt time `N:<action>` and no `irq/N-` thread."""
    if ex is None:
        return False, "the step did not run"
    m = re.search(r"^source irq (\d+) \((\S*)\), effective affinity (\S+)", ex["output"], re.M)
    if not m:
        return False, f"rc={ex['rc']}; no interrupt source found in /proc/interrupts"
    irq = m.group(1)
    try:
        explain = first_json(ex["output"])["data"]["explain"]
        causes = explain["top_causes"]
    except (ValueError, KeyError, TypeError) as e:
        return False, f"rc={ex['rc']}; no --explain JSON ({e})"
    names = [c["name"] for c in causes]
    threads = [c for c in causes if c["name"].startswith(f"irq/{irq}-")]
    hard = [c for c in causes if c["kind"] == "irq" and c["name"].startswith(f"{irq}:")]
    unnamed = [n for n in names if n.startswith("irq/") and "threaded handler of IRQ" not in n]

    def show(c):
        return f"{c['name']} [{c['kind']}] in {c['count']} outliers, {c['total_ns'] / 1e3:.0f} us"

    detail = (f"rc={ex['rc']}; IRQ {irq} ({m.group(2)}) on CPU {m.group(3)}; "
              f"{explain['explained']} outliers explained; ")
    if rt:
        ok = (ex["rc"] == 0 and threads and not unnamed and
              all(f"threaded handler of IRQ {irq}," in c["name"] for c in threads))
        detail += ("its thread: " + "; ".join(show(c) for c in threads) if threads
                   else f"no irq/{irq}- thread among the causes {names[:8]}")
    else:
        ok = ex["rc"] == 0 and hard and not threads
        detail += ("its hard interrupt: " + "; ".join(show(c) for c in hard) if hard
                   else f"no {irq}: interrupt among the causes {names[:8]}")
    if unnamed:
        detail += f"; irq/ threads not named as handlers: {unnamed}"
    return ok, detail


STEPS = ["check", "thesis_listings", "examples_output", "rtic_conformance", "pcp-stress",
         "latency", "explain", "uav"]
# The step each check reads, where it is not the check's own name.
CHECK_STEP = {"check-json": "check", "preempt-model": "check", "emulated-cpu-reported": "check",
              "rcu-kthreads": "check", "no-watchdog": "finished",
              "latency-bookkeeping": "latency", "latency-not-clean": "latency",
              "demo-uav": "uav"}


def judge(guest, steps, console, wanted, repeat=1):
    """(check name, passed, detail) for every check of the steps `wanted`, each run `repeat`
    times: a check passes when it passed in every run; the detail names the first failing
    run (a run that did not happen fails) and how many passed."""
    runs = [judge_run(guest, {k: v[i] for k, v in steps.items() if i < len(v)}, console, wanted)
            for i in range(repeat)]
    if repeat == 1:
        return runs[0]
    out = []
    for i, c in enumerate(runs[0]):
        per_run = [r[i] for r in runs]
        passed = sum(r["passed"] for r in per_run)
        first = next((n for n, r in enumerate(per_run) if not r["passed"]), None)
        shown = per_run[-1 if first is None else first]
        where = "" if first is None else f"; run {first + 1}"
        out.append({"check": c["check"], "passed": passed == repeat,
                    "detail": f"{passed} of {repeat} runs passed{where}: {shown['detail']}"})
    return out


def judge_run(guest, steps, console, wanted):
    """(check name, passed, detail) for every check of the steps `wanted` in one run of each."""
    rt = GUESTS[guest]["rt"]
    out = []

    def add(name, ok, detail):
        out.append({"check": name, "passed": bool(ok), "detail": detail})

    add("finished", "@@DONE" in console, "the suite ran to its end")
    fired = watchdogs(console)
    if fired:
        add("no-watchdog", False, f"a test's watchdog fired (a hang is a failure): {fired}")
    c = steps.get("check")
    items = {}
    if c:
        try:
            doc = first_json(c["output"])
            items = {i["id"]: i for i in doc["data"]["items"]}
        except (ValueError, AttributeError, KeyError, TypeError) as e:
            add("check-json", False, f"preempt check --json did not parse: {e}")
    model = items.get("preempt-model", {})
    want = "pass" if rt else "fail"
    add("preempt-model", str(model.get("status", "")).lower() == want,
        f"expected {want.upper()} on {'an RT' if rt else 'a non-RT'} kernel: {model}")
    virt = items.get("virtualization", {})
    add("emulated-cpu-reported", str(virt.get("status", "")).lower() == "fail"
        and "emulated" in virt.get("value", ""), f"{virt}")
    # The RT kernels boot with RT_APPEND's rcutree.kthread_prio: check must read it from the
    # real kernel (PASS, naming the priority); the non-RT kernel's is only information.
    rcu = items.get("rcu-kthreads", {})
    rcu_prio = RT_APPEND.split("=")[1]
    add("rcu-kthreads", (str(rcu.get("status", "")).lower() == "pass"
                         and f"SCHED_FIFO {rcu_prio}:" in rcu.get("value", "")) if rt
        else str(rcu.get("status", "")).lower() == "info", f"{rcu}")
    for t in ["thesis_listings", "examples_output", "rtic_conformance", "pcp-stress"]:
        s = steps.get(t)
        contended = s and re.search(r"contended rounds: \d+ of \d+", s["output"])
        # A test binary that ran no test (a filter matching nothing) exits 0: count them.
        ran = s and sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", s["output"]))
        add(t, s is not None and s["rc"] == 0 and ran >= 1,
            "rc=%s, %slast lines: %s" % (s and s["rc"], contended and contended[0] + "; " or "",
                                         s and s["output"].splitlines()[-3:]))
    lat = steps.get("latency")
    try:
        res = first_json(lat["output"])["data"]
        threads = res["threads"]
        sums = [(t["samples"] + t["missed_periods"], t["releases"]) for t in threads]
        add("latency-bookkeeping", lat["rc"] == 0 and all(a == b for a, b in sums),
            f"(samples + missed, releases) per thread: {sums}")
        verdict = res["ledger"]["verdict"]
        add("latency-not-clean", verdict != "clean" and "emulated" in verdict, verdict)
    except (TypeError, KeyError, ValueError) as e:
        add("latency-bookkeeping", False, f"no latency JSON ({e}); rc={lat and lat['rc']}")
    ex = steps.get("explain")
    add("explain", *explain_check(ex, rt))
    uav = steps.get("uav")
    add("demo-uav", uav is not None and uav["rc"] == 0,
        "rc=%s: %s" % (uav and uav["rc"], uav and uav["output"].splitlines()[-3:]))
    return [c for c in out if CHECK_STEP.get(c["check"], c["check"]) in wanted + ["finished"]]


def watchdogs(console):
    """The test watchdogs' reports in a console ("WATCHDOG: <test> did not finish ..."),
    with the step they fired in."""
    fired, step = [], None
    for line in console.replace("\r", "").splitlines():
        m = re.match(r"^@@BEGIN (\S+)$", line)
        if m:
            step = m.group(1)
        i = line.find("WATCHDOG: ")
        if i >= 0:
            fired.append(f"{step}: {line[i:]}")
    return fired


def last_open_step(console):
    """The step a console's log began and never ended (None: none)."""
    begun = re.findall(r"^@@BEGIN (\S+)", console, re.M)
    ended = re.findall(r"^@@END (\S+)", console, re.M)
    return begun[-1] if len(begun) > len(ended) else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--guests", default="rt-arm64,rt-amd64,amd64")
    p.add_argument("--out", default=os.path.join(ROOT, "target/rt-guests"))
    p.add_argument("--kernel-abi", default=None,
                   help="Debian kernel ABI, e.g. 6.1.0-56 (default: linux-image-rt-amd64's)")
    p.add_argument("--timeout-s", type=int, default=600, help="per guest")
    p.add_argument("--steps", default=",".join(STEPS),
                   help=f"the steps to run, of {','.join(STEPS)}")
    p.add_argument("--except", dest="excepted", default="",
                   help="GUEST:STEP,... steps not to run in one guest (e.g. amd64:explain)")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each step this many times per boot (to catch a rare hang)")
    p.add_argument("--diag-after", type=int, default=None, metavar="S",
                   help="dump the state of a step still running after S s (its threads' "
                        "/proc stat, wchan, stack, sched; every task's stat; sysrq w, l, t; "
                        "the scheduler's runqueues) to the console")
    p.add_argument("--reboot-hung", type=int, default=1, metavar="N",
                   help="boot a guest whose console went silent (a hung emulated kernel) again, "
                        "up to N times; its checks are judged on the last boot (default 1)")
    p.add_argument("--skip-build", action="store_true",
                   help="reuse the binaries of the last run (target/rt-guests/*.initrd)")
    a = p.parse_args()
    guests = [g for g in a.guests.split(",") if g]
    steps = [s for s in a.steps.split(",") if s]
    unknown = [s for s in steps if s not in STEPS]
    if unknown or not steps:
        sys.exit(f"rt_guests: unknown step(s) {unknown} (--steps takes {','.join(STEPS)})")
    for g in guests:
        if g not in GUESTS:
            sys.exit(f"rt_guests: unknown guest '{g}' (--guests takes {','.join(GUESTS)})")
    if a.repeat < 1 or (a.diag_after is not None and a.diag_after < 1):
        sys.exit("rt_guests: --repeat and --diag-after take a positive integer")
    excepted = set()
    for e in (e for e in a.excepted.split(",") if e):
        g, _, step = e.partition(":")
        if g not in guests or step not in steps:
            sys.exit(f"rt_guests: --except {e}: expected GUEST:STEP with GUEST of --guests "
                     f"({','.join(guests)}) and STEP of --steps ({','.join(steps)})")
        excepted.add((g, step))
    os.makedirs(a.out, exist_ok=True)
    abi = a.kernel_abi
    if not abi:
        dep = subprocess.run(["apt-cache", "depends", "linux-image-rt-amd64"],
                             capture_output=True, text=True, check=True).stdout
        m = re.search(r"linux-image-(\d+\.\d+\.\d+-\d+)-rt-amd64", dep)
        if not m:
            sys.exit("rt_guests: apt-cache knows no linux-image-rt-amd64: run apt-get update, "
                     "or pass --kernel-abi")
        abi = m.group(1)
    t0 = time.monotonic()
    pkgs = fetch_kernels(os.path.join(a.out, "cache"), abi, guests)
    t_fetch = time.monotonic() - t0
    initrds, t_build = {}, {}
    for arch in sorted({GUESTS[g]["arch"] for g in guests}):
        path = os.path.join(a.out, f"{arch}.initrd")
        if not (a.skip_build and os.path.exists(path)):
            t1 = time.monotonic()
            built = build(arch)
            kernel_dirs = [pkgs[(f"linux-image-{abi}-{GUESTS[g]['flavour']}", arch)]
                           for g in guests if GUESTS[g]["arch"] == arch]
            size = make_initramfs(arch, built, pkgs[("busybox-static", arch)], kernel_dirs, path)
            t_build[arch] = time.monotonic() - t1
            log(f"{arch}: initramfs {size / 1e6:.1f} MB in {t_build[arch]:.0f} s")
        initrds[arch] = path
    summary = {"kernel_abi": abi, "fetch_s": round(t_fetch, 1),
               "build_s": {k: round(v, 1) for k, v in t_build.items()}, "guests": {}}
    ok = True
    for g in guests:
        arch, flavour = GUESTS[g]["arch"], GUESTS[g]["flavour"]
        name = f"linux-image-{abi}-{flavour}"
        kernel = glob.glob(os.path.join(pkgs[(name, arch)], "boot/vmlinuz-*"))[0]
        console_path = os.path.join(a.out, f"{g}.console.log")
        mine = [s for s in steps if (g, s) not in excepted]
        hung = []
        while True:
            secs, stopped = boot(g, kernel, initrds[arch], console_path, a.timeout_s, mine,
                                 a.repeat, a.diag_after)
            console = open(console_path, "rb").read().decode("utf-8", "replace")
            fired = watchdogs(console)
            if fired:
                # A test hung (its watchdog fired): a failure of the code under test, never
                # hidden by booting again (a PCP livelock once passed CI that way).
                log(f"{g}: a test's watchdog fired, not booting again: {fired}")
                break
            if not (stopped and stopped.startswith("console silent")) or len(hung) >= a.reboot_hung:
                break
            # A silent console with no test watchdog's report is the emulated kernel hanging
            # outside a test (docs/MEASURING.md: rt-amd64's `explain` once in ~50 runs,
            # waiting in a cross-CPU call for an idle vCPU). The console is kept, the hang
            # reported as the kernel's, and the guest booted again.
            step = last_open_step(console)
            kept = os.path.join(a.out, f"{g}.console.hung-{len(hung) + 1}.log")
            shutil.copyfile(console_path, kept)
            hung.append({"step": step, "why": stopped, "console": kept})
            log(f"{g}: HUNG in step {step or '(none: boot)'} ({stopped}); console kept in "
                f"{kept}; booting it again ({len(hung)} of {a.reboot_hung})")
        ran = split_steps(console)
        for s, runs in ran.items():
            with open(os.path.join(a.out, f"{g}.{s}.txt"), "w") as f:
                f.write("".join(v["output"] + f"\nrc={v['rc']}\n" for v in runs))
        checks = judge(g, ran, console, mine, a.repeat)
        for h in hung:
            checks.insert(0, {"check": "kernel-hung", "passed": True,
                              "detail": f"booted again after a hang outside any test's watchdog "
                                        f"in step {h['step'] or '(none: boot)'}: {h['why']}; "
                                        f"console {h['console']}"})
        if stopped:
            checks.insert(0, {"check": "boot", "passed": False, "detail": stopped})
        summary["guests"][g] = {"kernel": os.path.basename(kernel), "seconds": round(secs, 1),
                                "steps": mine, "checks": checks, "hung_boots": hung}
        for c in checks:
            ok &= c["passed"]
            print(f"  {g:9} {'PASS' if c['passed'] else 'FAIL'}  {c['check']:22} "
                  f"{c['detail'][:300]}")
        log(f"{g}: {secs:.0f} s from boot to power-off ({os.path.basename(kernel)})")
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    log(f"total {time.monotonic() - t0:.0f} s; summary in {a.out}/summary.json")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
