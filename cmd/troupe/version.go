package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/server"
)

// version and commit are set by the Makefile's build (-ldflags "-X
// main.version=... -X main.commit=..."); a plain go build takes the commit
// from the build info Go records (vcs.revision).
var (
	version = ""
	commit  = ""
)

// buildVersion is what `troupe --version` and GET /version report.
func buildVersion() server.VersionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(version, commit, bi)
}

// versionOf is the version of a build: ver and rev (the -ldflags values)
// when set, else what bi (nil: none) records, else "dev" and "unknown".
func versionOf(ver, rev string, bi *debug.BuildInfo) server.VersionInfo {
	v := server.VersionInfo{Version: ver, Commit: rev, GoVersion: runtime.Version(),
		ISA: compute.HostISA().String(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		if v.Commit == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					v.Commit = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if v.Commit != "" && modified {
				v.Commit += "-dirty"
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

// versionLine is `troupe --version`'s output.
func versionLine(v server.VersionInfo) string {
	return fmt.Sprintf("troupe %s (commit %s, %s, %s/%s, kernels %s)", v.Version, v.Commit, v.GoVersion, v.OS, v.Arch, v.ISA)
}
