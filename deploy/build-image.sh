#!/usr/bin/env bash
# Builds the MemKV server container image from the project's Debian package
# (docs/kubernetes.md, "Building the image"):
#   1. the base image: BASE (default debian:bookworm-slim) when it is already
#      local or can be pulled; otherwise a Debian 12 root file system made
#      with debootstrap from the mirror apt uses, imported as
#      localhost/memkv-base:bookworm (kept for the next run);
#   2. the .deb: configure the tree, build `memkv`, then `cpack -G DEB` of
#      the server component (the project's own packaging, docs/packaging.md);
#      skipped with --deb FILE;
#   3. the image: deploy/Containerfile with podman (or buildah), tagged
#      memkv:VERSION and memkv:latest;
#   4. with --smoke: the image's `memkv start` on host networking, then
#      GET /v1/health and /v1/ready and a put and a get through the image's
#      own memkv client verbs.
# Rerunnable: every step starts afresh except the debootstrap base, which is
# reused while its image exists (--rebuild-base makes it again).
#
# Needs: cmake, ninja (for step 1), podman or buildah, and for step 2 without
# registry access debootstrap and root (debootstrap chroots). All Debian
# packages: apt-get install podman buildah debootstrap.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: deploy/build-image.sh [--build-dir DIR] [--deb FILE] [--base IMAGE]
                             [--tag NAME] [--tool podman|buildah]
                             [--mirror URL] [--rebuild-base] [--base-only] [--smoke]
                             [--smoke-port N] [--runtime R] [--ulimit SPEC]...
  --build-dir DIR  the CMake tree to build and package (default: build-image)
  --deb FILE       use this memkv_*.deb instead of building one
  --base IMAGE     base image (default: debian:bookworm-slim)
  --tag NAME       image name (default: memkv); tagged NAME:VERSION and NAME:latest
  --tool T         podman (default when installed) or buildah
  --mirror URL     Debian mirror for debootstrap (default: the one apt uses)
  --rebuild-base   make the debootstrap base again even if it exists
  --base-only      only pull or make the base image, then stop
  --smoke          run the image and check health, ready, put and get
  --smoke-port N   data port for --smoke (default 19900; admin on N+1)
  --runtime R      OCI runtime for RUN steps and --smoke (e.g. runc where crun
                   refuses hybrid cgroups: "cgroups in hybrid mode not supported")
  --ulimit SPEC    passed to the build and to --smoke's run (repeatable), e.g.
                   nofile=20000:20000 where the default (nofile 1048576) is above
                   this shell's hard limit ("setrlimit RLIMIT_NOFILE: Operation
                   not permitted")
Environment: MEMKV_IMAGE_STORAGE_DRIVER (e.g. vfs) is passed to podman/buildah
as --storage-driver, for hosts without overlay support.
EOF
}

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$repo/build-image
deb=""
base=debian:bookworm-slim
tag=memkv
tool=""
mirror=""
rebuild_base=0
base_only=0
smoke=0
smoke_port=19900
runtime=""
ulimits=()
local_base=localhost/memkv-base:bookworm

while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --deb) deb=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --tool) tool=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --rebuild-base) rebuild_base=1; shift ;;
    --base-only) base_only=1; shift ;;
    --smoke) smoke=1; shift ;;
    --smoke-port) smoke_port=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --ulimit) ulimits+=(--ulimit "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-image: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

log() { echo "build-image: $*" >&2; }
die() { echo "build-image: $*" >&2; exit 1; }

if [ -z "$tool" ]; then
  if command -v podman >/dev/null; then tool=podman
  elif command -v buildah >/dev/null; then tool=buildah
  else die "neither podman nor buildah is installed (apt-get install podman buildah)"; fi
fi
case "$tool" in podman|buildah) ;; *) die "--tool: '$tool'; allowed: podman, buildah" ;; esac
command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install $tool)"

