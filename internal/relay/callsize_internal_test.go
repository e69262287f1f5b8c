package relay

import (
	"testing"
	"unsafe"
)

// A call is allocated per request and lives as long as it (an open stream
// holds one): it stays within the 1,152-byte allocation size class. A
// field that outgrows it moves every call to the next class, 1,280 bytes;
// when that is worth it, raise the bound here with the reason.
func TestCallFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 1152 {
		t.Fatalf("a call is %d bytes, over the 1,152-byte size class", n)
	}
}
