package kv

import "testing"

// Salts separating prefixes are traced in testdata/trace/salt.txt.

func TestSaltRootHash(t *testing.T) {
	if SaltRootHash(0) != RootHash {
		t.Errorf("SaltRootHash(0) = %d, want RootHash", SaltRootHash(0))
	}
	if a, b := SaltRootHash(1), SaltRootHash(1<<32); a == b || a == RootHash {
		t.Errorf("salts 1 and 1<<32 have roots %d and %d", a, b)
	}
}
