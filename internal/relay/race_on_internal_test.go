//go:build race

package relay

// raceEnabled: the race detector is on. Under it sync.Pool drops a
// quarter of what is put back on purpose, so a pooled buffer is allocated
// again at random and an allocation count of pooled code means nothing.
const raceEnabled = true
