package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/render"
	"sluice/session"
)

// sqllogictest files under testdata/slt. Supported records:
//
//	statement ok | statement error <regexp>     then SQL up to a blank line
//	query <types> [rowsort|nosort]              then SQL, "----", expected rows
//	query error <regexp>                        then SQL
//
// Rows print their values separated by one space; NULL prints as NULL and an
// empty string as (empty). Paths in SQL may use ${SLT_DIR} for the folder of
// the .slt file, and ${SLT_TMPDIR} for an empty directory of the run's own
// (a new one for every run of the file), for statements that write files.
func TestSQLLogic(t *testing.T) {
	files, err := filepath.Glob("../testdata/slt/*.slt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no .slt files found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// The tests' tables are small: most runs share their scans.
			randomShareMinRows(t, 64)
			randomWindowHint(t)
			randomGroupLimitCompactRows(t)
			randomPartialSkip(t, 64)
			for _, parts := range []string{"1", "3"} {
				s := session.New(catalog.New())
				t.Cleanup(s.Close) // removes its temporary warehouse
				runSLT(t, f, s, "in-process, target_partitions="+parts, map[string]string{"execution.target_partitions": parts})
			}
		})
	}
}

// clusterConfigs are the embedded clusters every .slt file and TPC-H query
// runs on, with the settings (beside the mode) each sets.
var clusterConfigs = []struct {
	executors int
	policy    string
	mode      string
	settings  map[string]string
	// wire: the executors and the scheduler talk as separate processes
	// would, blocking readers fetching other executors' outputs over
	// Flight and control calls going over gRPC, instead of directly
	// (EmbeddedConfig.FlightBetweenExecutors and ControlOverGRPC).
	wire bool
}{
	{2, cluster.PolicyPush, "blocking", nil, false},
	// Three executors talking over the wire: most of a consumer's inputs
	// are remote.
	{3, cluster.PolicyPush, "blocking", nil, true},
	{2, cluster.PolicyPull, "blocking", nil, false},
	{3, cluster.PolicyPull, "blocking", nil, false},
	{2, cluster.PolicyPush, "pipelined", map[string]string{"exchange.multiplex": "off"}, false},
	// Three executors: most of a consumer's inputs are remote, and with
	// multiplexing each producer task's arrive on one stream.
	{3, cluster.PolicyPush, "pipelined", map[string]string{"exchange.multiplex": "on"}, false},
}

// configName names a cluster configuration in a subtest's name.
func configName(mode string, executors int, policy string, settings map[string]string, wire bool) string {
	name := fmt.Sprintf("%s/%d-executors/%s", mode, executors, policy)
	if settings["exchange.multiplex"] == "on" {
		name += "/multiplex"
	}
	if wire {
		name += "/wire"
	}
	return name
}

// startCluster starts an embedded cluster with an empty catalog and
// returns a session connected to it.
func startCluster(t testing.TB, executors int, policy string) *session.Session {
	t.Helper()
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: executors, Policy: policy})
	return s
}

