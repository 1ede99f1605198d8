package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProcessWritesObeyAllowedLocations: standalone servers write only
// inside --allowed-locations, as they read: a target outside, or reached
// through a link out of it, is refused before any task runs, and nothing
// is created there.
func TestProcessWritesObeyAllowedLocations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 120*time.Second)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{})
	inside := filepath.Join(pc.data, "out")
	got, _, err := pc.client.query(ctx, "COPY (SELECT l_orderkey FROM lineitem) TO '"+inside+"' (FORMAT parquet)", nil)
	if err != nil {
		t.Fatalf("write inside the allowed locations: %v", err)
	}
	sameRows(t, "count", got, []string{"50000"}, true)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(pc.data, "link")); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{filepath.Join(outside, "x"), filepath.Join(pc.data, "..", "escape"), filepath.Join(pc.data, "link", "x")} {
		_, _, err := pc.client.query(ctx, "COPY (SELECT 1 AS one) TO '"+target+"' (FORMAT parquet)", nil)
		if err == nil || !strings.Contains(err.Error(), "location not allowed") {
			t.Errorf("write to %s: got %v, want a refusal", target, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the allowed locations: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(pc.data), "escape")); !os.IsNotExist(err) {
		t.Errorf("the escape directory was created")
	}
}
