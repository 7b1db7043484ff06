package kv

import "testing"

// TestSaltSeparatesPrefixes checks that the same prompt under two salts (two
// LoRA adapter sets) shares no block across them but does within one, even
// when every hash collides.
func TestSaltSeparatesPrefixes(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(uint64, []int32) uint64
	}{
		{"chain hash", BlockHash},
		{"every hash collides", func(uint64, []int32) uint64 { return 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewBlockManager(32, 4, true)
			m.hash = tc.hash
			prompt := span(100, 13) // 3 full blocks and one token
			if got, err := m.AllocateFrom(1, 7, prompt, len(prompt), 0); err != nil || got != 0 {
				t.Fatalf("first allocate under salt 7: %d cached, %v", got, err)
			}
			for _, salt := range []uint64{0, 8} {
				if got := m.NumCachedTokens(salt, prompt); got != 0 {
					t.Errorf("salt %d: NumCachedTokens = %d, want 0 (blocks of salt 7)", salt, got)
				}
			}
			if got, err := m.AllocateFrom(2, 0, prompt, len(prompt), 0); err != nil || got != 0 {
				t.Errorf("allocate under salt 0: %d cached, %v; want 0", got, err)
			}
			want := 12
			if tc.name != "chain hash" {
				want = 0 // one cache slot: the salt-0 sequence took it over
			}
			if got := m.NumCachedTokens(7, prompt); got != want {
				t.Errorf("salt 7 again: NumCachedTokens = %d, want %d", got, want)
			}
			if got, err := m.AllocateFrom(3, 7, prompt, len(prompt), 0); err != nil || got != want {
				t.Errorf("allocate under salt 7 again: %d cached, %v; want %d", got, err, want)
			}
			if got := m.NumCachedTokens(0, prompt); tc.name == "chain hash" && got != 12 {
				t.Errorf("salt 0 again: NumCachedTokens = %d, want 12", got)
			}
		})
	}
}

func TestSaltRootHash(t *testing.T) {
	if SaltRootHash(0) != RootHash {
		t.Errorf("SaltRootHash(0) = %d, want RootHash", SaltRootHash(0))
	}
	if a, b := SaltRootHash(1), SaltRootHash(1<<32); a == b || a == RootHash {
		t.Errorf("salts 1 and 1<<32 have roots %d and %d", a, b)
	}
}
