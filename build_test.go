package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBuildReturnsMemoryWithMadvFree: the Makefile's RUNTIME_LDFLAGS make
// the Go runtime return freed heap with MADV_FREE (the pages stay mapped,
// lazily freed, so a query that regrows the heap does not fault them in
// again), and a plain build keeps Go's MADV_DONTNEED. The flag sets a
// runtime variable by name, which the linker ignores silently should a Go
// release rename it; this test is what notices.
func TestBuildReturnsMemoryWithMadvFree(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skip("no /proc/self/smaps_rollup (not Linux 4.14 or later)")
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RUNTIME_LDFLAGS\s*:=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("Makefile: no RUNTIME_LDFLAGS line")
	}
	flags := strings.TrimSpace(string(m[1]))
	if docker, err := os.ReadFile("Dockerfile"); err != nil || !strings.Contains(string(docker), flags) {
		t.Errorf("the Dockerfile's build does not link with %q (%v)", flags, err)
	}
	dir := t.TempDir()
	measure := func(name string, args ...string) (rss, lazy int) {
		t.Helper()
		bin := filepath.Join(dir, name)
		build := exec.Command("go", append(append([]string{"build"}, args...), "-o", bin, "./testdata/madvfree")...)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "GODEBUG=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := fmt.Sscanf(string(out), "rss=%d lazyfree=%d", &rss, &lazy); err != nil {
			t.Fatalf("%s printed %q: %v", name, out, err)
		}
		return rss, lazy
	}
	// 64 MiB were filled and freed: 65,536 KiB.
	if rss, lazy := measure("plain"); lazy > 16<<10 {
		t.Errorf("a plain build left %d KiB lazily freed (resident %d KiB); Go's default is MADV_DONTNEED", lazy, rss)
	}
	if rss, lazy := measure("make", "-ldflags", flags); lazy < 48<<10 {
		t.Errorf("built with %q: %d KiB lazily freed of the 64 MiB returned (resident %d KiB), want MADV_FREE", flags, lazy, rss)
	}
}
