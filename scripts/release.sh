#!/usr/bin/env bash
# Builds, packs and checks kubectl-etcdnet's release archives: the one script behind both the
# release workflow (.github/workflows/release.yml) and a local dry run (`scripts/release.sh`
# with no argument, which .ci/run runs for linux/amd64). One script, so that what CI checks is
# what a tag publishes. The archive layout is krew/README.md's ("Release archives").
#
#   scripts/release.sh [local [TRIPLE]]  build, pack and check the host's archive (default);
#                                        TRIPLE defaults to the host's release target
#   scripts/release.sh build TRIPLE      cargo build --release for TRIPLE; the binary is copied
#                                        to $DIST/bin/TRIPLE/ (what the workflow uploads)
#   scripts/release.sh pack TRIPLE [BIN] pack BIN (default: the built binary) into
#                                        $DIST/kubectl-etcdnet_<tag>_<os>_<arch>.<ext> + .sha256
#   scripts/release.sh check [--all]     render krew/.krew.yaml for the archives in $DIST with
#                                        their real sha256 into $DIST/etcdnet.yaml and check
#                                        each archive against it (cargo xtask krew-manifest);
#                                        --all: every platform's archive must be there
#   scripts/release.sh notes             release notes: the CHANGELOG section of the version
#                                        and the digests of the default pod images
#   scripts/release.sh images            the default images (--image, --jumpbox-image)
#
# Environment: DIST (default target/dist), TAG (default v<Cargo.toml version>; any other value
# is refused: the version lives in Cargo.toml only).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
    echo "release.sh: $*" >&2
    exit 1
}

# The version, from the one place that holds it: [package] in Cargo.toml.
version=$(awk '
    /^\[/ { in_pkg = ($0 == "[package]") }
    in_pkg && /^version *= *"/ { sub(/^version *= *"/, ""); sub(/".*/, ""); print; exit }
' Cargo.toml)
[ -n "$version" ] || die "no version in Cargo.toml's [package]"
tag=${TAG:-v$version}
[ "$tag" = "v$version" ] || die "tag $tag is not v$version, Cargo.toml's version; set the version there first"
dist=${DIST:-target/dist}

# Rust target → krew's os/arch (krew/README.md's table). Linux builds are static (musl).
platform_of() {
    case "$1" in
    x86_64-unknown-linux-musl) echo "linux amd64" ;;
    # Only .ci/run's fallback where rustup cannot fetch musl's std: packed and checked the same,
    # not static, never released (the workflow builds musl).
    x86_64-unknown-linux-gnu) echo "linux amd64" ;;
    aarch64-unknown-linux-musl) echo "linux arm64" ;;
    x86_64-apple-darwin) echo "darwin amd64" ;;
    aarch64-apple-darwin) echo "darwin arm64" ;;
    x86_64-pc-windows-msvc) echo "windows amd64" ;;
    *) die "no release platform for target $1" ;;
    esac
}
all_triples=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin
    aarch64-apple-darwin x86_64-pc-windows-msvc)

# The release target for this machine: its own target, but musl on Linux (the archive is the
# static build whatever libc the build machine has).
host_triple() {
    local host
    host=$(rustc -vV | sed -n 's/^host: //p')
    case "$host" in
    x86_64-unknown-linux-*) echo x86_64-unknown-linux-musl ;;
    aarch64-unknown-linux-*) echo aarch64-unknown-linux-musl ;;
    x86_64-pc-windows-*) echo x86_64-pc-windows-msvc ;;
    *) echo "$host" ;;
    esac
}

exe_of() {
    case "$1" in
    *-windows-*) echo kubectl-etcdnet.exe ;;
    *) echo kubectl-etcdnet ;;
    esac
}

archive_of() {
    local os arch
    read -r os arch <<<"$(platform_of "$1")"
    if [ "$os" = windows ]; then
        echo "kubectl-etcdnet_${tag}_${os}_${arch}.zip"
    else
        echo "kubectl-etcdnet_${tag}_${os}_${arch}.tar.gz"
    fi
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1 # macOS
    fi
}

cmd_build() {
    local triple=$1 exe
    platform_of "$triple" >/dev/null
    exe=$(exe_of "$triple")
    if command -v rustup >/dev/null 2>&1 &&
        ! rustup target list --installed | grep -qx "$triple"; then
        rustup target add "$triple"
    fi
    echo "+ cargo build --release --locked --target $triple --bin kubectl-etcdnet"
    cargo build --release --locked --target "$triple" --bin kubectl-etcdnet
    mkdir -p "$dist/bin/$triple"
    cp "target/$triple/release/$exe" "$dist/bin/$triple/$exe"
}

