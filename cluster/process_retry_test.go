package cluster

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"sluice/render"
	"sluice/session"
)

// retryProcessQuery's one row comes at its end: the client can read
// nothing before every task is done.
const retryProcessQuery = `SELECT count(*), sum(c) FROM (SELECT x % 1000 AS k, count(*) AS c FROM generate_series(1, 60000000) AS g(x) GROUP BY 1) t`

// TestKilledExecutorPipelinedRetry kills an executor process (SIGKILL)
// while a pipelined query runs on it and before its only row was sent:
// the shell's session sees the query run again on the executor left and
// returns the right answer with a notice; with retries off it fails.
func TestKilledExecutorPipelinedRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	for _, retries := range []string{"1", "0"} {
		t.Run("retries="+retries, func(t *testing.T) {
			ctx := testContext(t, 120*time.Second)
			pc := startProcessClusterWith(t, ctx, processClusterOptions{})
			s, err := session.Connect(pc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for k, v := range map[string]string{"execution.mode": "pipelined", "execution.query_retries": retries} {
				if err := s.Settings.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			var notices []string
			s.OnNotice = func(m string) { notices = append(notices, m) }
			// Execute returns once the job is placed: every task runs.
			res, err := s.Execute(ctx, retryProcessQuery)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			// With 2 vcores each, the job's 2 partitions were dealt to the
			// first executor: kill the one that holds tasks.
			victim := pc.execs[0]
			if res.Stats() == nil {
				t.Fatal("no stats")
			}
			victim.kill(t)
			var rows []string
			for {
				b, err := res.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					if retries == "0" {
						t.Logf("failed as expected: %v", err)
						return
					}
					t.Fatalf("after the kill: %v", err)
				}
				for i := 0; i < int(b.NumRows()); i++ {
					a, _ := render.FormatValue(b.Column(0), i)
					c, _ := render.FormatValue(b.Column(1), i)
					rows = append(rows, a+" "+c)
				}
				b.Release()
			}
			if retries == "0" {
				t.Fatalf("with retries off the query survived the kill: %v", rows)
			}
			if got := strings.Join(rows, ";"); got != "1000 60000000" {
				t.Errorf("got %q, want 1000 60000000", got)
			}
			if len(notices) != 1 || !strings.Contains(notices[0], "was lost (attempt 2 of 2)") {
				t.Errorf("notices %q", notices)
			}
			t.Logf("%s; stats %+v", fmt.Sprint(notices), *res.Stats())
		})
	}
}
