#!/usr/bin/env bash
# build-mpich.sh - builds Debian's MPICH 4.0.2 with the DePFS ROMIO driver
# into a cache and prints the folder holding the resulting libmpich.so.12.
#
#   client/adio/build-mpich.sh [BUILD]        (BUILD: DePFS build dir, default build)
#
# Programs built with Debian's mpicc.mpich use the result through
#   LD_LIBRARY_PATH=<printed folder>  mpiexec.mpich -n 4 ./prog -fname depfs@8@6:/f
#
# Cache layout (root $DEPFS_MPICH_CACHE, default /var/cache/depfs-mpich):
#   src/mpich-4.0.2        pristine source from `apt-get source mpich`
#   tree/                  patched + configured tree (reused while the
#                          configure line, patch-mpich.sh and Makefile.mk are
#                          unchanged; a driver edit rebuilds only ROMIO)
#   <hash>/lib/            libmpich.so.12 + libdepfs.so.0; <hash> covers the
#                          driver sources, the recipe and client/lib/depfs.h; CACHE=DIR
#                          overrides this folder
#   <hash>/romio-test/     ROMIO's test programs (sources) for tests/mpiio
# The printed folder is BUILD/mpich/lib: hard links to <hash>/lib/libmpich*
# plus BUILD's own libdepfs.so.0 (and BUILD/mpich/romio-test), so two build
# dirs never share a libdepfs and pruning never pulls a library from under a
# running program.
# libdepfs.so.0 in the result is refreshed from BUILD/lib/libdepfs.so on every
# run (libmpich finds it by rpath), so libdepfs fixes need no MPICH rebuild.
#
# Exit codes: 0 ok (last stdout line = lib folder, BUILD/mpich/lib), 77 MPICH source cannot be
# had here (no deb-src / no network), 1 build failure (log path printed).
set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ADIO="$TOP/client/adio"
BUILD=${1:-${BUILD:-build}}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
ROOT=${DEPFS_MPICH_CACHE:-/var/cache/depfs-mpich}
MPICH_VER=4.0.2
JOBS=${JOBS:-$(nproc)}
SRC_LIST=/etc/apt/sources.list.d/depfs-src.sources
CONFIGURE_ARGS=(--with-device=ch3:nemesis --with-pm=no --with-file-system=ufs+nfs+depfs
                --disable-fortran --disable-cxx --disable-static --enable-shared
                --with-hwloc-prefix=/usr --disable-doc)

say() { echo "build-mpich: $*" >&2; }
die() { say "$*"; exit 1; }

hash_of() { cat "$@" | sha256sum | cut -c1-16; }

LIBDEPFS="$BUILD/lib/libdepfs.so"
[ -f "$LIBDEPFS" ] || die "$LIBDEPFS missing; run: make BUILD=${BUILD#$TOP/} ${BUILD#$TOP/}/lib/libdepfs.so"

mkdir -p "$ROOT"
exec 9>"$ROOT/.lock"
flock 9   # one build at a time; a second caller then reuses the result

# the configured tree depends on the configure line, the patch and the file list
CFG_HASH=$(printf '%s\n' "${CONFIGURE_ARGS[@]}" | cat - "$ADIO/patch-mpich.sh" "$ADIO/Makefile.mk" \
           | sha256sum | cut -c1-16)
