//go:build !race

package sse

const raceEnabled = false // see race_on_internal_test.go
