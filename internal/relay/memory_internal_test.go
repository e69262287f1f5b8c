package relay

import "testing"

// A burst of large bodies returns memory once they are gone, like a burst
// of many calls; small bodies do not.
func TestMemoryReturnedAfterLargeBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		peak int64
		want bool
	}{
		{"large bodies", burstBodyBytes, true},
		{"small bodies", burstBodyBytes - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m memoryReturner
			m.bodies(tt.peak)
			m.observeBodies(tt.peak / 2)
			if m.pending.Load() {
				t.Fatal("returned while bodies are still held")
			}
			m.observeBodies(0)
			if m.pending.Load() != tt.want {
				t.Fatalf("return scheduled = %v, want %v", m.pending.Load(), tt.want)
			}
		})
	}
}