func startClusterWith(t testing.TB, cfg cluster.EmbeddedConfig) (*cluster.Embedded, *session.Session) {
	t.Helper()
	emb, err := cluster.StartEmbedded(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	// A session of the cluster's process, as the shell's is; one of a
	// cluster whose control calls go over gRPC (the wire configurations)
	// connects over gRPC too, as a session of another process would.
	connect := func() (*session.Session, error) { return session.ConnectInProcess(emb) }
	if cfg.ControlOverGRPC {
		connect = func() (*session.Session, error) { return session.ConnectWith(emb.SchedulerAddr(), emb.Security()) }
	}
	s, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return emb, s
}

// TestSQLLogicCluster runs every .slt file on embedded clusters of 2 and 3
// executors, push and pull, blocking and pipelined.
func TestSQLLogicCluster(t *testing.T) {
	files, err := filepath.Glob("../testdata/slt/*.slt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clusterConfigs {
		t.Run(configName(c.mode, c.executors, c.policy, c.settings, c.wire), func(t *testing.T) {
			for _, f := range files {
				cfg := cluster.EmbeddedConfig{Executors: c.executors, Policy: c.policy, FlightBetweenExecutors: c.wire, ControlOverGRPC: c.wire}
				if c.mode == "blocking" {
					// How much of the stages' output the executors hold
					// in memory before writing files is a tuned budget
					// too: drawn at random, a quarter of the time none.
					cfg.HeldOutputBytes = -1
					if rand.IntN(4) > 0 {
						cfg.HeldOutputBytes = randomBytes()
					}
				}
				_, s := startClusterWith(t, cfg)
				randomShareMinRows(t, 64)
				randomWindowHint(t)
				randomGroupLimitCompactRows(t)
				randomPartialSkip(t, 64)
				settings, label := map[string]string{"execution.mode": c.mode}, c.mode
				if c.mode == "blocking" {
					label += fmt.Sprintf(", held_output_bytes=%d", cfg.HeldOutputBytes)
				}
				for k, v := range c.settings {
					settings[k] = v
					label += ", " + k + "=" + v
				}
				if c.mode == "blocking" {
					// Adaptive execution's target, the largest build side
					// a join's stage reads itself and when a join is
					// turned around to do so are tuned guesses: the
					// answers must not depend on them.
					for _, r := range []struct{ k, v string }{
						{"execution.aqe_target_partition_bytes", fmt.Sprint(randomBytes())},
						{"execution.blocking_inline_build_bytes", fmt.Sprint(randomBytes())},
						{"execution.blocking_swap_max_ratio", fmt.Sprint(randomSwapRatio())},
					} {
						settings[r.k] = r.v
						label += ", " + strings.TrimPrefix(r.k, "execution.") + "=" + r.v
					}
				}
				runSLT(t, f, s, label, settings)
			}
		})
	}
}

type sltRecord struct {
	line     int
	kind     string // "statement" or "query"
	errRe    string // non-empty: an error matching this is expected
	wantErr  bool
	sortMode string
	sql      string
	expected []string
}

func parseSLT(path, tmpDir string) ([]sltRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir, _ := filepath.Abs(filepath.Dir(path))
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() {
		line := strings.ReplaceAll(sc.Text(), "${SLT_DIR}", dir)
		lines = append(lines, strings.ReplaceAll(line, "${SLT_TMPDIR}", tmpDir))
	}
	var out []sltRecord
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Fields(l)
		rec := sltRecord{line: i + 1, kind: fields[0]}
		switch {
		case fields[0] == "statement" && len(fields) >= 2 && fields[1] == "ok":
		case (fields[0] == "statement" || fields[0] == "query") && len(fields) >= 2 && fields[1] == "error":
			rec.wantErr = true
			rec.errRe = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l, fields[0]), " error"))
		case fields[0] == "query":
			if len(fields) >= 3 {
				rec.sortMode = fields[2]
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown record %q", path, i+1, l)
		}
		var sqlLines []string
		i++
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && lines[i] != "----"; i++ {
			sqlLines = append(sqlLines, lines[i])
		}
		rec.sql = strings.Join(sqlLines, "\n")
		if i < len(lines) && lines[i] == "----" {
			i++
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				rec.expected = append(rec.expected, strings.TrimSpace(lines[i]))
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

func runSLT(t *testing.T, path string, s *session.Session, label string, settings map[string]string) {
	recs, err := parseSLT(path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range settings {
		if err := s.Settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, rec := range recs {
		rows, err := sltRun(ctx, s, rec.sql)
		where := fmt.Sprintf("%s:%d (%s)", filepath.Base(path), rec.line, label)
		if rec.wantErr {
			if err == nil {
				t.Errorf("%s: expected an error matching %q, got success\n%s", where, rec.errRe, rec.sql)
			} else if rec.errRe != "" && !regexp.MustCompile(rec.errRe).MatchString(err.Error()) {
				t.Errorf("%s: error %q does not match %q", where, err, rec.errRe)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", where, err, rec.sql)
			continue
		}
		if rec.kind != "query" {
			continue
		}
		if rec.sortMode == "rowsort" {
			sort.Strings(rows)
		}
		if strings.Join(rows, "\n") != strings.Join(rec.expected, "\n") {
			t.Errorf("%s: wrong result for\n%s\n--- got\n%s\n--- want\n%s", where, rec.sql,
				strings.Join(rows, "\n"), strings.Join(rec.expected, "\n"))
		}
	}
}

func sltRun(ctx context.Context, s *session.Session, sql string) ([]string, error) {
	res, err := s.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var rows []string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		for r := 0; r < int(b.NumRows()); r++ {
			vals := make([]string, b.NumCols())
			for c := range vals {
				v, ok := render.FormatValue(b.Column(c), r)
				switch {
				case !ok:
					v = "NULL"
				case v == "":
					v = "(empty)"
				}
				vals[c] = v
			}
			rows = append(rows, strings.Join(vals, " "))
		}
		b.Release()
	}
}
