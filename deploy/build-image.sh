#!/usr/bin/env bash
# Builds the modelgate container image without a container engine or a base
# image (none can be pulled offline): buildah assembles it from scratch
# around the static binary of deploy/build-release.sh, in Docker format
# (which keeps HEALTHCHECK), then checks the configuration it recorded.
# The image is the Dockerfile's; internal/deploycheck checks that the values
# below are the Dockerfile's.
#
#   deploy/build-image.sh [ARCHIVE]   (default: $TMPDIR/modelgate-image.tar,
#                                      a docker-archive for `docker load`)
# Runs as root (CI does); installs Debian's buildah when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# The image's configuration: keep in step with the Dockerfile.
ENTRYPOINT='["/modelgate"]'
IMAGE_USER='65532:65532'
PORT='3000'
VOLUME='/data'
WORKDIR='/data'
ENV_DATA_DIR='DATA_DIR=/data'
HEALTHCHECK='CMD ["/modelgate", "healthcheck"]'
HEALTHCHECK_INTERVAL='10s'
HEALTHCHECK_TIMEOUT='5s'
HEALTHCHECK_START_PERIOD='30s'
HEALTHCHECK_RETRIES='3'

archive=${1:-${TMPDIR:-/tmp}/modelgate-image.tar}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
tag="localhost/modelgate:$version"

if ! command -v buildah >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1; then
  as_root=""; [ "$(id -u)" -eq 0 ] || as_root=sudo
  $as_root apt-get update -qq
  $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah jq
fi
buildah --version
# vfs works wherever buildah runs (no overlay mounts in a sandbox); the
# storage is a scratch directory removed at the end.
store=$(mktemp -d)
buildah_() { buildah --storage-driver vfs --root "$store/root" --runroot "$store/run" "$@"; }
ctr=""
cleanup() {
  [ -n "$ctr" ] && buildah_ rm "$ctr" >/dev/null 2>&1 || true
  buildah_ rmi --all >/dev/null 2>&1 || true
  rm -rf "$store"
}
trap cleanup EXIT

# BINARY=path uses a release binary already built (by build-release.sh).
if [ -n "${BINARY:-}" ]; then cp "$BINARY" "$store/modelgate"
else VERSION="$version" deploy/build-release.sh "$store/modelgate"; fi
mkdir -p "$store/data"

ctr=$(buildah_ from scratch)
buildah_ copy "$ctr" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
buildah_ copy --chmod 0755 "$ctr" "$store/modelgate" /modelgate >/dev/null
buildah_ copy --chown "$IMAGE_USER" "$ctr" "$store/data" "$VOLUME" >/dev/null
# buildah takes a health check as words ("CMD /modelgate healthcheck"), the
# Dockerfile as JSON; both record the same exec form.
healthcheck_words="CMD $(jq -r 'join(" ")' <<<"${HEALTHCHECK#CMD }")"
buildah_ config --entrypoint "$ENTRYPOINT" --cmd '' --user "$IMAGE_USER" --port "$PORT/tcp" \
  --volume "$VOLUME" --workingdir "$WORKDIR" --env "$ENV_DATA_DIR" \
  --healthcheck "$healthcheck_words" --healthcheck-interval "$HEALTHCHECK_INTERVAL" \
  --healthcheck-timeout "$HEALTHCHECK_TIMEOUT" --healthcheck-start-period "$HEALTHCHECK_START_PERIOD" \
  --healthcheck-retries "$HEALTHCHECK_RETRIES" \
  --label org.opencontainers.image.title=modelgate --label "org.opencontainers.image.version=$version" \
  "$ctr"
buildah_ commit --quiet --format docker "$ctr" "$tag" >/dev/null

# What the image says, as an engine will read it (buildah inspect's JSON:
# .Docker is the Docker-format configuration, .Manifest the manifest).
buildah_ inspect --type image "$tag" >"$store/inspect.json"
inspect() { jq -c "$1" "$store/inspect.json"; }
fail=0
check() { # what, got, want
  if [ "$2" != "$3" ]; then echo "image $1: got $2, want $3" >&2; fail=1; else echo "image $1: $2"; fi
}
check entrypoint "$(inspect '.Docker.config.Entrypoint')" "$ENTRYPOINT"
check user "$(inspect '.Docker.config.User')" "\"$IMAGE_USER\""
case "$IMAGE_USER" in 0|0:*|root|root:*|"") echo "image user is root" >&2; fail=1;; esac
check "exposed ports" "$(inspect '.Docker.config.ExposedPorts')" "{\"$PORT/tcp\":{}}"
check volumes "$(inspect '.Docker.config.Volumes')" "{\"$VOLUME\":{}}"
check "working directory" "$(inspect '.Docker.config.WorkingDir')" "\"$WORKDIR\""
check environment "$(inspect '.Docker.config.Env | map(select(startswith("DATA_DIR=")))')" "[\"$ENV_DATA_DIR\"]"
check healthcheck "$(inspect '.Docker.config.Healthcheck.Test')" "$(jq -c '["CMD"] + .' <<<"${HEALTHCHECK#CMD }")"
# ... and the Dockerfile's health check is the one the issue asks for.
check "healthcheck command" "$(inspect '.Docker.config.Healthcheck.Test')" '["CMD","/modelgate","healthcheck"]'
check "healthcheck retries" "$(inspect '.Docker.config.Healthcheck.Retries')" "$HEALTHCHECK_RETRIES"
check "manifest type" "$(inspect '.Manifest | fromjson | .mediaType')" '"application/vnd.docker.distribution.manifest.v2+json"'
"$store/modelgate" version
# The health check command asks /healthz: it passes against the binary
# serving, and fails once it stopped.
port=$((20000 + RANDOM % 20000))
probe_env=(env -i "LISTEN_ADDR=127.0.0.1:$port" "DATA_DIR=$store/data" "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
"${probe_env[@]}" "$store/modelgate" >"$store/serve.log" 2>&1 &
server=$!
healthy=0
for _ in $(seq 1 120); do
  if "${probe_env[@]}" "$store/modelgate" healthcheck 2>/dev/null; then healthy=1; break; fi
  sleep 0.5
done
kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true
if [ "$healthy" -eq 1 ]; then echo "healthcheck: passes while the gateway serves"
else echo "healthcheck never passed; the gateway said:" >&2; cat "$store/serve.log" >&2; fail=1; fi
if "${probe_env[@]}" "$store/modelgate" healthcheck 2>/dev/null; then
  echo "healthcheck passes with no gateway running" >&2; fail=1
else echo "healthcheck: fails once the gateway stopped"; fi
[ "$fail" -eq 0 ] || { echo "image configuration check failed" >&2; exit 1; }

rm -f "$archive"
buildah_ push --quiet "$tag" "docker-archive:$archive:$tag" >/dev/null
echo "image $tag: $(du -h "$archive" | cut -f1) docker-archive at $archive (docker load -i $archive)"
