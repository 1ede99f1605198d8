package exchange

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestScrubWorkDir(t *testing.T) {
	dir := t.TempDir()
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{dir, dir + "/", rel} {
		msg := "reading " + filepath.Join(dir, "job", "1", "data-0-0.arrow") + ": unexpected EOF"
		got := ScrubWorkDir(msg, wd)
		if strings.Contains(got, dir) || !strings.Contains(got, workDirMark+"/job/1/data-0-0.arrow") {
			t.Errorf("work dir %q: %q", wd, got)
		}
	}
	if got := ScrubWorkDir("division by zero", dir); got != "division by zero" {
		t.Errorf("unrelated message changed: %q", got)
	}
	err = scrubStatus(status.Errorf(codes.Internal, "opening %s/x: boom", dir), dir)
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), dir) {
		t.Errorf("scrubbed status: %v", err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
