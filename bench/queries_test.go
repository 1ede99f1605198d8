package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestQueryFiles reads every qN.sql in numeric order, or the listed ones.
func TestQueryFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"q10", "q2", "q1"} {
		if err := os.WriteFile(filepath.Join(dir, n+".sql"), []byte("SELECT '"+n+"';"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	qs, err := QueryFiles(dir, "", SetTPCDS)
	if err != nil || len(qs) != 3 || qs[0].N != 1 || qs[1].N != 2 || qs[2].N != 10 || qs[2].Text != "SELECT 'q10';" || qs[0].Set != SetTPCDS {
		t.Fatalf("all: %+v, %v", qs, err)
	}
	if qs, err := QueryFiles(dir, "q10, 1", SetTPCDS); err != nil || len(qs) != 2 || qs[0].N != 10 || qs[1].N != 1 {
		t.Errorf("listed: %+v, %v", qs, err)
	}
	if _, err := QueryFiles(dir, "x", SetTPCDS); err == nil {
		t.Error("a listed name that is no number was accepted")
	}
	if _, err := QueryFiles(t.TempDir(), "", SetTPCDS); err == nil {
		t.Error("an empty folder gave no error")
	}
}
