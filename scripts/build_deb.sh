#!/usr/bin/env bash
# Builds the Debian package of preempt for amd64 or arm64 (a Raspberry Pi 4/5 with 64-bit
# Raspberry Pi OS or Debian, Graviton): the `preempt` binary in /usr/bin and the demo helpers
# (gimbal-demo, gimbal-plant, uav-sim, imu-sim) side by side in /usr/lib/preempt, where
# gimbal-demo finds its plant. Built with cargo and dpkg-deb only; arm64 is cross-built (the
# linker setup of .cargo/config.toml; scripts/arm64_qemu_user.sh installs it).
#
#   scripts/build_deb.sh amd64|arm64 [OUT_DIR=target/deb]
#
# Prints the package's path. Depends on the libc6 and libgcc-s1 versions the binaries need
# (the highest GLIBC_ symbol version they import, read with objdump).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: scripts/build_deb.sh amd64|arm64 [OUT_DIR]}
out=${2:-target/deb}
case "$arch" in
  amd64) target_args=(); bin=target/release; objdump=objdump ;;
  arm64)
    target_args=(--target aarch64-unknown-linux-gnu)
    bin=target/aarch64-unknown-linux-gnu/release
    objdump=aarch64-linux-gnu-objdump
    ;;
  *) echo "build_deb.sh: unknown architecture '$arch' (amd64 or arm64)" >&2; exit 2 ;;
esac
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# amd64 builds in target/release, shared with the project's other release builds.
cargo build --release "${target_args[@]}" -p preempt-cli -p preempt-gimbal -p preempt-uav \
  -p preempt-imu-sim --bins
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/preempt_${version}_$arch
install -D -m 0755 "$bin/preempt" "$pkg/usr/bin/preempt"
for helper in gimbal-demo gimbal-plant uav-sim imu-sim; do
  install -D -m 0755 "$bin/$helper" "$pkg/usr/lib/preempt/$helper"
done
install -D -m 0644 README.md "$pkg/usr/share/doc/preempt/README.md"
install -D -m 0644 docs/MEASURING.md "$pkg/usr/share/doc/preempt/MEASURING.md"
# Strip with the target's binutils (rustc's release profile keeps symbols).
strip_tool=${objdump%objdump}strip
find "$pkg/usr/bin" "$pkg/usr/lib/preempt" -type f -exec "$strip_tool" --strip-unneeded {} +
glibc=$(find "$pkg/usr/bin" "$pkg/usr/lib/preempt" -type f -exec "$objdump" -T {} + |
  grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
size_kb=$(du -sk "$pkg/usr" | cut -f1)
mkdir -p "$pkg/DEBIAN"
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: preempt
Version: $version
Architecture: $arch
Maintainer: preempt developers <preempt@example.invalid>
Depends: libc6 (>= $glibc), libgcc-s1
Installed-Size: $size_kb
Section: devel
Priority: optional
Homepage: https://example.invalid/preempt
Description: is this machine real-time ready? Measure it, and run real-time apps
 preempt audits a Linux machine for real-time use (preempt check), measures
 wake-up latency with honest bookkeeping (preempt latency, --explain names the
 cause of each outlier), runs the scheduling-policy matrix, microbenchmarks and
 the gimbal and UAV demonstrators, and writes an HTML report (preempt run).
CONTROL
mkdir -p "$out"
dpkg-deb --root-owner-group --build "$pkg" "$out/preempt_${version}_$arch.deb" >/dev/null
echo "$out/preempt_${version}_$arch.deb"
