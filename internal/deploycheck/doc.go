// Package deploycheck holds the offline checks of the deployment files
// (Dockerfile, deploy/build-image.sh, deploy/compose.yaml and the Helm
// chart deploy/helm/modelgate): they are rendered or parsed here, without
// an engine, helm or a network, and every variable they set must be one the
// configuration reads, every probe a route the gateway serves. It has no
// code of its own; the checks are its tests.
package deploycheck