storage_opts=()
if [ -n "${MEMKV_IMAGE_STORAGE_DRIVER:-}" ]; then
  storage_opts=(--storage-driver "$MEMKV_IMAGE_STORAGE_DRIVER")
fi
if [ -n "$runtime" ]; then
  if [ "$tool" = podman ]; then storage_opts+=(--runtime "$runtime")
  else export BUILDAH_RUNTIME=$runtime; fi
fi
ctr() { "$tool" "${storage_opts[@]}" "$@"; }
image_exists() {
  if [ "$tool" = podman ]; then ctr image exists "$1"
  else ctr inspect --type image "$1" >/dev/null 2>&1; fi
}

# 1. The base image.
make_debootstrap_base() {
  command -v debootstrap >/dev/null || die "cannot pull $base and debootstrap is not installed (apt-get install debootstrap)"
  [ "$(id -u)" -eq 0 ] || die "cannot pull $base; making a base with debootstrap needs root"
  if [ -z "$mirror" ]; then
    mirror=$(apt-get indextargets --format '$(REPO_URI)' 2>/dev/null | grep -v security | head -n 1 || true)
    mirror=${mirror%/}
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  fi
  local work
  work=$(mktemp -d /var/tmp/memkv-base.XXXXXX)
  log "debootstrap --variant=minbase bookworm from $mirror (several minutes)"
  if ! debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    die "debootstrap failed (log: $work/debootstrap.log)"
  fi
  # What the slim image also drops: apt lists and caches.
  rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin \
         "$work/rootfs/var/cache/apt/archives/"*.deb
  log "importing the root file system as $local_base"
  tar -C "$work/rootfs" --numeric-owner -c . | ctr import - "$local_base" >/dev/null
  rm -rf "$work"
}

if image_exists "$base"; then
  log "base: $base (local)"
elif ctr pull "$base" >/dev/null 2>&1; then
  log "base: $base (pulled)"
else
  log "cannot pull $base (no registry access?); using a debootstrap base"
  if [ "$rebuild_base" -eq 1 ] || ! image_exists "$local_base"; then
    make_debootstrap_base
  else
    log "base: $local_base (made earlier; --rebuild-base makes it again)"
  fi
  base=$local_base
fi
[ "$base_only" -eq 0 ] || { log "base ready: $base"; exit 0; }

# 2. The package.
if [ -z "$deb" ]; then
  log "building the tree in $build_dir (RelWithDebInfo) and packaging it with cpack"
  cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  # The image needs the server package only: build its one target and
  # package that component alone (cpack packages what is built and builds
  # nothing itself, docs/packaging.md).
  cmake --build "$build_dir" --target memkv
  rm -rf "$build_dir/deb"
  cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$build_dir/deb" -D CPACK_COMPONENTS_ALL=server \
    >"$build_dir/cpack.log" 2>&1 || { cat "$build_dir/cpack.log" >&2; die "cpack failed"; }
  deb=$(ls "$build_dir"/deb/memkv_*.deb | head -n 1)
fi
[ -f "$deb" ] || die "no package at '$deb'"
case "$(basename "$deb")" in memkv_*.deb) ;; *) die "--deb: '$deb' is not a memkv_VERSION_ARCH.deb (the server package)" ;; esac
version=$(dpkg-deb -f "$deb" Version)
log "package: $deb (version $version)"

# 3. The image. The context holds the Containerfile and the package only.
context=$(mktemp -d /var/tmp/memkv-image.XXXXXX)
trap 'rm -rf "$context"' EXIT
cp "$repo/deploy/Containerfile" "$context/Containerfile"
cp "$deb" "$context/"
log "$tool build: $tag:$version from $base"
if [ "$tool" = podman ]; then
  ctr build --format docker --network host "${ulimits[@]}" --build-arg "BASE=$base" -f "$context/Containerfile" \
    -t "$tag:$version" -t "$tag:latest" "$context"
