package cluster

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/catalog"
	"sluice/rpc"
	"sluice/session"
)

// writeQuery writes every lineitem row; PARTITION_BY spreads each task's
// rows over three directories, so a task writes several files.
const writeQuery = `COPY (SELECT l_orderkey, l_price, l_flag FROM lineitem) TO '%s' (FORMAT parquet, PARTITION_BY (l_flag))`

// writtenFiles lists the files under dir: committed ones and any
// temporary file left behind.
func writtenFiles(t *testing.T, dir string) (parts, temps []string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			temps = append(temps, p)
		} else {
			parts = append(parts, p)
		}
		return nil
	})
	return parts, temps
}

// checkWritten checks that dir holds exactly one copy of every lineitem
// row: read back, the rows and their sums are lineitem's.
func checkWritten(t *testing.T, cat *catalog.Catalog, dir string) {
	t.Helper()
	parts, temps := writtenFiles(t, dir)
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
	if len(parts) == 0 {
		t.Fatal("no file written")
	}
	pt, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.RegisterTable("written", pt, true); err != nil {
		t.Fatal(err)
	}
	const check = `SELECT l_flag, count(*), sum(l_orderkey), sum(l_price) FROM %s GROUP BY l_flag ORDER BY l_flag`
	got := localRows(t, cat, strings.ReplaceAll(check, "%s", "written"))
	want := localRows(t, cat, strings.ReplaceAll(check, "%s", "lineitem"))
	sameRows(t, "written rows", got, want, true)
}

// An executor killed after the write tasks finished, before the commit
// read their listings: the lost tasks are written again, under new
// temporary names, and only the attempts the commit reads are renamed.
// Exactly one copy of every row is left, and no temporary file; a CREATE
// TABLE AS registers the table over them.
func TestWriteSurvivesKilledExecutor(t *testing.T) {
	for _, stmt := range []string{"copy", "ctas"} {
		t.Run(stmt, func(t *testing.T) {
			var (
				slot hookSlot
				once sync.Once
				dead = make(chan struct{})
			)
			hook := func(def *rpc.TaskDefinition) error {
				if def.Id.StageId >= 2 {
					once.Do(func() {
						victim := slot.executor("exec-2")
						if !holdsOutputs(victim) {
							victim = slot.executor("exec-1")
						}
						go func() {
							victim.Kill()
							close(dead)
						}()
					})
					select {
					case <-dead:
					case <-time.After(2 * time.Second):
					}
				}
				return nil
			}
			emb, cat := startCluster(t, faultConfig(PolicyPush, hook))
			slot.emb.Store(emb)
			c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
			dir := filepath.Join(t.TempDir(), "out")
			q := strings.ReplaceAll(writeQuery, "%s", dir)
			if stmt == "ctas" {
				q = "CREATE TABLE created STORED AS PARQUET PARTITIONED BY (l_flag) LOCATION '" + dir +
					"' AS SELECT l_orderkey, l_price, l_flag FROM lineitem"
			}
			got, st, err := c.query(testContext(t, 60*time.Second), q, nil)
			<-dead
			if err != nil {
				t.Fatalf("write after losing an executor: %v\n%s", err, st.GetStages())
			}
			t.Logf("stages:\n%s", st.Stages)
			if !strings.Contains(st.Stages, "lost") && !strings.Contains(st.Stages, "failed") {
				t.Errorf("no task was lost or failed; the kill came too late to test anything:\n%s", st.Stages)
			}
			sameRows(t, "count", got, []string{"50000"}, true)
			checkWritten(t, cat, dir)
			if stmt == "ctas" {
				const check = `SELECT count(*), sum(l_price) FROM %s`
				sameRows(t, "created table", localRows(t, cat, strings.ReplaceAll(check, "%s", "created")),
					localRows(t, cat, strings.ReplaceAll(check, "%s", "lineitem")), true)
			}
		})
	}
}

// Injected failures of the write tasks' first attempts: the retries'
// files are the ones committed, once.
func TestWriteTaskFailuresAreRetried(t *testing.T) {
	hook := func(def *rpc.TaskDefinition) error {
		if def.Id.StageId == 1 && def.Id.Attempt == 0 && def.Id.TaskId%2 == 0 {
			return errInjectedWrite
		}
		return nil
	}
	emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, TaskFailureHook: hook})
	c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	dir := filepath.Join(t.TempDir(), "out")
	got, st, err := c.query(testContext(t, 60*time.Second), strings.ReplaceAll(writeQuery, "%s", dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Stages, "failed") {
		t.Errorf("no failed attempt in the stages:\n%s", st.Stages)
	}
	sameRows(t, "count", got, []string{"50000"}, true)
	checkWritten(t, cat, dir)
}

var errInjectedWrite = errors.New("injected write failure")