ALL_HASH=$(hash_of $(ls "$ADIO"/*.[ch] | sort) "$TOP/client/lib/depfs.h" <(echo "$CFG_HASH"))
OUT=${CACHE:-$ROOT/$ALL_HASH}

# libdepfs under a prefix configure can check: include/depfs.h, lib/libdepfs.so{,.0}
stage_libdepfs() {
  local dir=$1
  mkdir -p "$dir/include" "$dir/lib"
  cp "$TOP/client/lib/depfs.h" "$dir/include/"
  cp "$LIBDEPFS" "$dir/lib/libdepfs.so.0.tmp" && mv -f "$dir/lib/libdepfs.so.0.tmp" "$dir/lib/libdepfs.so.0"
  ln -sf libdepfs.so.0 "$dir/lib/libdepfs.so"
}

# BUILD/mpich/{lib,romio-test}: this build dir's own view of the result -
# libmpich hard-linked from the cache (it survives pruning and is never
# rewritten) beside a copy of BUILD's libdepfs, so callers with other build
# dirs (an ASan build, say) refreshing the shared folder never swap the
# libdepfs under this one's running programs. Prints the lib folder.
publish() {
  local dst="$BUILD/mpich" tmp="$BUILD/mpich.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp/lib"
  cp -al "$OUT"/lib/libmpich.so* "$tmp/lib/" 2>/dev/null || cp -a "$OUT"/lib/libmpich.so* "$tmp/lib/"
  cp -al "$OUT/romio-test" "$tmp/romio-test" 2>/dev/null || cp -a "$OUT/romio-test" "$tmp/romio-test"
  cp "$LIBDEPFS" "$tmp/lib/libdepfs.so.0"
  ln -s libdepfs.so.0 "$tmp/lib/libdepfs.so"
  touch "$tmp/lib/.complete"
  rm -rf "$dst" && mv "$tmp" "$dst"
  echo "$dst/lib"
}

if [ -f "$OUT/lib/.complete" ]; then
  stage_libdepfs "$OUT"
  say "reusing $OUT (hash unchanged)"
  publish
  exit 0
fi

fetch_source() {
  [ -f "$ROOT/src/mpich-$MPICH_VER/configure.ac" ] && return 0
  command -v dpkg-source >/dev/null || { say "SKIP: dpkg-dev not installed (apt-get install dpkg-dev)"; exit 77; }
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    local uris
    uris=$(awk '/^URIs:/ && !seen {print $2; seen=1}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$uris" ] || uris=$(awk '$1 == "deb" && !seen {for (i = 2; i <= NF; i++) if ($i ~ /^http/) {print $i; seen=1; break}}' \
                             /etc/apt/sources.list 2>/dev/null || true)
    [ -n "$uris" ] || { say "SKIP: no Debian archive URI found for a deb-src entry"; exit 77; }
    say "writing $SRC_LIST (deb-src for $uris)"
    printf 'Types: deb-src\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$uris" > "$SRC_LIST"
  fi
  apt-get update -q >"$ROOT/apt-update.log" 2>&1 || true
  rm -rf "$ROOT/src.tmp" && mkdir -p "$ROOT/src.tmp"
  if ! (cd "$ROOT/src.tmp" && apt-get source -q "mpich=$MPICH_VER-*" >"$ROOT/apt-source.log" 2>&1 ||
        apt-get source -q mpich >>"$ROOT/apt-source.log" 2>&1); then
    tail -n 5 "$ROOT/apt-source.log" >&2
    say "SKIP: apt-get source mpich failed (see $ROOT/apt-source.log)"; exit 77
  fi
  [ -f "$ROOT/src.tmp/mpich-$MPICH_VER/configure.ac" ] || { say "SKIP: source is not MPICH $MPICH_VER"; exit 77; }
  rm -rf "$ROOT/src" && mv "$ROOT/src.tmp" "$ROOT/src"
}

# patched + configured tree for this recipe; driver sources refreshed each time
prepare_tree() {
  local tree="$ROOT/tree" t0
  TREE="$tree/mpich-$MPICH_VER"
  if [ "$(cat "$tree/.configured" 2>/dev/null)" != "$CFG_HASH" ]; then
    rm -rf "$tree" && mkdir -p "$tree"
    cp -a "$ROOT/src/mpich-$MPICH_VER" "$tree/"
    "$ADIO/patch-mpich.sh" "$TREE" >&2
    stage_libdepfs "$tree/depfs"
    say "configure (about 100 s; log $tree/configure.log)"
    t0=$(date +%s)
    (cd "$TREE" && MPILIBNAME=mpich ./configure --prefix="$tree/install" "${CONFIGURE_ARGS[@]}" \
       --with-depfs="$tree/depfs" MPICHLIB_CPPFLAGS="-I$tree/depfs/include" \
       CFLAGS="-O2 -g" >"$tree/configure.log" 2>&1) || { tail -n 20 "$tree/configure.log" >&2; die "configure failed ($tree/configure.log)"; }
    say "configured in $(( $(date +%s) - t0 )) s"
    echo "$CFG_HASH" > "$tree/.configured"
  else
    PATCH_MPICH_NO_AUTOGEN=1 "$ADIO/patch-mpich.sh" "$TREE" >&2
    stage_libdepfs "$tree/depfs"
  fi
}

build_tree() {
  local t0; t0=$(date +%s)
  say "make -j$JOBS (5-10 min from scratch on 2 cores; log $TREE/../make.log)"
  (cd "$TREE" && make -j"$JOBS" >"$TREE/../make.log" 2>&1) ||
    { grep -E 'error|Error' "$TREE/../make.log" | head -n 20 >&2; die "make failed ($TREE/../make.log)"; }
  say "built in $(( $(date +%s) - t0 )) s"
}

install_result() {
  local tmp="$OUT.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp/lib"
  cp -a "$TREE"/lib/.libs/libmpich.so* "$tmp/lib/"
  # libmpich's rpath points at the tree's depfs prefix; the result carries its own copy too
  stage_libdepfs "$tmp"
  # ROMIO's conformance programs, for tests/mpiio/run-mpiio
  cp -a "$TREE/src/mpi/romio/test" "$tmp/romio-test"
  [ -n "$(ls "$tmp"/lib/libmpich.so.12* 2>/dev/null)" ] || die "no libmpich.so.12 produced"
  touch "$tmp/lib/.complete"
  rm -rf "$OUT" && mv "$tmp" "$OUT"
}

# keep the newest results; older ones belong to earlier driver versions
prune_results() {
  local keep=${DEPFS_MPICH_KEEP:-3}
  ls -1dt "$ROOT"/[0-9a-f]*/lib/.complete 2>/dev/null | tail -n +$((keep + 1)) |
    while read -r stamp; do rm -rf "$(dirname "$(dirname "$stamp")")"; done
}

fetch_source
prepare_tree
build_tree
install_result
[ -n "${CACHE:-}" ] || prune_results
say "libmpich.so.12 with the DePFS driver is in $OUT/lib (this build dir's view: $BUILD/mpich/lib)"
publish