else
  ctr bud --format docker --network host --isolation chroot "${ulimits[@]}" --build-arg "BASE=$base" -f "$context/Containerfile" \
    -t "$tag:$version" "$context"
  ctr tag "$tag:$version" "$tag:latest"
fi
log "built $tag:$version"

# 4. Smoke test: the image's own entrypoint, run the way the StatefulSet
# runs it (its user, read-only root, no capabilities, the config and the
# data directory as volumes, the key in auth.key), on host networking; its
# own client verbs; then a restart on the same data directory must find the
# value again (the drive file is the server's store).
if [ "$smoke" -eq 1 ]; then
  [ "$tool" = podman ] || die "--smoke runs the image with podman"
  name=memkv-smoke-$$
  key=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
  smoke_dir=$(mktemp -d /var/tmp/memkv-smoke.XXXXXX)
  cleanup_smoke() { ctr rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$context" "$smoke_dir"; }
  trap cleanup_smoke EXIT
  mkdir -p "$smoke_dir/etc" "$smoke_dir/data"
  cat >"$smoke_dir/etc/config.yaml" <<'CONFIG'
memory: {block_size: 2 MiB, max_size: 256 MiB}
storage:
  mode: file
  block_size: 4 MiB
  drives:
    - {media: /var/lib/memkv/drive0.memkv, size: 256 MiB}
CONFIG
  printf '%s' "$key" >"$smoke_dir/data/auth.key"
  chmod 0600 "$smoke_dir/data/auth.key"
  chown -R 10001:10001 "$smoke_dir/data"
  admin=http://127.0.0.1:$((smoke_port + 1))
  wait_ready() {
    local deadline=$((SECONDS + 60))
    until curl -fsS "$admin/v1/ready" >/dev/null 2>&1; do
      if [ $SECONDS -ge $deadline ] || [ "$(ctr inspect -f '{{.State.Running}}' "$name")" != true ]; then
        ctr logs "$name" >&2 || true
        die "smoke: the server did not become ready within 60 s"
      fi
      sleep 0.5
    done
  }
  client() { ctr exec -e "MEMKV_SERVERS=127.0.0.1:$smoke_port" -e "MEMKV_AUTH_KEY=$key" "$name" "$@"; }
  log "smoke: podman run --network host --read-only --cap-drop ALL $tag:$version on 127.0.0.1:$smoke_port (file mode)"
  ctr run -d --name "$name" --network host "${ulimits[@]}" --read-only --cap-drop ALL \
    --security-opt no-new-privileges --tmpfs /tmp \
    -v "$smoke_dir/etc:/etc/memkv:ro" -v "$smoke_dir/data:/var/lib/memkv" \
    "$tag:$version" --config /etc/memkv/config.yaml --data-dir /var/lib/memkv \
    --address "127.0.0.1:$smoke_port" >/dev/null
  wait_ready
  log "smoke: /v1/health: $(curl -fsS "$admin/v1/health")"
  log "smoke: /v1/ready: $(curl -fsS "$admin/v1/ready")"
  client sh -c 'echo smoke-value | memkv put smoke-key -' >&2
  got=$(client memkv get smoke-key)
  [ "$got" = smoke-value ] || die "smoke: get smoke-key returned '$got', expected 'smoke-value'"
  log "smoke: put and get through the image's client verbs: ok"
  ctr stop -t 30 "$name" >/dev/null
  code=$(ctr inspect -f '{{.State.ExitCode}}' "$name")
  log "smoke: exit code after SIGTERM: $code"
  [ "$code" = 0 ] || die "smoke: the server exited $code after SIGTERM, expected 0"
  ctr start "$name" >/dev/null
  wait_ready
  got=$(client memkv get smoke-key)
  [ "$got" = smoke-value ] || die "smoke: after a restart get smoke-key returned '$got', expected 'smoke-value'"
  log "smoke: after a restart on the same data directory the value is still there: ok"
  ctr stop -t 30 "$name" >/dev/null
fi
