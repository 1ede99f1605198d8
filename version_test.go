package main

import (
	"strings"
	"testing"
)

// TestVersionLineNamesTheCommit: a commit stamped with -ldflags (a build
// without .git, as in the container image) is printed when Go recorded
// none, shortened, and not twice when the version already names it.
func TestVersionLineNamesTheCommit(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.0", "0123456789abcdef0123456789abcdef01234567"
	if got := versionLine(); !strings.HasPrefix(got, "sluice v1.2.0 (commit 0123456789ab)") {
		t.Errorf("versionLine() = %q", got)
	}
	version = "v1.2.0-3-g0123456"
	if got := versionLine(); strings.Contains(got, "commit") {
		t.Errorf("versionLine() = %q names the commit twice", got)
	}
}
