#!/usr/bin/env bash
# arm64 (Raspberry Pi 4/5, Graviton) as a first-class target, from an x86-64 Debian machine:
# installs what is missing (the rustup target, Debian's cross linker and arm64 libc,
# qemu-user-static, the binfmt_misc registration of qemu-aarch64) and runs the runtime crates'
# tests built for aarch64-unknown-linux-gnu under qemu-user (the cargo runner of
# .cargo/config.toml). Needs root for apt and binfmt_misc. (The binaries of the other crates
# are built for arm64 by scripts/build_deb.sh arm64.)
#
#   scripts/arm64_qemu_user.sh            # as .ci/run calls it
#
# qemu-user runs arm64 code on the host's kernel, translating each system call: it proves the
# code paths (syscall numbers, struct layouts, alignment, the CNTVCT_EL0 counter), not timing.
# Where it lacks a system call, the tests say so and take the path a user would meet there
# (docs/MEASURING.md, "arm64"). Any piece that cannot be installed fails this script with
# apt's or the kernel's own error.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu

if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64-static >/dev/null ||
  [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
    qemu-user-static
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

# Tests that start an example or a helper as a child process exec an arm64 ELF: the kernel
# hands it to qemu through binfmt_misc (Debian's registration, flags OPF).
mountpoint -q /proc/sys/fs/binfmt_misc ||
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  cat /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
fi
grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64

echo "-- the runtime crates' tests under qemu-user"
cargo test --target "$target" -p preempt -p preempt-sync -p preempt-io -p preempt-stats \
  -p preempt-trace -p preempt-macros
