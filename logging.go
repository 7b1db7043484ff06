package troupe

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// actorLogger is the logger factory of the actor system Open starts: h,
// or nothing at all (protoactor's default writes to stdout).
func actorLogger(h slog.Handler) func(*actor.ActorSystem) *slog.Logger {
	if h == nil {
		h = slog.DiscardHandler
	}
	return func(*actor.ActorSystem) *slog.Logger { return slog.New(h) }
}

// slogWriter is a zerolog writer that hands each event to an slog logger:
// the level, the message and the other fields as attributes.
type slogWriter struct{ log *slog.Logger }

// Write takes one event: a JSON object.
func (w slogWriter) Write(p []byte) (int, error) {
	return w.WriteLevel(zerolog.NoLevel, p)
}

// WriteLevel takes one event at level.
func (w slogWriter) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	var fields map[string]any
	if err := json.Unmarshal(p, &fields); err != nil {
		w.log.Warn(string(p)) // not an object: pass it on as it is
		return len(p), nil
	}
	msg, _ := fields[zerolog.MessageFieldName].(string)
	delete(fields, zerolog.MessageFieldName)
	delete(fields, zerolog.LevelFieldName)
	attrs := make([]slog.Attr, 0, len(fields))
	for k, v := range fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	w.log.LogAttrs(context.Background(), slogLevel(level), msg, attrs...)
	return len(p), nil
}

// slogLevel is slog's level for zerolog's.
func slogLevel(l zerolog.Level) slog.Level {
	switch {
	case l <= zerolog.DebugLevel:
		return slog.LevelDebug
	case l == zerolog.InfoLevel, l == zerolog.NoLevel:
		return slog.LevelInfo
	case l == zerolog.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}
