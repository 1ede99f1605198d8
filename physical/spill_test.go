package physical

import (
	"os"
	"strings"
	"testing"

	"sluice/physical/spill"
)

// openFDs counts the process's open file descriptors (Linux), so that a
// test can tell a spill file was left open.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(fds)
}

// checkNoSpillFiles fails t if dir holds a spill file.
func checkNoSpillFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "sluice-spill-") {
			t.Errorf("spill file %s left behind", e.Name())
		}
	}
}

// TestSpillBucketBits: each split level spreads rows over every bucket,
// and rows of one bucket spread again over every bucket one level down.
func TestSpillBucketBits(t *testing.T) {
	hashes := make([]uint64, 1<<14)
	for i := range hashes {
		hashes[i] = mix(uint64(i))
	}
	for level := range maxSplitLevel {
		seen := map[int]map[int]bool{}
		for _, h := range hashes {
			k := spill.Bucket(h, 16, level)
			if seen[k] == nil {
				seen[k] = map[int]bool{}
			}
			seen[k][spill.Bucket(h, 16, level+1)] = true
		}
		if len(seen) != 16 {
			t.Fatalf("level %d: %d buckets used, want 16", level, len(seen))
		}
		for k, sub := range seen {
			if len(sub) != 16 {
				t.Errorf("level %d bucket %d splits into %d buckets, want 16", level, k, len(sub))
			}
		}
	}
}
