package cluster

import "testing"

// TestPlacement: the owner keeps its requests until it has some waiting
// and is Overflow sequences busier than the least loaded member (or its KV
// pool is nearly full while another's is under half); ties are broken by
// address, whatever the map order.
func TestPlacement(t *testing.T) {
	l := func(running, waiting int, kv float64) load {
		return load{Running: running, Waiting: waiting, KVUsage: kv}
	}
	for _, tc := range []struct {
		name       string
		owner      string
		loads      map[string]load
		overflow   int
		want       string
		overflowed bool
	}{
		{"owner's load unknown", "a", map[string]load{"b": l(0, 0, 0)}, 8, "a", false},
		{"alone", "a", map[string]load{"a": l(20, 20, 1)}, 8, "a", false},
		{"idle owner", "a", map[string]load{"a": l(0, 0, 0), "b": l(0, 0, 0)}, 8, "a", false},
		{"busier, nothing waiting", "a", map[string]load{"a": l(30, 0, 0.5), "b": l(0, 0, 0)}, 8, "a", false},
		{"waiting, under overflow", "a", map[string]load{"a": l(4, 3, 0.5), "b": l(0, 0, 0)}, 8, "a", false},
		{"waiting, at overflow", "a", map[string]load{"a": l(4, 4, 0.5), "b": l(0, 0, 0)}, 8, "b", true},
		{"least loaded of three", "a", map[string]load{"a": l(8, 8, 0), "b": l(3, 0, 0), "c": l(1, 0, 0)}, 8, "c", true},
		{"tie: smaller address", "a", map[string]load{"a": l(8, 8, 0), "c": l(1, 0, 0), "b": l(1, 0, 0), "d": l(1, 0, 0)}, 8, "b", true},
		{"owner ties the least", "b", map[string]load{"a": l(1, 1, 0), "b": l(1, 1, 0)}, 0, "b", false},
		{"KV pool full", "a", map[string]load{"a": l(2, 1, 0.95), "b": l(2, 0, 0.4)}, 8, "b", true},
		{"KV pool full, the other's too", "a", map[string]load{"a": l(2, 1, 0.95), "b": l(2, 0, 0.6)}, 8, "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 10 { // map order varies
				got, over := placement(tc.owner, tc.loads, tc.overflow)
				if got != tc.want || over != tc.overflowed {
					t.Fatalf("placement = %q, %v; want %q, %v", got, over, tc.want, tc.overflowed)
				}
			}
		})
	}
}

// TestFailoverTarget: the least loaded member not tried yet.
func TestFailoverTarget(t *testing.T) {
	loads := map[string]load{"a": {Running: 5}, "b": {Running: 2}, "c": {Running: 2, Waiting: 1}}
	for _, tc := range []struct {
		name    string
		members []string
		tried   map[string]bool
		want    string
	}{
		{"least loaded", []string{"a", "b", "c"}, nil, "b"},
		{"tried skipped", []string{"a", "b", "c"}, map[string]bool{"b": true}, "c"},
		{"no load known: idle", []string{"a", "b", "z"}, nil, "z"},
		{"tie: smaller address", []string{"y", "z", "x"}, nil, "x"},
		{"all tried", []string{"a", "b"}, map[string]bool{"a": true, "b": true}, ""},
		{"no members", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failoverTarget(tc.members, loads, tc.tried); got != tc.want {
				t.Errorf("failoverTarget = %q; want %q", got, tc.want)
			}
		})
	}
}
