//go:build race

package cluster_test

// raceEnabled: this is a -race build. See startCluster.
const raceEnabled = true
