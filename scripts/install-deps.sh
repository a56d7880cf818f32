#!/usr/bin/env bash
# Installs what building and testing MemKV needs, from Debian's archive.
# Idempotent: packages already present are skipped, and apt is not touched
# at all when nothing is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  clang-14  # the thread-safety build of scripts/dev.sh (-Wthread-safety; docs/threads.md)
  libssl-dev libxxhash-dev libyaml-cpp-dev liburing-dev
  libgtest-dev libgmock-dev
  libzmq3-dev libmsgpack-dev  # the server's block events (src/events); never the client library
  libibverbs-dev ibverbs-providers
  python3
  python3-dev pybind11-dev  # the Python package (python/)
  python3-numpy python3-pytest  # its tests and benchmark
  python3-zmq python3-msgpack  # the block events subscriber test (tests/events)
  dnsmasq-base  # a real DNS server for the client's discovery tests (tests/dnsmasq_fixture.h)
  python3-yaml python3-kubernetes  # the Kubernetes manifests test (tests/deploy): rendering, the models as schema
  python3-pip python3-venv  # the wheel test: pip wheel ., then a fresh venv (tests/wheel)
  util-linux  # unshare: the wheel test hides libibverbs in a private mount namespace
  rsync tar sed findutils  # the preload shim's shell-command tests (tests/preload)
  prometheus  # promtool checks the admin endpoint's metrics
  curl openssl  # the admin endpoint's HTTPS test
  file  # cpack -G DEB runs it to find the ELF files it hands to dpkg-shlibdeps
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
