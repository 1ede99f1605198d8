package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/session"
)

// TestSuiteAnswers: with Answers set, each TPC-H query's warm-up result is
// checked against its answer file by the kit's rules; a wrong value fails
// the check, a query without a file is not checked.
func TestSuiteAnswers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	var data strings.Builder
	data.WriteString("k,v\n")
	for i := range 100 {
		fmt.Fprintf(&data, "%d,%d\n", i%7, i)
	}
	if err := os.WriteFile(csv, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := session.New(catalog.New())
	defer sess.Close()
	res, err := sess.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE t (k INT, v INT) STORED AS CSV WITH HEADER ROW LOCATION '%s'", csv))
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	// q13's columns are both counts, compared exactly: k and its rows.
	right := "k|n\n0|15\n1|15\n2|14\n3|14\n4|14\n5|14\n6|14\n"
	for _, tc := range []struct {
		answer string
		pass   bool
	}{
		{right, true},
		{strings.Replace(right, "6|14", "6|13", 1), false},
	} {
		answers := t.TempDir()
		if err := os.WriteFile(filepath.Join(answers, "q13.out"), []byte(tc.answer), 0o644); err != nil {
			t.Fatal(err)
		}
		suite := &Suite{InProcess: sess, Modes: []string{ModeInProcess}, Runs: 1, Answers: answers,
			Queries: []Query{
				{Set: SetTPCH, N: 13, Text: "SELECT k, count(*) AS n FROM t GROUP BY k ORDER BY k"},
				{Set: SetTPCH, N: 6, Text: "SELECT sum(v) FROM t"},
			}}
		if _, _, err := suite.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if len(suite.Checks) != 1 || suite.Checks[0].Query != 13 || suite.Checks[0].Pass != tc.pass {
			t.Errorf("answer %q: checks %+v, want one for q13 with pass=%v", tc.answer, suite.Checks, tc.pass)
		}
	}
}
