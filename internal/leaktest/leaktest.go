// Package leaktest checks that a test's goroutines ended, for tests.
package leaktest

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Settled fails t if a goroutine that opts do not ignore still runs after
// wait. It polls goleak.Find: goleak's own retries give up after well
// under a second, and a loaded machine may take longer to let the
// goroutines end, so only a goroutine that never ends fails the test.
func Settled(t testing.TB, wait time.Duration, opts ...goleak.Option) {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		err := goleak.Find(opts...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines outlived the test: %v", err)
			return
		}
	}
}
