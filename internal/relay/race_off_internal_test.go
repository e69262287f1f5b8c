//go:build !race

package relay

const raceEnabled = false // see race_on_internal_test.go
