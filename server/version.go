package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// VersionInfo is the build a server runs, as GET /version reports it.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	// ISA is the instruction set the CPU kernels use on this machine
	// (compute.HostISA).
	ISA  string `json:"isa"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// version serves GET /version.
func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.Version)
}

// fingerprint is the system_fingerprint of every response: it changes when
// the build, the model or the kernels do, as OpenAI's marks a backend
// configuration that can change outputs.
func fingerprint(v VersionInfo, model string) string {
	h := sha256.Sum256([]byte(v.Version + "\x00" + v.Commit + "\x00" + v.ISA + "\x00" + model))
	return "fp_" + hex.EncodeToString(h[:5])
}
