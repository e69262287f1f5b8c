#!/bin/sh
# The release build of modelgate, in one place (docs/operations.md, Deploy):
# a static, CGO-free binary, stripped (-s -w), without local paths
# (-trimpath), with the release label that `modelgate version` and
# GET /api/status report. The Dockerfile and deploy/build-image.sh call it.
#
#   deploy/build-release.sh [OUTPUT]        (default ./modelgate)
#   VERSION=1.2.0 deploy/build-release.sh   (default: git describe, else dev)
set -eu
cd "$(dirname "$0")/.."
out=${1:-./modelgate}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/modelgate/modelgate/internal/app.Version=$version" \
  -o "$out" ./cmd/modelgate
echo "built $out ($version)" >&2
