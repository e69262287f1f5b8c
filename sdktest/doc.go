// Package sdktest runs the official SDKs, npm openai and
// @anthropic-ai/sdk, against the gateway: the clients API users actually
// run, with their own error classes and retry rules. The calls are made by
// sdk.mjs under Node; the test (sdk_test.go) starts the gateway, runs the
// script and asserts on what each SDK saw. It skips when node or
// sdktest/node_modules is missing (npm ci --prefix sdktest).
package sdktest
