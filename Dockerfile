# modelgate container image: a static binary on an empty base.
#   docker build -t modelgate --build-arg VERSION=1.2.0 .
# CI assembles the same image without an engine (deploy/build-image.sh, with
# buildah); a test (internal/deploycheck) checks both say the same
# entrypoint, user, port, volume, environment and health check.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# third_party/gorm is a replaced module (docs/dependencies.md): go mod
# download reads its go.mod.
COPY go.mod go.sum ./
COPY third_party ./third_party
RUN go mod download
COPY . .
ARG VERSION=dev
RUN VERSION="$VERSION" deploy/build-release.sh /out/modelgate \
 && mkdir -p /out/data && chown 65532:65532 /out/data

FROM scratch
# Upstream providers are called over TLS: the CA bundle is the only file
# besides the binary.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/modelgate /modelgate
COPY --from=build --chown=65532:65532 /out/data /data
ENV DATA_DIR=/data
USER 65532:65532
WORKDIR /data
EXPOSE 3000
VOLUME ["/data"]
# No shell or curl in the image: the binary asks its own /healthz
# (LISTEN_ADDR, else PORT, as the server reads them).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/modelgate", "healthcheck"]
ENTRYPOINT ["/modelgate"]
