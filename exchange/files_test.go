package exchange

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// A removed job's directory is renamed away at once, so its files are no
// longer the job's, and deleted by Env.RemoveLater; what a process did not
// finish deleting is no job's (JobDirs) and is removed at the next start
// (RemoveStaleJobs).
func TestRemoveJobDetachesItsDirectory(t *testing.T) {
	work := t.TempDir()
	job := rpc.RandomHex(16)
	file := filepath.Join(jobDir(work, job), "s1-0-1234.arrow")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var later []string
	svc := NewFlightService(&Env{WorkDir: work, RemoveLater: func(dir string) { later = append(later, dir) }})
	if err := svc.RemoveJob(job); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(jobDir(work, job)); !os.IsNotExist(err) {
		t.Fatalf("the job's directory is still there: %v", err)
	}
	if len(later) != 1 || filepath.Dir(later[0]) != work || !strings.HasPrefix(filepath.Base(later[0]), detachedPrefix+job) {
		t.Fatalf("left to delete later: %v", later)
	}
	if _, err := os.Stat(filepath.Join(later[0], filepath.Base(file))); err != nil {
		t.Fatalf("the detached directory lacks the job's file: %v", err)
	}
	if err := svc.RemoveJob(job); err != nil || len(later) != 1 {
		t.Fatalf("removing the job again: %v, deletions %v", err, later)
	}
	if jobs, err := JobDirs(work, 0, time.Now()); err != nil || len(jobs) != 0 {
		t.Fatalf("job dirs %v (%v), want none", jobs, err)
	}
	if n, _, err := RemoveStaleJobs(work); err != nil || n != 1 {
		t.Fatalf("removed %d stale dirs (%v), want the detached one", n, err)
	}
	if _, err := os.Stat(later[0]); !os.IsNotExist(err) {
		t.Fatalf("the detached directory survived the start: %v", err)
	}
}
