package relay

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// memoryReturner gives memory back to the operating system after a burst
// of calls has drained. The Go runtime keeps freed heap for reuse and only
// returns it slowly, so without this a gateway that held 1,000 streams an
// hour ago would still look that big; with it, RSS falls back to near idle
// about a second after the last call of a large burst ends.
type memoryReturner struct {
	peak      atomic.Int64 // most calls in flight since the last return
	peakBytes atomic.Int64 // most request-body bytes in flight since then
	pending   atomic.Bool
}

// burstCalls is the size of burst worth a forced collection.
const burstCalls = 200

// observe is called with the number of calls in flight after each change.
func (m *memoryReturner) observe(inflight int64) {
	raise(&m.peak, inflight)
	if inflight == 0 && m.peak.Load() >= burstCalls {
		m.returnSoon()
	}
}

// observeBodies is called with the request-body bytes in flight after a
// call gives its body back: a few large uploads grow the heap as much as a
// burst of small calls.
func (m *memoryReturner) observeBodies(inflight int64) {
	if inflight == 0 && m.peakBytes.Load() >= burstBodyBytes {
		m.returnSoon()
	}
}

// bodies is called with the request-body bytes in flight after a call took
// some.
func (m *memoryReturner) bodies(inflight int64) { raise(&m.peakBytes, inflight) }

func raise(peak *atomic.Int64, v int64) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// returnSoon collects and returns memory a second from now, once however
// many bursts end meanwhile.
func (m *memoryReturner) returnSoon() {
	if !m.pending.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(time.Second, func() {
		m.pending.Store(false)
		m.peak.Store(0)
		m.peakBytes.Store(0)
		// Two collections: the first moves sync.Pool contents (the HTTP
		// server's per-connection buffers) to the victim cache, the second
		// frees them; FreeOSMemory then returns the pages.
		runtime.GC()
		debug.FreeOSMemory()
	})
}