cmd_pack() {
    local triple=$1 exe archive stage
    exe=$(exe_of "$triple")
    local bin=${2:-$dist/bin/$triple/$exe}
    [ -f "$bin" ] || die "no binary at $bin (run: scripts/release.sh build $triple)"
    archive=$(archive_of "$triple")
    mkdir -p "$dist"
    # A staging directory holding exactly the archive's two files, with their modes set here:
    # a binary that went through an artifact upload has lost its executable bit.
    stage=$(mktemp -d "$dist/stage.XXXXXX")
    install -m 0755 "$bin" "$stage/$exe"
    install -m 0644 LICENSE "$stage/LICENSE"
    rm -f "$dist/$archive" "$dist/$archive.sha256"
    local out
    out="$(cd "$dist" && pwd)/$archive"
    case "$archive" in
    *.zip)
        # krew unpacks .zip on every OS; Windows users expect one. -X: no extra attributes.
        if command -v zip >/dev/null 2>&1; then
            (cd "$stage" && zip -q -X "$out" "$exe" LICENSE)
        else
            (cd "$stage" && python3 -m zipfile -c "$out" "$exe" LICENSE)
        fi
        ;;
    *)
        # GNU tar: owner, order and times fixed, so a rebuild of the same binary gives the same
        # archive. bsdtar (macOS) has no such options; its archive is as good for krew.
        local opts=()
        if tar --version 2>/dev/null | grep -q 'GNU tar'; then
            opts=(--owner=0 --group=0 --numeric-owner --sort=name
                "--mtime=@${SOURCE_DATE_EPOCH:-0}")
        fi
        (cd "$stage" && tar "${opts[@]}" -czf "$out" "$exe" LICENSE)
        ;;
    esac
    rm -rf "$stage"
    # The sha256sum format (`sha256sum -c` reads it), the archive named without a directory.
    (cd "$dist" && echo "$(sha256_of "$archive")  $archive" >"$archive.sha256")
    echo "$dist/$archive"
    cat "$dist/$archive.sha256"
}

cmd_check() {
    local all=
    [ "${1:-}" = --all ] && all=--all
    local found=0 triple
    for triple in "${all_triples[@]}"; do
        [ -f "$dist/$(archive_of "$triple")" ] && found=$((found + 1))
    done
    [ "$found" -gt 0 ] || die "no release archive for $tag in $dist"
    # xtask/src/release.rs: krew-release-bot's renderer, the one tests/it/krew_manifest.rs holds
    # to plugin.yaml, with the archives' sums, then each archive checked. A small crate, built
    # in seconds: none of the plugin's dependencies.
    echo "+ cargo xtask krew-manifest $tag $dist $all"
    # shellcheck disable=SC2086 # $all: one word or none
    cargo run --locked --quiet --package xtask -- krew-manifest "$tag" "$dist" $all
}

# The default images, read from the source so that the notes cannot name stale ones: the string
# of `pub const DEFAULT_IMAGE: &str =` (on that line, or the next where rustfmt puts it).
cmd_images() {
    local f
    for f in src/route/pod.rs src/route/jumpbox/spec.rs; do
        awk '/^pub const DEFAULT_IMAGE: &str =/ { on = 1 }
            on && match($0, /"[^"]+"/) { print substr($0, RSTART + 1, RLENGTH - 2); exit }' "$f" |
            grep . || die "no DEFAULT_IMAGE in $f"
    done
}

cmd_notes() {
    # The version's section of CHANGELOG.md, without its heading (the release has the title).
    local section
    section=$(awk -v v="$version" '
        /^## \[/ { if (on) exit; on = (index($0, "## [" v "]") == 1); next }
        on { print }
    ' CHANGELOG.md)
    [ -n "${section//[[:space:]]/}" ] ||
        die "CHANGELOG.md has no section \"## [$version]\": move Unreleased's entries there before tagging"
    printf '%s\n\n' "$section"
    echo "## Images"
    echo
    echo "The pods the plugin creates use these images unless --image / --jumpbox-image say"
    echo "otherwise (docs/images.md: what they must contain, mirroring them for air-gapped sites)."
    echo "Each is pinned by the digest of its multi-arch index: the pods run exactly these,"
    echo "whatever the tag points at today."
    echo
    local images image name digest repo served
    images=$(cmd_images)
    while read -r image; do
        # name:tag@sha256:<64 hex>, as src/route/ must pin it (docs/images.md).
        name=${image%@*}
        digest=${image#*@}
        [[ "$image" == *@* && "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] ||
            die "default image $image is not pinned as name:tag@sha256:<64 hex> (docs/images.md)"
        # The repository: the name without its tag (a tag is after the last '/', a port is not).
        repo=$name
        [[ "${name##*/}" == *:* ]] && repo=${name%:*}
        # The registry must still serve the pinned manifest, byte for byte: the sha256 of its raw
        # bytes is the digest. (skopeo takes no tag and digest together: by the digest alone.)
        served=$(skopeo inspect --raw --retry-times 3 "docker://$repo@$digest" | sha256sum | cut -d' ' -f1) ||
            die "cannot fetch $repo@$digest"
        [ "sha256:$served" = "$digest" ] ||
            die "the registry serves sha256:$served for $repo@$digest"
        echo "- \`$name\`: \`$digest\`"
    done <<<"$images"
    echo
    echo "Archives and their sha256 sums are attached below (\`sha256sum -c <archive>.sha256\`)."
}

cmd_local() {
    local triple=${1:-$(host_triple)}
    cmd_build "$triple"
    cmd_pack "$triple"
    cmd_check
}

case "${1:-local}" in
local) cmd_local "${@:2}" ;;
build) [ $# -eq 2 ] || die "usage: build TRIPLE"; cmd_build "$2" ;;
pack) [ $# -ge 2 ] || die "usage: pack TRIPLE [BINARY]"; cmd_pack "$2" "${3:-}" ;;
check) cmd_check "${@:2}" ;;
notes) cmd_notes ;;
images) cmd_images ;;
*) die "unknown command $1 (local, build, pack, check, notes, images)" ;;
esac
