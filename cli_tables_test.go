package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManagedTablesCLI runs a user's first session with tables, in process
// and on the embedded cluster: CREATE TABLE, INSERT, SELECT shows the rows,
// and the temporary warehouse holding the files is gone when sluice exits.
func TestManagedTablesCLI(t *testing.T) {
	for _, mode := range [][]string{{"--in-process"}, {"--mode", "pipelined"}, {"--mode", "blocking"}} {
		t.Run(strings.TrimLeft(strings.Join(mode, "="), "-"), func(t *testing.T) {
			tmp := t.TempDir()
			args := append(mode,
				"-c", "CREATE TABLE t (a INT, b VARCHAR);",
				"-c", "INSERT INTO t VALUES (1, 'one'), (NULL, 'none');",
				"-c", "INSERT INTO t SELECT a + 1, b || '!' FROM t WHERE a IS NOT NULL;",
				"-c", "SELECT a, b FROM t ORDER BY a NULLS FIRST;",
				"-c", "CREATE TABLE u AS SELECT count(*) AS n FROM t;",
				"-c", "SELECT n FROM u;",
				"-c", "SHOW catalog.warehouse;")
			cmd := exec.Command(sluiceBin, args...)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "SLUICE_HISTORY=", "TMPDIR="+tmp)
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v; stderr %q", err, e.String())
			}
			lines := strings.Split(strings.TrimSpace(o.String()), "\n")
			want := []string{"count", "2", "count", "1", "a,b", ",none", "1,one", "2,one!", "count", "1", "n", "3", "name,value"}
			if len(lines) != len(want)+1 || strings.Join(lines[:len(want)], "\n") != strings.Join(want, "\n") {
				t.Fatalf("stdout:\n%s\nwant:\n%s\ncatalog.warehouse,<dir>", o.String(), strings.Join(want, "\n"))
			}
			dir, ok := strings.CutPrefix(lines[len(want)], "catalog.warehouse,")
			if !ok || !strings.HasPrefix(dir, tmp+string(filepath.Separator)+"sluice-warehouse-") {
				t.Fatalf("warehouse %q, want a sluice-warehouse- directory under %s", lines[len(want)], tmp)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the temporary warehouse %s outlived the process: %v", dir, err)
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "sluice-warehouse-*"))
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
