package exchange

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sluice/rpc"
)

// TestJobDirsKnowTheSchedulersJobIDs: the work dir's job directories are
// recognized by the form of the scheduler's job ids (the current 128-bit
// ones and the older prefix-counter ones), and nothing else under it is
// taken for one. A mismatch would leave every job's data behind at
// executor start and in the sweeps.
func TestJobDirsKnowTheSchedulersJobIDs(t *testing.T) {
	work := t.TempDir()
	jobs := []string{rpc.RandomHex(16), "a934ff80-5"}
	others := []string{"notes", "a934ff80", rpc.RandomHex(15)}
	for _, d := range append(slices.Clone(jobs), others...) {
		if err := os.MkdirAll(filepath.Join(work, d, "1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := JobDirs(work, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(jobs)
	if !slices.Equal(got, jobs) {
		t.Fatalf("job dirs %v, want %v", got, jobs)
	}
	n, _, err := RemoveStaleJobs(work)
	if err != nil || n != len(jobs) {
		t.Fatalf("removed %d job dirs (%v), want %d", n, err, len(jobs))
	}
	for _, d := range others {
		if _, err := os.Stat(filepath.Join(work, d)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
