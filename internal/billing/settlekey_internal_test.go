package billing

import (
	"strings"
	"sync"
	"testing"
)

// Settlement keys never repeat, also when calls settle in parallel, fit the
// store's column, and share this process's random prefix.
func TestSettleKeysAreUnique(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10_000 {
				k := settleKey()
				mu.Lock()
				if seen[k] || len(k) != 32 || !strings.HasPrefix(k, settleKey()[:16]) {
					t.Errorf("key %q: repeated, or not 32 characters of this process's prefix", k)
				}
				seen[k] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
