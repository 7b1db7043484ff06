package server

import "github.com/prometheus/client_golang/prometheus"

// Gatherer is the registry of the server's metrics (what GET /metrics
// serves), for a program that embeds the server and exposes them on a
// registry of its own.
func (s *Server) Gatherer() prometheus.Gatherer { return s.metrics.reg }