// A write that fails part way (one task's rows hit a division by zero
// while the others finished theirs) leaves nothing: neither the finished
// tasks' temporary files nor the directory it created. In both modes.
func TestFailedWriteLeavesNothing(t *testing.T) {
	for _, mode := range []string{"blocking", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			emb, _ := startCluster(t, EmbeddedConfig{Executors: 2})
			c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
			dir := filepath.Join(t.TempDir(), "out")
			q := `COPY (SELECT l_orderkey, 1 / (l_orderkey - 9000) AS x FROM lineitem) TO '` + dir + `' (FORMAT parquet)`
			_, _, err := c.query(testContext(t, 60*time.Second), q, map[string]string{"execution.mode": mode})
			if err == nil || !strings.Contains(err.Error(), "division by zero") {
				t.Fatalf("err = %v, want division by zero", err)
			}
			// The scheduler removes the files in the background once the
			// job has failed, and a task still running removes its own
			// when its cancellation reaches it: nothing signals the end
			// of either to a client, so the test looks until a deadline.
			deadline := time.Now().Add(10 * time.Second)
			for {
				parts, temps := writtenFiles(t, dir)
				if len(parts)+len(temps) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left after a failed write: %v %v", parts, temps)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// DELETE and UPDATE on the cluster rewrite a table over a directory: a
// statement that fails leaves the table as it was; in blocking mode,
// injected failures of first attempts are retried and their files never
// committed. In both modes; the answers are checked against the
// in-process engine's.
func TestRewriteTable(t *testing.T) {
	for _, mode := range []string{"blocking", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			var rewriting atomic.Bool
			var injected atomic.Int32
			hook := func(def *rpc.TaskDefinition) error {
				if rewriting.Load() && mode == "blocking" && def.Id.StageId == 1 && def.Id.Attempt == 0 && def.Id.TaskId%2 == 0 {
					injected.Add(1)
					return errInjectedWrite
				}
				return nil
			}
			emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, TaskFailureHook: hook})
			s, err := session.ConnectInProcess(emb)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for k, v := range clusterSettings {
				if err := s.Settings.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Settings.Set("execution.mode", mode); err != nil {
				t.Fatal(err)
			}
			ctx := testContext(t, 60*time.Second)
			dir := filepath.Join(t.TempDir(), "w")
			run := func(q string) []string {
				t.Helper()
				return sessionRows(t, ctx, s, q)
			}
			run(strings.ReplaceAll(writeQuery, "%s", dir))
			run(`CREATE EXTERNAL TABLE w STORED AS PARQUET LOCATION '` + dir + `'`)
			const check = `SELECT l_flag, count(*), sum(l_orderkey), sum(l_price) FROM %s GROUP BY l_flag ORDER BY l_flag`
			table := func() []string { return localRows(t, cat, strings.ReplaceAll(check, "%s", "w")) }

			// A failed statement: the table is what it was.
			before, files := table(), dirFiles(t, dir)
			if _, err := sessionRowsErr(ctx, s, `DELETE FROM w WHERE 1 / (l_orderkey - 9000) > 0`); err == nil || !strings.Contains(err.Error(), "division by zero") {
				t.Fatalf("err = %v, want division by zero", err)
			}
			sameRows(t, "after a failed DELETE", table(), before, true)
			if after := dirFiles(t, dir); !slices.Equal(after, files) {
				t.Errorf("a failed DELETE changed the files:\n%v\nwant\n%v", after, files)
			}

			rewriting.Store(true)
			want := localRows(t, cat, `SELECT count(*) FROM lineitem WHERE l_flag = 'A' OR l_orderkey < 100`)
			sameRows(t, "DELETE count", run(`DELETE FROM w WHERE l_flag = 'A' OR l_orderkey < 100`), want, true)
			want = localRows(t, cat, `SELECT count(*) FROM lineitem WHERE l_flag <> 'A' AND l_orderkey >= 100 AND l_orderkey % 2 = 0`)
			sameRows(t, "UPDATE count", run(`UPDATE w SET l_price = l_price * 2 + 1, l_flag = lower(l_flag) WHERE l_orderkey % 2 = 0`), want, true)
			rewriting.Store(false)
			if mode == "blocking" && injected.Load() < 2 {
				t.Errorf("%d injected failures: each statement's first attempts should have failed", injected.Load())
			}
			sameRows(t, "rewritten table", table(), localRows(t, cat, strings.ReplaceAll(check, "%s",
				`(SELECT l_orderkey, CASE WHEN l_orderkey % 2 = 0 THEN l_price * 2 + 1 ELSE l_price END AS l_price,
					CASE WHEN l_orderkey % 2 = 0 THEN lower(l_flag) ELSE l_flag END AS l_flag
				FROM lineitem WHERE NOT (l_flag = 'A' OR l_orderkey < 100)) AS x`)), true)
			if _, temps := writtenFiles(t, dir); len(temps) > 0 {
				t.Errorf("temporary files left: %v", temps)
			}
		})
	}
}

// dirFiles lists the committed files under dir, sorted (a failed job's
// temporary files are removed in the background).
func dirFiles(t *testing.T, dir string) []string {
	parts, _ := writtenFiles(t, dir)
	slices.Sort(parts)
	return parts
}
