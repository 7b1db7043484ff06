// Package actortest holds what the tests of actors, actors/backend and
// actors/cluster share about the actor system they run in.
package actortest

import (
	"io"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// QuietSystem returns an actor system that logs nothing.
func QuietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

// NumActors is the number of processes (actors and futures) registered in
// sys.
func NumActors(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}
